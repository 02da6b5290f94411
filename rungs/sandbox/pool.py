"""Runs the worker (rungs/worker/) on a candidate in a fresh, sandboxed child process, and reads back what it wrote.

Isolation, in the order it matters: the OS sandbox (rungs/sandbox/bwrap.py: an unprivileged uid with no capabilities,
its own PID, mount, network and IPC namespaces, the host read-only with $HOME and the harness hidden, a private
size-limited /tmp, only the job's folder writable), made before the worker imports anything of the candidate's; a
wall-time limit; an environment with no API keys, tokens or secrets; limits on address space (CPU only: CUDA reserves
huge virtual ranges), file size and core dumps; a host-memory and a disk watchdog; and at the end, every process the job
started is killed (the PID namespace dies with the worker; rungs/sandbox/isolation.py also finds strays the old way). A
fault in candidate code ends the child, never the harness. Strings the worker hands back are scrubbed of the harness's
secret values. docs/threat-model.md says what each defence covers and where it stops.
"""
from __future__ import annotations

import array
import atexit
import contextlib
import fcntl
import json
import os
import resource
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rungs import backends

from rungs.sandbox import bwrap, gpus, isolation, leftovers
from rungs.timing import gpu_lock
from rungs.worker.job import JOB_FILE, STACKS_FILE, TAKEN_FILE, Job

# Variables passed through to the child; everything else (API keys, cloud tokens, SSH agents) stays behind.
ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
            "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "OMP_NUM_THREADS",
            "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
            "NVSHMEM_DISABLE_NVLS", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH",
            "TRITON_DEFAULT_FP_FUSION", "PYTHONPATH")
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")

CPU_ADDRESS_SPACE_BYTES = 16 << 30
MAX_FILE_BYTES = 4 << 30
JOB_DIR_BYTES = 16 << 30
"""The job folder is the one host folder a worker may write (phase files, outputs, compiler dumps): past this, the
process tree is killed (a disk-filling candidate)."""
STARTUP_S = 300.0
"""How long a worker may take to start (Python, torch, Triton, a CUDA context) before it takes its job."""
READY_FILE = "ready"
"""Made in its job folder by a pre-started worker once it has paid for Python, torch, the DSL and its CUDA context."""
MAX_PROCESSES = 4096
"""RLIMIT_NPROC of a worker: processes and threads of its uid (65534: every sandbox's), a bound on a fork bomb."""
LOG_BYTES = 64 << 20
"""The worker's stdout and stderr go to a log; past this, the process tree is killed (an output flood)."""
HOMES_DIR: str | None = None
"""Where workers' homes are made (None: the temporary folder). `harness eval -j N` points each of its processes at a
folder of its own, which it removes once those processes are gone, however they ended."""
HOST_RSS_LIMIT_BYTES = min(32 << 30, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * 3 // 4)
"""The worker's process tree is killed when its resident host memory passes this (on a GPU, where the address-space
limit cannot be used): 32 GiB, or three quarters of this machine's memory where it has less."""


def scrubbed_env(scratch: Path, interpret: bool, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k in ENV_KEEP and not any(m in k.upper() for m in SECRET_MARKERS)}
    repo_root = str(Path(__file__).resolve().parents[2])  # so `-m rungs.worker` imports from a checkout too
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo_root, env.get("PYTHONPATH", "")) if p)
    env.update(HOME=str(scratch), TMPDIR=str(scratch), TRITON_CACHE_DIR=str(scratch / "triton-cache"),
               PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1", TRITON_DEFAULT_FP_FUSION="1")
    env.setdefault("OMP_NUM_THREADS", "1")  # the CPU interpreter is numpy-bound; threads only fight each other
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env.update(extra or {})  # the DSL backend's (Backend.worker_env) and the pool's GPU index
    return env


def _set_limit(which: int, wanted: int) -> None:
    """Lower a limit to `wanted`, never above the hard limit the harness itself runs under (`ulimit -v` on a shared
    cluster): asking for more than that is an error, and the limit already in force is the tighter one."""
    soft, hard = resource.getrlimit(which)
    value = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(which, (value, value if hard == resource.RLIM_INFINITY else hard))


def _limits(on_cuda: bool, cut_network: str | None = None) -> None:
    """Runs in the child between fork and exec (of bwrap, or of the worker itself when unsandboxed)."""
    isolation.child_setup(cut_network)
    if not on_cuda:
        _set_limit(resource.RLIMIT_AS, CPU_ADDRESS_SPACE_BYTES)
    _set_limit(resource.RLIMIT_FSIZE, MAX_FILE_BYTES)
    _set_limit(resource.RLIMIT_CORE, 0)
    if os.geteuid() == 0 and not bwrap.unsandboxed():  # uid 65534 is the sandboxes' own; a user's uid is not
        _set_limit(resource.RLIMIT_NPROC, MAX_PROCESSES)


def sandbox_note() -> str:
    """How candidates are isolated, shown in the compile rung's metrics and every verdict."""
    return bwrap.note() if not bwrap.unsandboxed() else f"{bwrap.note()}; {isolation.network_note()}"


SECRET_MIN_CHARS = 6


def secret_values() -> list[str]:
    """Values of the harness's own secret variables (anything named like a key or token), longest first."""
    values = {v for k, v in os.environ.items() if any(m in k.upper() for m in SECRET_MARKERS)
              and len(v) >= SECRET_MIN_CHARS}
    return sorted(values, key=len, reverse=True)


def scrub(value: Any, secrets: list[str] | None = None) -> Any:
    """`value` (a string, or lists and dicts of them) with every secret value replaced: whatever a worker hands back
    may reach the journal, a report, a prompt or a file name."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return value
    if isinstance(value, str):
        for s in secrets:
            value = value.replace(s, "[secret]")
        return value
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    return value


@dataclass
class JobOutcome:
    """What one worker process left behind."""

    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    returncode: int | None = None
    timed_out: bool = False
    memory_exceeded: bool = False
    disk_exceeded: str | None = None
    """What passed its size limit ('job folder' or 'output log'), when the watchdog killed the job for it."""
    notes: list[str] = field(default_factory=list)
    """How the worker was isolated."""
    seconds: float = 0.0
    log_tail: str = ""
    renamed: dict[str, list[str]] = field(default_factory=dict, repr=False)
    """A renamed kernel (unnamed_kernel_N) -> the names the worker gave it and its device functions: the candidate's
    claims, never shown (they could carry what it read elsewhere), kept only for the profile's check that every
    launch ncu sees is one of the candidate's (rungs/ladder/profile.py), which a kernel named outside its source
    must not switch off."""

    def died_in(self, phase: str) -> str | None:
        """Why `phase` has no result, in one line, or None when it finished."""
        if phase in self.phases:
            return None
        if self.memory_exceeded:
            return (f"killed: the process passed the {HOST_RSS_LIMIT_BYTES / (1 << 30):g} GiB host-memory limit "
                    "(out of host memory)")
        if self.disk_exceeded:
            return f"killed: the {self.disk_exceeded} passed its size limit (writing without bound)"
        if self.timed_out:
            return f"timed out: the process ran past its {self.seconds:.0f} s limit and was killed (infinite loop or hang?)"
        rc = self.returncode
        sig = _signal_of(rc)
        if sig in signal.Signals._value2member_map_:
            name = signal.Signals(sig).name
            hint = {"SIGSEGV": " (segmentation fault)", "SIGABRT": " (abort)", "SIGKILL": " (out of memory?)",
                    "SIGBUS": " (bus error)"}.get(name, "")
            return f"the process was killed by {name}{hint}"
        tail = self.log_tail.strip().splitlines()[-1:] or [""]
        return f"the process exited with code {rc} before finishing: {tail[0][:300]}"


def _signal_of(returncode: int | None) -> int | None:
    """The signal a process died by, from its exit status (bwrap's init reports death by signal N as 128 + N)."""
    if returncode is None:
        return None
    return -returncode if returncode < 0 else returncode - 128 if returncode > 128 else None


def _crashed_writing_stacks(returncode: int | None, job_dir: Path) -> bool:
    """Whether the worker died by a signal after its watchdog began writing where its threads were, shortly before its
    time limit (rungs/worker/loop.py): faulthandler reads the other threads' frames while they run, and one in the
    middle of the Triton interpreter's NumPy calls can crash it (SIGSEGV at 118 s of a 120 s limit, KernelBench's
    72_conv_transposed_3D in the interpreter, 2026-12-06). That process ran out of time; the crash is the dump's."""
    try:
        return _signal_of(returncode) is not None and (job_dir / STACKS_FILE).stat().st_size > 0
    except OSError:
        return False


@dataclass
class _Worker:
    """A worker process started ahead of its job (`python -m rungs.worker --wait DEVICE`), in its sandbox."""

    proc: subprocess.Popen[bytes]
    home: Path
    """Host folder of this worker: `job/` in it is the only host folder the sandbox may write."""
    log_path: Path
    log: Any
    marker: str
    """Set in the worker's environment: finds every process of this job at the end, setsid escapees too."""
    readable: tuple[str, ...]
    """Extra host paths the sandbox shows (the task's folder): a job needing others takes a fresh worker."""
    flooded: threading.Event = field(default_factory=threading.Event)
    """Set (and the worker killed) once its output passed LOG_BYTES."""
    drain: threading.Thread | None = None
    ack: int | None = None
    """A zygote's (rungs/worker/zygote.py): the pipe on which it says each phase ended, and whether it reset the
    sandbox cleanly. None: a worker of one job."""
    jobs: int = 0
    """Phase jobs handed to it so far."""
    logged: int = 0
    """Bytes of output copied into its log so far."""
    job_logged: int = 0
    """`logged` when its current job began: the output flood limit is a job's (a zygote takes many)."""
    env_key: tuple[tuple[str, str], ...] = ()
    """The environment it was started with (_env_key): a spare started under another is not handed a job."""

    @property
    def job_dir(self) -> Path:
        return self.home / "job"

    @property
    def started(self) -> bool:
        """Done starting: ready for its job, or already gone (a dead spare is discarded when taken)."""
        return self.proc.poll() is not None or (self.job_dir / READY_FILE).exists()


_keep_warm = False
MAX_SPARES = 8
"""At most this many workers wait at once per pool and DSL: each holds torch (about 1 GB of host memory) and, on a GPU,
a CUDA context."""


def keep_warm(on: bool = True) -> None:
    """After each job, start the next worker at once, so it imports torch and the DSL (and makes its CUDA context)
    while the model writes the next kernel. The agent loop turns this on; a one-off `harness check` does not."""
    global _keep_warm
    _keep_warm = on


def kept_warm() -> bool:
    """Whether more candidates are coming (keep_warm is on): what is started once per task may wait for them."""
    return _keep_warm


def _env_key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """What of a worker's environment a job depends on: all but its own folders, marker and lock descriptor."""
    own = ("HOME", "TMPDIR", "TRITON_CACHE_DIR", isolation.MARKER_VAR, gpu_lock.FD_VAR)
    return tuple(sorted((k, v) for k, v in env.items() if k not in own))


def _own(path: Path) -> None:
    """Give a folder to the sandbox uid (where the harness is root, the worker runs as that uid for real). Never
    through a link: a link a candidate left would have root hand it the host file it points at."""
    if os.geteuid() == 0 and not bwrap.unsandboxed():
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
            os.chown(path, bwrap.SANDBOX_UID, bwrap.SANDBOX_GID, follow_symlinks=False)


def _spawn(device: str, interpret: bool, readable: tuple[str, ...], worker_module: str,
           extra_env: dict[str, str], zygote: bool = False) -> _Worker:
    bwrap.require()
    leftovers.sweep_once()  # homes that harness processes killed before this one left behind
    home = Path(tempfile.mkdtemp(prefix="harness-worker-", dir=HOMES_DIR))
    leftovers.claim(home)
    (home / "job").mkdir()
    _own(home / "job")
    log_path = home / "worker.log"
    log = open(log_path, "wb")
    marker = isolation.new_marker()
    seccomp = None
    ack = ack_w = None  # a zygote's pipe (made below, where sandboxed)
    if bwrap.unsandboxed():
        (home / "scratch").mkdir()
        env = scrubbed_env(home / "scratch", interpret, extra_env)
        argv = [sys.executable, "-m", "rungs.worker", "--wait", device, worker_module, str(home / "job" / READY_FILE)]
        cut_network = isolation.network_mode()
    else:
        env = scrubbed_env(Path("/tmp"), interpret, extra_env)  # the sandbox's private tmpfs: HOME, TMPDIR, scratch
        policy = bwrap.Policy(writable=[home / "job"], readable=[Path(p) for p in readable], cuda=device == "cuda",
                              gpu_nodes=gpus.sandbox_nodes(env) if device == "cuda" else None, chdir=Path("/tmp"))
        seccomp = bwrap.seccomp_file(deny_ipc=zygote)
        if zygote:  # the zygote's end of the pipe it reports each phase's end and reset on
            ack, ack_w = os.pipe()
            os.set_inheritable(ack_w, True)
            how = ["--zygote", device, worker_module, str(home / "job" / READY_FILE), str(ack_w)]
        else:
            how = ["--wait", device, worker_module, str(home / "job" / READY_FILE)]
        argv = bwrap.command([sys.executable, "-m", "rungs.worker", *how], policy, seccomp_fd=seccomp)
        cut_network = None  # the sandbox has its own, empty network namespace
    env[isolation.MARKER_VAR] = marker
    # The GPU's timing lock, as a descriptor: the worker takes it around its timed phases (the sandbox has its own
    # /tmp, so it cannot open the host's lock file by name).
    lock = None
    if device == "cuda":
        with contextlib.suppress(OSError):  # no lock file to be had: the worker times without it (and says so)
            lock = gpu_lock.open_lock(gpus.identity(env), read_only=True)
    if lock is not None:
        env[gpu_lock.FD_VAR] = str(lock)
    try:
        proc = subprocess.Popen(argv, cwd=home, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=lambda: _limits(device == "cuda", cut_network),
                                pass_fds=tuple(fd for fd in (seccomp, lock, ack_w) if fd is not None))
    except BaseException:
        if ack is not None:
            os.close(ack)
        raise
    finally:
        for fd in (seccomp, lock, ack_w):
            if fd is not None:
                os.close(fd)
    worker = _Worker(proc, home, log_path, log, marker, readable, ack=ack, env_key=_env_key(env))
    worker.drain = threading.Thread(target=_drain, args=(worker,), name="worker-log", daemon=True)
    worker.drain.start()
    return worker


def _drain(worker: _Worker) -> None:
    """Copy the worker's output into its log, up to LOG_BYTES; past that, kill it (an output flood is cut where it
    happens, not at the next poll) and read on to the end so nothing blocks."""
    assert worker.proc.stdout is not None
    while chunk := worker.proc.stdout.read1(1 << 16):
        if worker.logged - worker.job_logged + len(chunk) > LOG_BYTES:
            if not worker.flooded.is_set():
                worker.flooded.set()
                try:
                    os.killpg(worker.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            continue
        worker.log.write(chunk)
        worker.log.flush()  # a zygote's log is read between its jobs, while the pipe stays open
        worker.logged += len(chunk)
    worker.log.flush()


class WorkerPool:
    """The pre-started workers of one device (a GPU index: its workers see only that GPU), keyed by DSL and
    interpreter mode, so a climb's next worker has paid for Python, torch, the DSL and a CUDA context before its job
    arrives. Climbs side by side take one pool each (one per GPU); `default_pool` is the one per device a climb gets
    when it is given none."""

    def __init__(self, device: str = "cpu", index: int | None = None, name: str = "") -> None:
        self.device = device
        self.index = index
        """The GPU its workers (and the climb's other processes: baselines, ncu) see, as the only one
        (rungs/sandbox/gpus.pinned_env); None: what the harness itself sees."""
        self.name = name
        """The device's name (`NVIDIA H200`), for the verdict's record of where a climb ran."""
        self._spares: dict[tuple[str, bool | str], list[_Worker]] = {}
        """Started workers by (DSL, interpreter mode or "zygote"), oldest first."""
        self._warmed: tuple[str, tuple[str, ...]] | None = None
        """The DSL and the folders of the last climb's warm_next: what a round's workers are started for."""
        _pools.append(self)

    def _env(self, backend: backends.Backend) -> dict[str, str]:
        return {**backend.worker_env(self.device), **self.pinned_env()}

    def pinned_env(self) -> dict[str, str]:
        """What pins a process to this pool's GPU (nothing without an index)."""
        return gpus.pinned_env(self.index)

    def prestart(self, dsl: str, interpret: bool, readable: tuple[str, ...] = (), count: int = 1,
                 zygote: bool = False) -> None:
        """Make sure `count` workers for (dsl, interpret) that show `readable` are starting or waiting (`zygote`: the
        workers PhaseSession takes, whatever `interpret` says)."""
        spares = self._spares.setdefault((dsl, "zygote" if zygote else interpret), [])
        backend = backends.get(dsl)
        # a spare started before the harness's environment changed (a test's, or a search's knob) would run the job
        # under the old one: what a worker started now would get
        now = _env_key(scrubbed_env(Path("/tmp"), interpret and not zygote, self._env(backend)))
        for spare in [w for w in spares if w.proc.poll() is not None or w.readable != readable or w.env_key != now]:
            _discard(spare)
            spares.remove(spare)
        if len(spares) < count:
            spares += [_spawn(self.device, interpret and not zygote, readable, backend.worker_module,
                              self._env(backend), zygote=zygote) for _ in range(count - len(spares))]

    def take(self, dsl: str, interpret: bool, readable: tuple[str, ...], zygote: bool = False) -> _Worker:
        """The oldest waiting worker, or a fresh one if none is left, alive and showing the same folders."""
        self.prestart(dsl, interpret, readable, zygote=zygote)
        return self._spares[(dsl, "zygote" if zygote else interpret)].pop(0)

    def session(self, dsl: str) -> PhaseSession | None:
        """One sandbox for a CPU climb's compile and run phases (PhaseSession), where this machine makes sandboxes;
        None: each phase takes a worker of its own."""
        # the zygote's sandbox refuses IPC through the seccomp filter, which is built for x86-64 only
        fit = (self.device == "cpu" and not bwrap.unsandboxed() and bwrap.seccomp_program() is not None
               and os.environ.get("KERNEL_HARNESS_ZYGOTE", "1") != "0")  # 0: a worker per phase, as before
        return PhaseSession(self, dsl) if fit else None

    def warm_next(self, dsl: str, readable: tuple[str, ...] = (), zygote: bool = False) -> None:
        """At the end of a climb, when keep_warm is on: start the worker the next candidate's compile will take (a
        zygote where this climb's phases shared one). Not earlier: a worker importing torch beside the harness's own
        correctness judging slowed that judging from 0.1 s to 3 s on the H200 machine (thread pools contending)."""
        if _keep_warm:
            self._warmed = (dsl, readable)
            self.prestart(dsl, interpret=False, readable=readable, zygote=zygote)

    def warm_round(self, count: int, first: tuple[str, tuple[str, ...]] | None = None) -> None:
        """Before a round's model calls, when keep_warm is on: start a worker for each of the `count` candidates this
        pool will climb (at most MAX_SPARES), as the last climb's warm_next would. A GPU climbs a round's candidates
        one after another; with one spare, each after the first waited for a cold worker (H200: about 11 s of a
        25-40 s climb, README's overhead table). Nothing climbs then, so their start-ups time nothing. `first`: the
        DSL and folders to start them for before any climb of this pool has said (the run's first round, whose
        workers started cold as its climbs began: 3.9 s of each gemm candidate's round-1 climb on an H100)."""
        warmed = self._warmed or first
        if _keep_warm and warmed is not None:
            dsl, readable = warmed
            self.prestart(dsl, interpret=False, readable=readable, count=min(count, MAX_SPARES))

    def run(self, job_dir: Path, job: Job, timeout_s: float, interpret: bool,
            session: PhaseSession | None = None) -> JobOutcome:
        return run_worker(job_dir, job, timeout_s, interpret, pool=self, session=session)

    def stop(self) -> None:
        for spares in self._spares.values():
            for spare in spares:
                _discard(spare)
        self._spares.clear()


_pools: list[WorkerPool] = []


def settle(timeout_s: float = STARTUP_S) -> None:
    """Wait until no spare of any pool is still starting; discard those still starting after `timeout_s`. A GPU job
    is handed over only then: a worker importing torch and making its CUDA context must not share the host's cores
    or a device with a candidate being timed (every pool's: with several GPUs, one pool's spares start beside another
    pool's climb)."""
    deadline = time.monotonic() + timeout_s
    while not all(w.started for ws in _spare_lists() for w in ws) and time.monotonic() < deadline:
        time.sleep(0.05)
    for ws in _spare_lists():
        for w in [w for w in ws if not w.started]:  # stuck: dropped, so it delays no later climb
            _discard(w)
            ws.remove(w)


def _spare_lists() -> list[list[_Worker]]:
    """Every pool's lists of waiting workers (the lists themselves: settle drops from them)."""
    return [ws for pool in list(_pools) for ws in list(pool._spares.values())]


_default_pools: dict[tuple[str, int | None], WorkerPool] = {}


def default_pool(device: str, index: int | None = None) -> WorkerPool:
    """The pool of a device that climbs share when none is given."""
    if (device, index) not in _default_pools:
        _default_pools[(device, index)] = WorkerPool(device, index)
    return _default_pools[(device, index)]


def _discard(worker: _Worker) -> None:
    isolation.kill_job(worker.proc, worker.marker)
    _close_log(worker)
    _close_ack(worker)
    leftovers.remove_tree(worker.home)


def _close_ack(worker: _Worker) -> None:
    if worker.ack is not None:
        os.close(worker.ack)
        worker.ack = None


MAX_ZYGOTE_JOBS = 32
"""Phase jobs one zygote takes (16 CPU climbs) before it is ended: its log file grows with each."""


class PhaseSession:
    """A CPU climb's phase jobs (compile, then run in Triton's interpreter) in one sandbox: a zygote worker
    (rungs/worker/zygote.py) imports torch once and forks a fresh child per job, and says after each whether it put
    the sandbox back as it was (processes, /tmp, /dev/shm, its own limits); the harness empties and refills the job
    folder. Where the zygote is not clean, died, or the job timed out, the next phase takes a fresh worker, as every
    phase did before (a worker start is mostly `import torch`: 1.6-1.8 CPU-s of a 6 CPU-s climb on a CPU). A zygote
    left clean by the climb's last phase goes back to its pool for the next climb (`release`), up to MAX_ZYGOTE_JOBS:
    the next candidate's phases are forks of the same pristine process, in the same reset sandbox."""

    def __init__(self, pool: WorkerPool, dsl: str) -> None:
        self.pool, self.dsl = pool, dsl
        self.worker: _Worker | None = None
        self.spent = False
        """True once a job left the zygote unfit for another: later jobs take workers of their own."""
        self.fit = False
        """The zygote's last job ended with a clean reset, and none is under way."""

    def take(self, readable: tuple[str, ...]) -> _Worker | None:
        if self.spent:
            return None
        if self.worker is None:
            self.worker = self.pool.take(self.dsl, False, readable, zygote=True)
        elif self.worker.readable != readable:
            self.close()
            return None
        return self.worker

    def close(self) -> None:
        """End the sandbox (its zygote is unfit)."""
        self.spent = True
        if self.worker is not None:
            _discard(self.worker)
            self.worker = None

    def release(self) -> None:
        """The climb is over: its zygote back to the pool where its last job left it clean, its job folder emptied
        and it has jobs left; else ended."""
        worker, self.worker = self.worker, None
        self.spent = True
        if worker is None:
            return
        spares = self.pool._spares.setdefault((self.dsl, "zygote"), [])
        if (self.fit and worker.proc.poll() is None and worker.jobs < MAX_ZYGOTE_JOBS - 1 and len(spares) < MAX_SPARES
                and _emptied(worker.job_dir)):
            (worker.job_dir / READY_FILE).touch()  # `started`: waiting for a job
            spares.append(worker)
        else:
            _discard(worker)


def _close_log(worker: _Worker) -> None:
    if worker.drain is not None:
        worker.drain.join(timeout=5)  # the pipe ends with the sandbox
    worker.log.close()


@atexit.register
def _stop_pools() -> None:
    for pool in _pools:
        pool.stop()


def job_readable(job: Job | None) -> tuple[str, ...]:
    """Host folders a job's worker must read besides Python and rungs/: where the task's input maker lives."""
    folders = {str(Path(e["inputs"].rpartition(":")[0]).resolve().parent) for e in (job.bench if job else [])}
    return tuple(sorted(folders))


HANDED = ("inputs-", "candidate", JOB_FILE)
"""What the harness puts in a worker's folder (and does not take back: the worker may have changed it)."""


def _hand_over(job_dir: Path, job: Job, inner: Path) -> Job:
    """Copy the job's input files into the worker's own folder (the one the sandbox lets it write) and point the job
    at them: the candidate's file too, so the sandbox need not show the folder it came from."""
    for entry in job_dir.glob("inputs-*.pt"):
        shutil.copy2(entry, inner / entry.name)
    kernel = Path(job.kernel)
    (inner / "candidate").mkdir(exist_ok=True)
    shutil.copy2(kernel, inner / "candidate" / kernel.name)
    for path in [inner, *inner.rglob("*")]:
        _own(path)
    return job.but(kernel=str(inner / "candidate" / kernel.name))


TAKEN_SUFFIXES = (".json", ".pt", ".txt", ".log")
"""What the worker writes at the top of its folder (phase results, outputs, launch records, stacks); nothing else
is taken back."""
MAX_TAKEN_BYTES = 8 << 30
MAX_TEXT_BYTES = 64 << 20
"""A phase file, launch record, stack dump or log the parent reads whole: a 4 GiB one would cost the parent its
memory (saved outputs, .pt, may be as large as a bench shape's)."""
MAX_COMPILED_BYTES = 64 << 20


def _plain_file(path: Path, limit: int) -> bool:
    """A regular file (not a link, FIFO or device) whose allocated and apparent sizes are both within `limit`."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= limit and st.st_blocks * 512 <= limit + (1 << 20)


DUMP_NAME = re.compile(r"([A-Za-z_]\w*)(?:\.\d+)?\.\w+")
OUTPUT_NAME = re.compile(r"out-[\w-]{1,120}\.pt")
"""What the worker names a saved output (out-<case>.pt, out-<bench>-first.pt, out-<case>-cfg<k>.pt, ...)."""


def taken_output(job_dir: Path, name: object) -> Path | None:
    """A saved output's path from a name the worker's phase file gives, or None: the phase file is the candidate's
    to write, so a name must be an output's (not `/proc/kmsg`, not `../another-run/out.pt`) and the file one that
    came back as a plain file (`_take_back`)."""
    if not isinstance(name, str) or not OUTPUT_NAME.fullmatch(name):
        return None
    path = job_dir / name
    return path if _plain_file(path, MAX_TAKEN_BYTES) else None


def _take_back(inner: Path, job_dir: Path, compiled_suffixes: tuple[str, ...]) -> list[str]:
    """Move what the worker wrote back into the ladder's job folder (a rename where both are on one file system):
    only plain files of the kinds the worker writes, at the top and one level down in compiled/. The harness reads
    them as its own user, so a link the candidate made, a FIFO (a read that never returns), a sparse giant or a
    folder where a file belongs stays behind. In compiled/, only the DSL backend's dump suffixes (Backend.
    dump_suffixes). Returns what was left behind, for the log."""
    left: list[str] = []
    for entry in sorted(os.listdir(inner)):
        src, dest = inner / entry, job_dir / entry
        if entry.startswith(HANDED):
            continue
        if entry == "compiled" and src.is_dir() and not src.is_symlink():
            dest.mkdir(exist_ok=True)
            for name in sorted(os.listdir(src))[:10_000]:
                if name.endswith(compiled_suffixes) and _plain_file(src / name, MAX_COMPILED_BYTES):
                    shutil.move(str(src / name), str(dest / name))
                else:
                    left.append(f"compiled/{name}")
        elif entry.endswith(TAKEN_SUFFIXES) and _plain_file(src, MAX_TAKEN_BYTES if entry.endswith(".pt")
                                                             else MAX_TEXT_BYTES):
            if dest.is_dir() and not dest.is_symlink():
                shutil.rmtree(dest)
            shutil.move(str(src), str(dest))
        else:
            left.append(entry)
    return left


MAX_PHASE_BYTES = 64 << 20


def read_phase(path: Path) -> dict[str, Any] | None:
    """A phase's result as the worker wrote it, or None when it is missing, too big, not JSON or not an object with
    a boolean `ok` (a half-written file, or one a candidate shaped)."""
    if not _plain_file(path, MAX_PHASE_BYTES):
        return None
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("ok"), bool) else None


def run_worker(job_dir: Path, job: Job, timeout_s: float, interpret: bool,
               pool: WorkerPool | None = None, session: PhaseSession | None = None) -> JobOutcome:
    """Hand the job to a waiting worker of `pool` (default: the job's device's), or a fresh one, run it to completion
    or its timeout, and collect its phase files. The timeout counts from the hand-over. With `session`, the job runs
    in a fresh fork of the session's zygote (PhaseSession) where it is fit for one."""
    pool = pool or default_pool(job.device)
    backend = backends.get(job.dsl)
    if not job.worker_module:
        job = job.but(worker_module=backend.worker_module)
    job_dir = job_dir.resolve()
    for old in job_dir.glob("phase-*.json"):
        old.unlink()
    (job_dir / JOB_FILE).write_text(job.to_json())
    zygote = session.take(job_readable(job)) if session is not None else None
    if zygote is not None and zygote.jobs and not _emptied(zygote.job_dir):  # what the last phase left in it
        assert session is not None
        session.close()
        zygote = None
    worker = zygote or pool.take(job.dsl, interpret, job_readable(job))
    if pool.device == "cuda":
        settle()
    inner = worker.job_dir
    handed = _hand_over(job_dir, job, inner)
    (inner / JOB_FILE).write_text(handed.to_json())
    outcome = JobOutcome(notes=[sandbox_note()])
    if zygote is not None:
        outcome.notes.append(f"a fresh fork of the zygote, its job {zygote.jobs + 1} (of at most {MAX_ZYGOTE_JOBS}), "
                             "the sandbox reset after each (rungs/worker/zygote.py)")
    log_from = worker.log_path.stat().st_size if zygote is not None else 0
    worker.job_logged = worker.logged
    fit = False  # the zygote may take another job
    if session is not None:
        session.fit = False
    t0 = time.monotonic()
    try:
        assert worker.proc.stdin is not None
        if zygote is not None:
            zygote.jobs += 1
            worker.proc.stdin.write(f"{'interpret' if interpret else 'compile'} {inner}\n".encode())
            worker.proc.stdin.flush()
        else:
            worker.proc.stdin.write(f"{inner}\n".encode())
            worker.proc.stdin.close()
        # A worker started just now may still be importing torch: the limit counts from when it takes the job.
        watch = {"rss_limit": HOST_RSS_LIMIT_BYTES, "disk": {inner: JOB_DIR_BYTES}}
        outcome.returncode, stopped = isolation.wait(worker.proc, STARTUP_S, until=inner / TAKEN_FILE, **watch)
        if stopped == "until":  # outcome.seconds still counts from the hand-over: the overhead breakdown's wall time
            ended = zygote.ack if zygote is not None else None
            outcome.returncode, stopped = isolation.wait(worker.proc, timeout_s, **watch, until=ended,
                                                         grace=(inner / gpu_lock.WAIT_FILE, gpu_lock.GRACE_S))
            if stopped == "until":  # the zygote's child ended: how, and whether the sandbox is as it was
                assert zygote is not None
                outcome.returncode, fit = _acknowledged(zygote)
                stopped = None
                _drained(zygote)
        elif stopped == "timeout":
            outcome.notes.append(f"the worker did not start within {STARTUP_S:.0f} s")
        outcome.timed_out, outcome.memory_exceeded = stopped == "timeout", stopped == "memory"
        if not stopped and _crashed_writing_stacks(outcome.returncode, inner):
            outcome.timed_out = True  # the watchdog fires only at the limit: a slow run, not a crash of the candidate
        if stopped and stopped.startswith("disk:"):
            outcome.disk_exceeded = "job folder"
    except BrokenPipeError:  # the worker died while waiting (killed from outside): its log says why
        outcome.returncode = worker.proc.wait()
    finally:
        if not fit:
            isolation.kill_job(worker.proc, worker.marker)
            _close_log(worker)
            _close_ack(worker)
    if worker.flooded.is_set():
        outcome.disk_exceeded = "output log"
    outcome.seconds = time.monotonic() - t0 if not outcome.timed_out else timeout_s
    outcome.log_tail = scrub(_tail(worker.log_path, start=log_from))
    (job_dir / "worker.log").write_text(outcome.log_tail)
    names = set(kernel_names(Path(job.kernel)))
    if outcome.disk_exceeded != "job folder":
        _take_back(inner, job_dir, tuple(f".{s}" for s in {*backend.dump_suffixes, "json"}))
    for name in job.phases:
        phase = read_phase(job_dir / f"phase-{name}.json")
        if phase is not None:  # else the phase counts as one that never finished
            outcome.phases[name] = scrub(_accept_names(phase, names, job_dir, outcome.renamed))
    if zygote is None:
        leftovers.remove_tree(worker.home)
    elif not fit:
        assert session is not None
        session.close()
    else:
        assert session is not None
        session.fit = True
    return outcome


def _acknowledged(zygote: _Worker) -> tuple[int | None, bool]:
    """The zygote's line for the job that just ended: (the child's exit as Popen gives it, whether the sandbox was
    reset cleanly). A line that is not the zygote's format counts as unfit."""
    assert zygote.ack is not None
    line = os.read(zygote.ack, 4096).decode(errors="replace")
    status, _, state = line.strip().partition(" ")
    if not status.isdigit() or "\n" in line.strip():
        return None, False
    return os.waitstatus_to_exitcode(int(status)), state == "clean"


def _drained(worker: _Worker, wait_s: float = 1.0) -> None:
    """Let the log thread copy what the ended child printed before the tail is read (the pipe outlives the child)."""
    assert worker.proc.stdout is not None
    deadline = time.monotonic() + wait_s
    buf = array.array("i", [0])
    while time.monotonic() < deadline:
        try:
            fcntl.ioctl(worker.proc.stdout.fileno(), termios.FIONREAD, buf)
        except OSError:
            return
        if buf[0] == 0:
            time.sleep(0.01)  # the chunk read last is being written
            return
        time.sleep(0.01)


def _emptied(inner: Path) -> bool:
    """Empty a zygote's job folder of what its last phase left (as the harness's user, never through a link), for
    the next phase's hand-over; False where something stays."""
    try:
        for entry in os.scandir(inner):
            if entry.is_dir(follow_symlinks=False):
                leftovers.remove_tree(Path(entry.path))
            else:
                os.unlink(entry.path)
        return not os.listdir(inner)
    except OSError:
        return False


def kernel_names(kernel: Path) -> list[str]:
    """Identifiers the candidate's source defines or names: the only kernel names a worker may report."""
    import re

    try:
        return re.findall(r"[A-Za-z_]\w*", kernel.read_text(errors="replace"))
    except OSError:
        return []


def _source_name(base: str, names: set[str]) -> bool:
    """A name of the source, or one with a number after it (a kernel named f"attention_d{d}" per head dimension)."""
    stem = re.sub(r"\d{1,6}$", "", base)
    return base in names or (stem != base and stem in names)


def _named_from(function: str, names: set[str]) -> bool:
    """A compiler-made device function name (`kernel_cutlass_softmax_kernel_tensorptr...`, `softmax_rows_kernel`)
    that holds one of the source's names of four or more letters; anything else is dropped."""
    return bool(re.fullmatch(r"\w{1,200}", function)) and any(len(n) >= 4 and n in function for n in names)


def _accept_names(phase: dict[str, Any], names: set[str], job_dir: Path,
                  renamed: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """A compiled kernel's name reaches messages, prompts and dump file names: keep only names the candidate's source
    holds (a kernel named after a value it read somewhere would carry that value out); others are renamed, and what
    they were called goes to `renamed` (JobOutcome.renamed: the profile's launch check, never shown)."""
    kernels = phase.get("kernels")
    if not isinstance(kernels, list):
        return phase
    compiled = job_dir / "compiled"
    phase["kernels"] = kernels = [k if isinstance(k, dict) else {} for k in kernels]
    for i, k in enumerate(kernels):
        claimed = [str(f) for f in k["functions"]] if isinstance(k.get("functions"), list) else []
        if isinstance(k.get("functions"), list):  # device functions the compiler named from the candidate's names
            k["functions"] = [f for f in map(str, k["functions"]) if _named_from(f, names)]
        name = str(k.get("name", ""))
        base, _, suffix = name.partition(".")
        if (_source_name(base, names) and (not suffix or suffix.isdigit())
                and not base.startswith("unnamed_kernel_")):  # the harness's own names are not the candidate's to take
            continue
        new = f"unnamed_kernel_{i}"
        if renamed is not None:
            renamed[new] = [n for n in dict.fromkeys([base, *claimed]) if re.fullmatch(r"\w{1,200}", n)]
        for f in list(compiled.iterdir()) if compiled.is_dir() else []:
            stage = f.name[len(name) + 1:]
            if f.name.startswith(name + ".") and "." not in stage:
                f.rename(compiled / f"{new}.{stage}")
        k["name"] = new
    accepted = {str(k.get("name", "")).partition(".")[0] for k in kernels}
    for f in list(compiled.iterdir()) if compiled.is_dir() else []:  # files no reported kernel accounts for
        form = DUMP_NAME.fullmatch(f.name)  # <kernel>[.<n>].<stage>: nothing else reaches the dump listing
        if form is None or form.group(1) not in accepted:
            f.unlink()
    return phase


def run_command(argv: list[str], job_dir: Path, timeout_s: float, stdout_path: Path,
                readable: tuple[str, ...] = (), extra_env: dict[str, str] | None = None,
                stdin_text: str | None = None, ready: Path | None = None) -> JobOutcome:
    """Run a trusted tool that starts candidate code (ncu over a waiting worker) in the same sandbox as the
    worker: scrubbed environment, private /tmp as HOME, its own namespaces, a time limit. Only `job_dir` is
    writable. Its stdout goes to `stdout_path`, its stderr to `stdout_path` with `.log` (the outcome's log_tail).
    `extra_env`: the climb's pool's GPU pin (WorkerPool.pinned_env), so ncu profiles where the candidate was timed.
    `stdin_text`: written to the command's standard input (a waiting worker's job line), which is then closed.
    `ready`: the file a waiting worker touches once started (Python, torch, the CUDA context, under ncu): until then
    the GPU's timing lock is held shared, beside other climbs' untimed work (run phases, bench references), and only
    then exclusively, before the job line is written; without it the lock is exclusive from the start. On the
    H200 the witness and profile held the GPU alone for 12-25 s a candidate, most of it that start-up."""
    bwrap.require()
    job_dir = job_dir.resolve()
    seccomp = None
    log_path = stdout_path.with_suffix(".log")
    t0 = time.monotonic()
    marker = isolation.new_marker()
    if bwrap.unsandboxed():
        scratch = job_dir / "scratch"
        scratch.mkdir(parents=True, exist_ok=True)
        env, cwd = scrubbed_env(scratch, interpret=False, extra=extra_env), scratch
    else:
        for path in [job_dir, *job_dir.rglob("*")]:
            _own(path)
        tool = Path(argv[0]).resolve().parent  # the trusted tool itself must be visible wherever it is installed
        # CUDA's ncu is a launcher that looks for Nsight Compute under /opt/nvidia (seen on the H200 machine)
        nvidia = [p for p in (Path("/opt/nvidia"),) if p.is_dir()]
        env, cwd = scrubbed_env(Path("/tmp"), interpret=False, extra=extra_env), job_dir
        policy = bwrap.Policy(writable=[job_dir], readable=[tool, *nvidia, *(Path(p) for p in readable)], cuda=True,
                              gpu_nodes=gpus.sandbox_nodes(env), chdir=Path("/tmp"))
        seccomp = bwrap.seccomp_file()
        argv = bwrap.command(argv, policy, seccomp_fd=seccomp)  # ncu and its target share the sandbox's loopback
    env[isolation.MARKER_VAR] = marker
    # Everything run here times the GPU (ncu's witness and profile, the sections' timing): one such run per GPU on
    # this host at a time, and none beside a worker's timed phases (rungs/timing/gpu_lock.py). A tool whose target
    # says when it is ready starts under the lock held shared (`ready` above).
    if ready is not None:
        ready.unlink(missing_ok=True)
    with gpu_lock.held_for(gpus.identity(env), shared=ready is not None) as lock, open(stdout_path, "wb") as out, \
            open(log_path, "wb") as log:
        t0 = time.monotonic()  # the time limit counts from the lock on
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=log, start_new_session=True,
                                    stdin=subprocess.DEVNULL if stdin_text is None else subprocess.PIPE,
                                    preexec_fn=lambda: _limits(True), pass_fds=() if seccomp is None else (seccomp,))
        finally:
            if seccomp is not None:
                os.close(seccomp)
        outcome = JobOutcome(notes=[sandbox_note(), *([str(lock["note"])] if lock["note"] else [])])
        try:
            started = 0.0
            if ready is not None:
                while not ready.exists() and proc.poll() is None and time.monotonic() - t0 < timeout_s:
                    time.sleep(0.05)
                started = time.monotonic() - t0
                alone = lock["exclusive"]()  # type: ignore[operator]
                outcome.notes += [str(alone["note"])] if alone["note"] else []
                t0 = time.monotonic() - started  # the wait for the GPU alone is not the tool's time
            if stdin_text is not None and proc.stdin is not None:
                try:
                    proc.stdin.write(stdin_text.encode())
                    proc.stdin.close()
                except BrokenPipeError:  # it died first: its exit code says why
                    pass
            outcome.returncode, stopped = isolation.wait(proc, max(1.0, timeout_s - started), HOST_RSS_LIMIT_BYTES,
                                                         disk={job_dir: JOB_DIR_BYTES, stdout_path: LOG_BYTES,
                                                               log_path: LOG_BYTES})
            outcome.timed_out, outcome.memory_exceeded = stopped == "timeout", stopped == "memory"
        finally:
            isolation.kill_job(proc, marker)
    outcome.seconds = time.monotonic() - t0 if not outcome.timed_out else timeout_s
    outcome.log_tail = scrub(_tail(log_path))
    shutil.rmtree(job_dir / "scratch", ignore_errors=True)
    return outcome


def _tail(path: Path, limit: int = 4000, start: int = 0) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(start, path.stat().st_size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""
