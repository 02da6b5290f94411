"""The OS sandbox holds against a candidate that tries to escape it, with the static screen off (so each attempt
reaches the worker): no secrets, no network, no writes outside its job folder, nothing that outlives the check, the
harness untouched. Each probe kernel reports what it managed (`ESCAPED ...`) and is otherwise an honest softmax; the
same probes run with the sandbox off show they are not vacuous.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from rungs.core.spec import load_task
from rungs.sandbox import bwrap, pool
from rungs.ladder.ladder import check

from conftest import ROOT, TASKS

pytestmark = pytest.mark.skipif(bwrap.probe() is not None, reason=f"no sandbox here: {bwrap.probe()}")

SECRET = "sk-test-9f3c2a71d4e8b6a0"

HONEST = "\n" + (TASKS / "demos" / "softmax_3_rowwise.py").read_text()

# Each probe runs at import and appends to `found` what it got past; the kernel then fails with ESCAPED.
PROBES = {
    "parent_environ": '''
for pid in [os.getppid(), 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()] + [HARNESS_PID]:
    try:
        if b"SECRET_VALUE" in open(f"/proc/{pid}/environ", "rb").read():
            found.append(f"the key in /proc/{pid}/environ")
    except OSError:
        pass
''',
    "harness_and_home_files": '''
for path in [HARNESS_FILE, HOME_FILE, "/etc/shadow", RUN_FILE]:
    try:
        open(path, "rb").read(1)
        found.append(f"read {path}")
    except OSError:
        pass
''',
    "write_outside": '''
for path in [WRITE_TARGETS]:
    try:
        with open(path, "a") as f:
            f.write("x")
        found.append(f"wrote {path}")
    except OSError:
        pass
''',
    "network": '''
import ctypes
try:  # rejoin the harness's network namespace, then reach its loopback listener
    fd = os.open(f"/proc/{HARNESS_PID}/ns/net", os.O_RDONLY)
    if ctypes.CDLL(None, use_errno=True).setns(fd, 0x40000000) == 0:
        found.append("setns into the harness's network namespace")
except OSError:
    pass
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).sendall(b"hello")
    found.append("connected to the harness's loopback listener")
except OSError:
    pass
''',
    "kill_harness": '''
import signal
pids = {os.getppid()}
for p in os.listdir("/proc"):
    try:
        if p.isdigit() and b"harness.cli" in open(f"/proc/{p}/cmdline", "rb").read():
            pids.add(int(p))
    except OSError:
        pass
for pid in pids - {os.getpid(), 0}:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
''',
    "kernel_interfaces": '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
job = os.path.dirname(os.path.dirname(__file__))
fd = os.open(os.path.join(job, "held"), os.O_CREAT | os.O_WRONLY)
if libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(1 << 30)) == 0:  # KEEP_SIZE: past RLIMIT_FSIZE
    found.append("fallocate")
if libc.syscall(248, b"user", b"harness-probe", b"state", 5, -3) > 0:  # add_key into the user keyring
    found.append("kernel keyring")
if libc.syscall(425, 8, ctypes.create_string_buffer(120)) >= 0:
    found.append("io_uring")
if libc.unshare(0x10000000) == 0:  # a user namespace of its own: mounts out of the harness's sight
    found.append("new user namespace")
for path in [SIBLING, "/opt", "/home", "/run", "/var/lib"]:
    if os.path.exists(path):
        found.append(f"sees {path}")
''',
    "job_secrets": '''
job = os.path.dirname(os.path.dirname(__file__))  # the worker's job folder: the candidate's copy is in candidate/
for name in ["job.json"] + [n for n in os.listdir(job) if n.startswith("inputs-r")]:
    try:
        text = open(os.path.join(job, name), "rb").read()
        found.append(f"read {name} ({len(text)} bytes)")
    except OSError:
        pass
''',
    "write_private": '''
for path in [PRIVATE]:  # the sandbox's own tmpfs: writable (an OSError here fails the probe)
    with open(path, "w") as f:
        f.write("x")
''',
    "tmp_full": '''
block = b"x" * (1 << 24)
try:  # the private /tmp is a size-limited tmpfs: the write fails with ENOSPC
    with open("/tmp/fill", "wb") as f:
        while True:
            f.write(block)
except OSError as e:
    if e.errno != 28:
        found.append(f"filling /tmp: {e!r}, not ENOSPC")
finally:
    if os.path.exists("/tmp/fill"):
        os.remove("/tmp/fill")
''',
    "daemon": '''
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["/bin/sleep", "DAEMON_SECONDS"], {})
    os._exit(0)
time.sleep(0.2)
''',
}


def probe_source(name: str, **values: object) -> str:
    """The probe, ending the compile phase with ESCAPED (what got through) or CONTAINED: one worker per probe, not
    the whole ladder."""
    return probes_source({name: values})


def probes_source(probes: dict[str, dict[str, object]]) -> str:
    """Several probes one after another in one worker (one worker start for all: each start imports torch and
    Triton). Each finding carries its probe's name (`network: connected ...`), and a probe that raises is a finding
    of its own, so the next probes still run and a failure names its probe. Ends like one probe: ESCAPED, with
    every finding, or CONTAINED."""
    parts = ["import os, socket, sys, time\nfound = []\n"]
    for name, values in probes.items():
        code = PROBES[name]
        for key, value in values.items():
            code = code.replace(key, str(value))
        parts.append(f"found, _before = [], found\ntry:\n{textwrap.indent(code.strip(), '    ')}\n"
                     f"except Exception as _e:\n    found.append(f'raised {{_e!r}}')\n"
                     f"found = _before + [{name!r} + ': ' + _f for _f in found]\n")
    return ("".join(parts) + "raise RuntimeError('ESCAPED ' + '; '.join(found) if found else 'CONTAINED')\n"
            + HONEST)


@pytest.fixture(scope="module")
def tiny():
    task = load_task(TASKS / "softmax.yaml")
    return task.model_copy(update={"shapes": task.shapes.model_copy(update={"test": [{"M": 2, "N": 8}]}),
                                   "timeout_s": 60.0})


def climb(task, kernel: Path, tmp_path: Path, **kw):
    return check(task, kernel, tmp_path / "work", dump_dir=tmp_path / "dumps", seeds=1, static_checks=False, **kw)


def tiny_task_file(tmp_path: Path) -> Path:
    """softmax.yaml with one small test shape, beside a copy of its reference."""
    spec = (TASKS / "softmax.yaml").read_text()
    head, _, rest = spec.partition("  test:\n")
    _, _, rest = rest.partition("  bench:\n")
    (tmp_path / "softmax_ref.py").write_text((TASKS / "softmax_ref.py").read_text())
    task = tmp_path / "tiny.yaml"
    task.write_text(head + "  test:\n    - {M: 2, N: 8}\n  bench:\n" + rest.replace("transcript: softmax.demo.jsonl\n", ""))
    return task


# The ladder in a process of its own, as `harness check` runs it but with the static screen off (so the escape reaches
# the worker); it holds `env` from its start, so a key is in its /proc/<pid>/environ as in a real run.
DRIVER = """
import sys
from pathlib import Path
from harness.cli import require_sandbox
from rungs.core.spec import load_task
from rungs.ladder.ladder import check
require_sandbox(False)
v = check(load_task(Path(sys.argv[1])), Path(sys.argv[2]), Path(sys.argv[3]), seeds=1, static_checks=False)
print(v.model_dump_json())
"""


def cli_check(tmp_path: Path, kernel: Path, driver: bool = True, **env: str) -> tuple[int, dict, str]:
    full = {k: v for k, v in os.environ.items() if k != bwrap.UNSANDBOXED_VAR}
    full.update(env)
    task = str(tiny_task_file(tmp_path))
    argv = ([sys.executable, "-c", DRIVER, task, str(kernel), str(tmp_path / "work")] if driver else
            [sys.executable, "-m", "harness.cli", "check", task, str(kernel), "--json"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=ROOT, env=full)
    try:
        verdict = json.loads(done.stdout)
    except json.JSONDecodeError:
        verdict = {}
    return done.returncode, verdict, done.stderr


# ---- the in-process probes: one climb for all ------------------------------------------------------------------
def findings(rungs: list[dict]) -> list[str]:
    """Every finding of the (combined) probe, each `probe: what`; [] when it got nothing through."""
    text = "\n".join(f"{r.get('message', '')}\n{r.get('details', '')}" for r in rungs)
    line = next((ln for ln in text.splitlines() if "RuntimeError: ESCAPED " in ln), "")
    return line.split("RuntimeError: ESCAPED ", 1)[1].split("; ") if line else []


def probe_held(rungs: list[dict], name: str) -> list[str]:
    """Asserts the probes ran to their end (the compile phase ended with ESCAPED or CONTAINED); returns what
    probe `name` got through ([] when the sandbox held against it)."""
    compile_rung = next((r for r in rungs if r.get("name") == "compile"), {})
    ended = compile_rung.get("status") == "fail" and (
        "RuntimeError: CONTAINED" in compile_rung.get("message", "") or findings([compile_rung]))
    assert ended, [(r.get("name"), r.get("message")) for r in rungs]
    return [f for f in findings(rungs) if f.startswith(f"{name}: ")]


def dumped(verdict) -> list[dict]:
    return [r.model_dump() for r in verdict.rungs]


@pytest.fixture(scope="module")
def sandboxed(tiny, tmp_path_factory):
    """The in-process probes in one worker (screen off, sandbox on), each with what it needs around it: a file in
    $HOME, a folder beside the checkout, a loopback listener, the harness's own files to write. Each test below
    judges its probe's part; what is checked on the host happens after the climb, before the fixture's cleanup."""
    tmp_path = tmp_path_factory.mktemp("sandboxed")
    # one per process: two pytest-xdist workers may each set this fixture up at once (one removed the other's file)
    home_file = Path.home() / f".harness-isolation-probe-{os.getpid()}"
    sibling = ROOT.parent / f"harness-sibling-probe-{os.getpid()}"
    cache = tmp_path / "cache"
    cache.mkdir()
    guards = ROOT / "rungs" / "worker" / "tamper.py"
    targets = [guards, ROOT / "rungs" / "planted.py", cache / "ceilings-NVIDIA H200.json", Path.home() / "planted",
               tmp_path / "planted", Path(sys.prefix) / "planted", Path("/etc/planted")]
    private = [Path("/tmp") / "planted-by-candidate", Path("/dev/shm") / "planted-by-candidate"]
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    reached: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                reached.append(server.accept())
            except OSError:
                continue

    # kernel_interfaces near the end: a new user namespace, were it allowed, would change what the next probes see
    kernel = tmp_path / "probes.py"
    kernel.write_text(probes_source({
        "harness_and_home_files": dict(HARNESS_FILE=repr(str(ROOT / "harness" / "cli.py")),
                                       HOME_FILE=repr(str(home_file)), RUN_FILE=repr(str(ROOT / "runs" / "README.md"))),
        "write_outside": dict(WRITE_TARGETS=", ".join(repr(str(t)) for t in targets)),
        "write_private": dict(PRIVATE=", ".join(repr(str(p)) for p in private)),
        "network": dict(HARNESS_PID=os.getpid(), PORT=server.getsockname()[1]),
        "daemon": dict(DAEMON_SECONDS=DAEMON_SECONDS),
        "job_secrets": {},
        "kernel_interfaces": dict(SIBLING=repr(str(sibling))),
        "tmp_full": {},
    }))
    home_file.write_text("private")
    sibling.mkdir()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    before = hashlib.sha256(guards.read_bytes()).hexdigest()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("KERNEL_HARNESS_CACHE", str(cache))
            v = climb(tiny, kernel, tmp_path)
    finally:
        stop.set()
        thread.join()
        server.close()
        home_file.unlink()
        sibling.rmdir()
    return {"verdict": v, "rungs": dumped(v), "guards_kept": hashlib.sha256(guards.read_bytes()).hexdigest() == before,
            "left_on_host": [t for t in targets[1:] + private if t.exists()], "reached": reached,
            "sleepers": _sleepers(DAEMON_SECONDS)}


DAEMON_SECONDS = f"31.{os.getpid()}"
"""How long the daemon probe's sleeper sleeps: the name the check looks for on the host afterwards. One per test
process: two pytest-xdist workers may each build the `sandboxed` fixture at once, and one found the other's
sleeper, alive until that climb's end (one failure in four runs of this module beside two others)."""


def test_no_harness_or_home_file_readable(sandboxed):
    assert probe_held(sandboxed["rungs"], "harness_and_home_files") == []


def test_the_jobs_secrets_are_not_in_the_candidates_folder(sandboxed):
    """The job file (the fresh inputs' seed, the witnessed call) is read and removed before the candidate's import: a
    kernel reading it with any file API the screen misses (linecache, zipfile) finds nothing."""
    assert probe_held(sandboxed["rungs"], "job_secrets") == []


def test_no_write_outside_the_job(sandboxed):
    assert probe_held(sandboxed["rungs"], "write_outside") == []
    assert sandboxed["guards_kept"]
    # /tmp and /dev/shm are the sandbox's own tmpfs: writable there, gone with it, never the host's
    assert probe_held(sandboxed["rungs"], "write_private") == []
    assert sandboxed["left_on_host"] == []


def test_no_kernel_interface_around_the_limits(sandboxed):
    """fallocate (disk past the file-size limit and the watchdog), the kernel keyring (state across sandboxes, which
    share one uid), io_uring, a nested user namespace (a tmpfs out of the memory watchdog's sight), and any host
    folder beyond the system ones (a checkout beside this one)."""
    assert probe_held(sandboxed["rungs"], "kernel_interfaces") == []


def test_no_network_and_no_way_back(sandboxed):
    assert probe_held(sandboxed["rungs"], "network") == []
    assert sandboxed["reached"] == []


def _sleepers(seconds: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")[:2] == [b"/bin/sleep", seconds.encode()]:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_nothing_outlives_the_check(sandboxed):
    assert sandboxed["verdict"].failed_rung == "compile", sandboxed["verdict"].summary
    assert probe_held(sandboxed["rungs"], "daemon") == []
    assert sandboxed["sleepers"] == []


# The ladder in a process of its own with a key in its environment: the secret probe, then the one that kills what
# it finds of the harness (one `harness check` for both; the kill comes last).
@pytest.fixture(scope="module")
def cli_probed(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("cli_probed")
    kernel = tmp_path / "probe_environ_kill.py"
    kernel.write_text(probes_source({"parent_environ": dict(SECRET_VALUE=SECRET, HARNESS_PID=os.getpid()),
                                     "kill_harness": {"harness.cli": "rungs.ladder.ladder"}}))
    return cli_check(tmp_path, kernel, ANTHROPIC_API_KEY=SECRET)


def test_no_secret_in_reach(cli_probed):
    rc, verdict, err = cli_probed
    assert rc == 0, err[-2000:]
    assert probe_held(verdict.get("rungs", []), "parent_environ") == [], err[-2000:]
    assert SECRET not in json.dumps(verdict)


def test_killing_the_harness_ends_only_the_candidate(cli_probed):
    """The candidate looks for the harness by name and by parent pid and kills what it finds: `harness check` lives
    on to give its verdict (exit 0, one JSON object), not exit 137."""
    rc, verdict, err = cli_probed
    assert rc == 0 and probe_held(verdict.get("rungs", []), "kill_harness") == [], (verdict, err[-2000:])


def test_disk_and_output_floods_are_cut(tiny, tmp_path, monkeypatch, sandboxed):
    monkeypatch.setattr(pool, "JOB_DIR_BYTES", 64 << 20)
    monkeypatch.setattr(pool, "LOG_BYTES", 16 << 20)
    fill = tmp_path / "fill.py"
    fill.write_text("import sys\nfrom pathlib import Path\nblock = b'x' * (1 << 20)\n"
                    "with open(Path(__file__).parent.parent / 'fill.bin', 'wb') as f:\n"
                    "    while True:\n        f.write(block)\n" + HONEST)
    v = climb(tiny, fill, tmp_path)
    assert v.failed_rung == "compile" and "job folder passed its size limit" in v.rung("compile").message, v.summary
    flood = tmp_path / "flood.py"
    flood.write_text("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n" + HONEST)
    v = climb(tiny, flood, tmp_path)
    assert v.failed_rung == "compile" and "output log passed its size limit" in v.rung("compile").message, v.summary
    # the private /tmp is a size-limited tmpfs: the write fails (ENOSPC), nothing is hurt (the combined probe's part)
    assert probe_held(sandboxed["rungs"], "tmp_full") == []


@pytest.mark.parametrize("shape, phrase", [
    ("open(os.path.join(JOB, 'phase-compile.json'), 'w').write('[]')", "exited with code 0 before finishing"),
    ("open(os.path.join(JOB, 'phase-compile.json'), 'w').write('{\"ok\": true}')", "could not judge"),
    ("p = JOB\nfor i in range(1200):\n    p = os.path.join(p, 'd')\n    os.mkdir(p)\nimport time\ntime.sleep(30)",
     "job folder passed its size limit"),
])
def test_results_a_candidate_shapes_fail_it_not_the_harness(tiny, tmp_path, shape, phrase):
    """What the worker leaves is read by the harness: a phase file the candidate wrote in the worker's place, or a
    folder chain deeper than Python's recursion, fails the candidate with a reason."""
    kernel = tmp_path / "shaped.py"
    kernel.write_text("import os\nJOB = os.path.dirname(os.path.dirname(__file__))\n" + shape.replace("\\n", "\n")
                      + "\nos._exit(0)\n" + HONEST)
    v = climb(tiny, kernel, tmp_path)
    assert v.failed_rung == "compile" and phrase in v.rung("compile").message, v.summary


def test_dumps_take_only_plain_compiler_files(tiny, tmp_path):
    """In the run phase's worker (after the compile worker wrote the real dumps): a folder where a dump file belongs and
    a sparse 3 GiB file among the dumps. Both stay behind; the kernel passes; the dumps stay small."""
    kernel = tmp_path / "dumps.py"
    kernel.write_text(HONEST + "\n\nimport os\n_honest = kernel\n\n\ndef kernel(x):\n"
                      "    if os.environ.get('TRITON_INTERPRET') == '1':\n"
                      "        job = os.path.dirname(os.path.dirname(__file__))\n"
                      "        os.makedirs(os.path.join(job, 'compiled', 'softmax_kernel.json'), exist_ok=True)\n"
                      "        with open(os.path.join(job, 'compiled', 'softmax_kernel.big.ptx'), 'wb') as f:\n"
                      "            f.truncate(3 << 30)\n"
                      "    return _honest(x)\n")
    v = climb(tiny, kernel, tmp_path)
    assert v.verdict == "pass", v.summary
    assert sum(p.stat().st_size for p in (tmp_path / "dumps").rglob("*") if p.is_file()) < 64 << 20
    assert not list((tmp_path / "dumps").rglob("*.big.ptx"))


def test_what_the_compile_phase_leaves_never_reaches_the_run_phase(tiny, tmp_path):
    """On a CPU the compile phase (the sm_90a build) and the run phase (the interpreter, where the launch gate and the
    tamper snapshot are set before the candidate's import) are fresh forks of one zygote (rungs/worker/zygote.py),
    which empties the sandbox's scratch between them, as the harness empties the job folder. A compile phase that
    plants a `triton` package in its scratch (the worker's cwd, first on `python -m`'s sys.path) and in its job
    folder, which a run phase importing Triton after it would execute before its guards, leaves nothing the run phase
    sees: the planted module would fail the run. (A one-worker climb forking both phases in one sandbox with neither
    reset, tried on 2026-12-06, failed exactly this.)"""
    kernel = tmp_path / "plant.py"
    kernel.write_text(HONEST + "\n\nimport os\n\n"
                      "if os.environ.get('TRITON_INTERPRET') != '1':\n"
                      "    for _home in ('/tmp', os.getcwd(), os.path.dirname(os.path.dirname(__file__))):\n"
                      "        try:\n"
                      "            os.makedirs(os.path.join(_home, 'triton'), exist_ok=True)\n"
                      "            with open(os.path.join(_home, 'triton', '__init__.py'), 'w') as _f:\n"
                      "                _f.write('raise SystemExit(\"the planted triton ran\")\\n')\n"
                      "        except OSError:\n"
                      "            pass\n")
    v = climb(tiny, kernel, tmp_path)
    assert v.verdict == "pass", v.summary
    assert "a fresh fork of the zygote" in v.rung("run").metrics["sandbox"]


LEAVE = """
import ctypes, os, resource, time
_FILES = ('/tmp/left.txt', '/dev/shm/left', '/dev/shm/survived',
          os.path.join(os.path.dirname(os.path.dirname(__file__)), 'left.txt'))
_KEY, _libc = 0x4B483338, ctypes.CDLL(None)
if os.environ.get('TRITON_INTERPRET') != '1':
    for _p in _FILES[:2] + _FILES[3:]:
        with open(_p, 'w') as _f:
            _f.write('x')
    os.makedirs('/tmp/deep/' + '/'.join(['d'] * 300), exist_ok=True)
    _libc.shmget(_KEY, 4096, 0o1666)  # a System V segment outlives its process
    _pid = os.fork()
    if _pid == 0:
        os.setsid()  # a session of its own, init's child (the worker's guard sees only its own children)
        if os.fork() == 0:
            while True:  # a daemon
                time.sleep(0.05)
        while True:  # and a chain: each process forks and exits at once, a new pid each time
            if os.fork():
                os._exit(0)
            if not os.path.exists('/tmp/left.txt'):  # the reset began: one that outlived it leaves a mark
                try:
                    open('/dev/shm/survived', 'w').close()
                except OSError:
                    pass
    os.waitpid(_pid, 0)
    import signal
    for _s in (signal.SIGUSR2, signal.SIGWINCH, signal.SIGTERM, signal.SIGINT, signal.SIGRTMIN + 3):
        os.kill(os.getppid(), _s)  # the zygote: left pending, each would be a bit; unhandled, its end
    if TAMPER:  # the zygote itself, as a process of the same uid may: its children would inherit each
        _z = os.getppid()
        resource.prlimit(_z, resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        resource.prlimit(_z, resource.RLIMIT_SIGPENDING, (4321, resource.getrlimit(resource.RLIMIT_SIGPENDING)[1]))
        os.sched_setaffinity(_z, {min(os.sched_getaffinity(0))})
        os.sched_setscheduler(_z, os.SCHED_IDLE, os.sched_param(0))
    time.sleep(0.3)
    LEFT = []
else:
    LEFT = [p for p in _FILES if os.path.exists(p)] + [p for p in os.listdir('/proc') if p.isdigit() and
            int(p) not in (1, os.getpid(), os.getppid())] + (['limits'] if resource.getrlimit(
            resource.RLIMIT_NOFILE)[0] == 64 or resource.getrlimit(resource.RLIMIT_SIGPENDING)[0] == 4321 else []) + (
            ['/tmp/deep'] if os.path.exists('/tmp/deep') else []) + (['shm'] if _libc.shmget(_KEY, 0, 0) >= 0 else []) + (
            ['SCHED_IDLE'] if os.sched_getscheduler(0) == os.SCHED_IDLE else []) + [
            line for line in open(f'/proc/{os.getppid()}/status') if line.startswith(('SigPnd', 'ShdPnd'))
            and int(line.split()[1], 16)]
_honest = kernel


def kernel(x):
    return torch.zeros_like(x) if LEFT else _honest(x)
"""


@pytest.mark.parametrize("tamper", [False, True], ids=["leftovers", "zygote-tampered"])
def test_a_phase_finds_nothing_of_the_phase_before_it(tiny, tmp_path, tamper):
    """The run phase's fork of the climb's zygote finds nothing of the compile phase's (red team, 2026-12-07): not a
    daemon in a session of its own, not a chain of processes each forking and exiting, not a file in /tmp, /dev/shm
    or the job folder, not a folder chain, not a System V segment, not a signal left pending in the zygote (the run
    phase computes wrongly if it finds any; a signal that ended the zygote would give it a fresh worker).
    A compile phase that changes the zygote itself (its limits, CPU set, scheduling policy: a process of the same uid
    may, and a child inherits them) leaves it unfit: the run phase gets a fresh worker, and still finds nothing."""
    kernel = tmp_path / "leave.py"
    kernel.write_text(HONEST + LEAVE.replace("TAMPER", str(tamper)))
    v = climb(tiny, kernel, tmp_path)
    assert v.verdict == "pass", v.summary
    assert ("a fresh fork of the zygote" in v.rung("run").metrics["sandbox"]) is not tamper


LEAVE_EVERY_PHASE = """
import os, time
for _p in ('/tmp/from-a.txt', '/dev/shm/from-a', os.path.join(os.path.dirname(os.path.dirname(__file__)), 'from-a')):
    with open(_p, 'w') as _f:
        _f.write('x')
_pid = os.fork()
if _pid == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(0.05)
    os._exit(0)
os.waitpid(_pid, 0)
"""
FIND_ANY = """
import os
_job = os.path.dirname(os.path.dirname(__file__))
FOUND = [p for p in ('/tmp/from-a.txt', '/dev/shm/from-a', os.path.join(_job, 'from-a')) if os.path.exists(p)] + [
    p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid(), os.getppid())]
if FOUND and os.environ.get('TRITON_INTERPRET') != '1':
    raise RuntimeError(f'the candidate before left {FOUND}')
_honest = kernel


def kernel(x):
    return torch.zeros_like(x) if FOUND else _honest(x)
"""


def test_the_next_candidate_finds_nothing_of_the_one_before(tiny, tmp_path):
    """A zygote left clean by a climb goes back to its pool, and the next candidate's phases are forks of it: a
    candidate that leaves files in /tmp, /dev/shm and its job folder and a daemon in a session of its own, in both of
    its phases, leaves nothing the next candidate finds in either of its (it fails its compile, or computes wrongly,
    if it finds any)."""
    first = tmp_path / "a"
    first.mkdir()
    (first / "leave.py").write_text(HONEST + LEAVE_EVERY_PHASE)
    before = climb(tiny, first / "leave.py", first)
    second = tmp_path / "b"
    second.mkdir()
    (second / "find.py").write_text(HONEST + FIND_ANY)
    v = climb(tiny, second / "find.py", second)
    assert v.verdict == "pass", v.summary

    def job(verdict, rung: str) -> int:  # which job of its zygote the phase was (the pool may have used it before)
        found = re.search(r"a fresh fork of the zygote, its job (\d+) ", verdict.rung(rung).metrics["sandbox"])
        assert found, verdict.rung(rung).metrics["sandbox"]
        return int(found.group(1))

    assert job(v, "compile") == job(before, "run") + 1 and job(v, "run") == job(v, "compile") + 1


def test_probes_are_not_vacuous_without_the_sandbox(tmp_path):
    """With the sandbox off, the same probes get through (and the verdict says it ran unsandboxed): the tests above
    pass because of the sandbox, not because the probes cannot succeed. A secret the candidate reads is still
    scrubbed from everything the worker hands back. (Both probes in one unsandboxed `harness check`.)"""
    outside = tmp_path / "written-outside"
    kernel = tmp_path / "leak_and_write.py"
    kernel.write_text(probes_source({"parent_environ": dict(SECRET_VALUE=SECRET, HARNESS_PID=os.getpid()),
                                     "write_outside": dict(WRITE_TARGETS=repr(str(outside)))}).replace(
        'found.append(f"the key in /proc/{pid}/environ")', 'found.append([e for e in open(f"/proc/{pid}/environ").read().split(chr(0)) if "API_KEY" in e][0])'))
    rc, verdict, err = cli_check(tmp_path, kernel, ANTHROPIC_API_KEY=SECRET, **{bwrap.UNSANDBOXED_VAR: "1"})
    assert rc == 0, (verdict, err[-2000:])
    leaked = probe_held(verdict.get("rungs", []), "parent_environ")
    assert any("[secret]" in f for f in leaked), (verdict, err[-2000:])
    assert SECRET not in json.dumps(verdict) and SECRET not in err
    assert "UNSANDBOXED" in json.dumps(verdict)
    wrote = probe_held(verdict.get("rungs", []), "write_outside")
    assert wrote and wrote[0].startswith("write_outside: wrote") and outside.exists(), (verdict, err[-2000:])


def test_kernel_names_the_source_does_not_hold_are_not_reported(tiny, tmp_path, monkeypatch):
    """A kernel named after something it read (a value not in its source) reaches no message or dump file name."""
    name = "n" + hashlib.sha256(b"not in the source").hexdigest()[:12]
    kernel = tmp_path / "renamed.py"
    kernel.write_text(HONEST.replace("def kernel(", f"softmax_kernel.fn.__name__ = 'n' + {name[1:]!r}\n"
                                     f"softmax_kernel.__name__ = softmax_kernel.fn.__name__\n\n\ndef kernel("))
    v = climb(tiny, kernel, tmp_path)
    assert name not in v.model_dump_json()
    assert not [p for p in (tmp_path / "dumps").rglob("*") if name in p.name]


def test_no_sandbox_is_refused_in_one_line(tmp_path):
    rc, verdict, err = cli_check(tmp_path, TASKS / "demos" / "softmax_3_rowwise.py", driver=False,
                                 KERNEL_HARNESS_BWRAP=str(tmp_path / "no-bwrap-here"))
    assert rc == 2, (verdict, err[-2000:])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "no OS sandbox for candidate code" in lines[0] and "--unsandboxed" in lines[0], lines


def test_check_runs_under_a_lower_memory_limit(tmp_path):
    """`ulimit -v` below the worker's own 16 GiB address-space limit (shared clusters, batch schedulers): the worker
    keeps the tighter limit instead of failing to set a higher one."""
    task = tiny_task_file(tmp_path)
    cmd = (f"ulimit -v {12 << 20} && {sys.executable} -m harness.cli check {task} "
           f"{TASKS / 'demos' / 'softmax_3_rowwise.py'} --json")
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["verdict"] == "pass"


@pytest.mark.parametrize("source, rule", [
    ("import posix\nposix.system('true')", "processes"),
    ("import _posixsubprocess", "processes"),
    ("import _io\n_io.open('/etc/passwd')", "files"),
    ("import _socket\n_socket.socket()", "network"),
    ("import numpy\nnumpy.ctypeslib.ctypes.CDLL(None)", "ctypes"),
    ("import numpy as np\nlib = np.ctypeslib", "ctypes"),
    ("b = getattr(print, '__self__')\nb.open('/etc/passwd')", "builtins"),
    ("b = print.__self__", "builtins"),
    # open() by other names: the job folder's files (tests above: the secrets are gone from it all the same)
    ("import linecache\nlinecache.getline('job.json', 1)", "files"),
    ("from zipfile import ZipFile\nZipFile('inputs-r000.pt').read('data/0')", "files"),
    ("import tokenize\ntokenize.open('job.json')", "files"),
    ("import numpy as np\nnp.lib.format.open_memmap('out.npy')", "serialization"),
    ("import logging\nh = logging.FileHandler('/tmp/x')", "files"),
    ("from torch.utils.cpp_extension import load_inline", "ctypes"),
    ("import torch\ntorch.ops.load_library('lib.so')", "ctypes"),
])
def test_screen_knows_the_modules_under_the_modules(source, rule):
    """The red-team's routes past the screen to the OS (the sandbox holds regardless; the screen says why first)."""
    import ast

    from rungs.ladder.static_checks import screen

    assert rule in [f.rule for f in screen(ast.parse(source))]


def test_agent_run_over_escapes_goes_on(tmp_path, monkeypatch):
    """A run whose model submits escape after escape (screen off): each is contained, the run finishes, and a fresh
    worker passes the honest kernel at the end."""
    from harness.agent import Agent, AgentConfig
    from harness.events import IterationFinished
    from harness.models import load_model
    from harness.store import RunStore

    task = load_task(tiny_task_file(tmp_path))
    task = task.model_copy(update={"timeout_s": 60.0})
    monkeypatch.setattr(pool, "JOB_DIR_BYTES", 64 << 20)
    kernels = {"kill": probe_source("kill_harness"), "daemon": probe_source("daemon", DAEMON_SECONDS=f"27.{os.getpid()}"),
               "fill": "from pathlib import Path\nwith open(Path(__file__).parent.parent / 'f', 'wb') as f:\n"
                       "    while True:\n        f.write(b'x' * (1 << 20))\n" + HONEST,
               "honest": HONEST}
    lines = []
    for name, source in kernels.items():
        (tmp_path / f"{name}.py").write_text(source)
        lines.append(json.dumps({"text": name, "code_file": f"{name}.py"}))
    transcript = tmp_path / "escapes.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    budgets = task.budgets.model_copy(update={"iterations": 10})
    store = RunStore.create(tmp_path / "runs", task, f"replay:{transcript}", budgets.model_dump())
    agent = Agent(task=task, model=load_model(f"replay:{transcript}"), store=store, budgets=budgets,
                  dumps_root=tmp_path / "dumps",
                  config=AgentConfig(ladder_options={"seeds": 1, "static_checks": False}))
    stop = agent.run()
    assert stop.status == "transcript_end", stop.reason
    verdicts = [e.verdict for e in store.journal.read() if isinstance(e, IterationFinished)]
    assert len(verdicts) == 4
    assert verdicts[2].failed_rung == "compile" and "job folder passed its size limit" in verdicts[2].summary
    assert verdicts[3].verdict == "pass", verdicts[3].summary
    assert _sleepers(f"27.{os.getpid()}") == []


def test_a_job_under_tmp_with_tmp_on_the_import_path_keeps_its_scratch(tmp_path, monkeypatch):
    """A script run from /tmp puts /tmp on sys.path, and a job folder may sit right under it: neither may cover the
    sandbox's private /tmp (a read-only scratch, and every other job's folder in sight)."""
    import shutil
    import tempfile

    job = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        (job / "mine").write_text("x")
        outside = Path(tempfile.mkdtemp(dir="/tmp")) / "someone-else"
        outside.write_text("secret")
        monkeypatch.syspath_prepend("/tmp")
        argv = bwrap.command(["sh", "-c", f"touch /tmp/scratch && echo wrote; cat {outside} || echo hidden"],
                             bwrap.Policy(writable=[job], chdir=Path("/tmp")))
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.split()
        assert out == ["wrote", "hidden"], out
    finally:
        shutil.rmtree(job, ignore_errors=True)
        shutil.rmtree(outside.parent, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0 or bwrap.find_bwrap() is None or bwrap.unsandboxed(),
                    reason="only root's sandbox runs the worker as another user")
def test_a_task_folder_the_sandbox_cannot_read_is_a_one_line_error(tmp_path):
    """A GPU climb's worker imports the task's input maker as the sandbox's user: a private folder (mkdtemp's 0700,
    as pytest's own) would have shown up as a PermissionError at the first bench shape, blamed on the kernel. What
    the check says is what the sandbox's user meets: each case is tried in a sandbox showing the folder too."""
    from rungs.core.errors import BadInput
    from rungs.ladder.ladder import Ladder

    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    for name in ("softmax.yaml", "softmax_ref.py", "softmax.demo.jsonl"):
        (folder / name).write_text((TASKS / name).read_text())
    task = load_task(folder / "softmax.yaml")  # loading needs no sandbox: CPU climbs never run the input maker there
    ref = folder / "softmax_ref.py"

    def refused() -> str | None:
        try:
            Ladder(task=task, kernel=TASKS / "demos" / "softmax_4_tuned.py", work_dir=tmp_path / "w",
                   device="cuda").climb()
        except BadInput as exc:
            return str(exc)
        raise AssertionError("the check let the climb start")  # (it would fail later: no GPU here)

    def opens_as_sandbox() -> bool:  # the real boundary: the sandbox a worker gets, showing the task's folder
        argv = bwrap.command([sys.executable, "-I", "-c", f"open({str(ref)!r}).read()"],
                             bwrap.Policy(readable=[folder]))
        return subprocess.run(argv, capture_output=True, timeout=60).returncode == 0

    def allowed() -> bool:
        try:
            refused()
        except AssertionError:
            return True
        return False

    assert re.search(r"softmax\.yaml:\d+: key 'inputs': .*private has mode 700: .*cannot enter it \(chmod o\+x ",
                     refused())
    assert not opens_as_sandbox()
    folder.chmod(0o711)  # entering is enough to import a file by its path
    ref.chmod(0o600)
    assert re.search(r"softmax_ref\.py has mode 600: .*cannot read it \(chmod o\+r ", refused())
    assert not opens_as_sandbox()
    ref.chmod(0o640)
    os.chown(ref, 0, bwrap.SANDBOX_GID)  # the sandbox's group may read it
    assert allowed() and opens_as_sandbox()
    ref.chmod(0o604)  # other may read, but the group's bits are the ones that count for the sandbox's group
    assert not allowed() and not opens_as_sandbox()
    os.chown(ref, 0, 0)
    assert allowed() and opens_as_sandbox()
    # a folder the sandbox never shows (it would show $HOME, the checkout or the private /tmp with it)
    why = bwrap.unreadable_in_sandbox(Path("/tmp/softmax_ref.py"))
    assert why and "never shows /tmp (the checkout, $HOME" in why  # also with the checkout itself under /tmp
    why = bwrap.unreadable_in_sandbox(Path("/softmax_ref.py"))
    assert why and "never shows / (it holds " in why


def test_a_spare_started_under_another_environment_is_not_handed_a_job(monkeypatch):
    """A waiting worker (a zygote given back by a climb, or one started ahead) runs its jobs under the environment it
    was started with: once the harness's changes, the next job takes a worker started under the new one."""
    workers = pool.WorkerPool("cpu")
    taken = None
    try:
        workers.prestart("triton", False, (), zygote=True)
        first = workers._spares[("triton", "zygote")][0]
        assert workers.take("triton", False, (), zygote=True) is first  # nothing changed: the one waiting
        workers._spares[("triton", "zygote")].append(first)
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        taken = workers.take("triton", False, (), zygote=True)
        assert taken is not first and ("OMP_NUM_THREADS", "3") in taken.env_key
        assert first.proc.poll() is not None  # ended
    finally:
        workers.stop()
        if taken is not None:
            pool._discard(taken)


def test_a_jobs_processes_are_found_through_the_children_files_as_through_a_scan(monkeypatch):
    """The memory watchdog and kill_job find a job's processes by walking /proc/<pid>/task/<tid>/children down from
    the worker (a scan of every process's stat file, four times a second a waiting job, cost 2% of a check); they
    find what the scan finds: a daemon whose parent ended (reparented to the subreaper, as the worker is), a
    grandchild, not a zombie. Without the children files the scan is used."""
    import time

    from rungs.sandbox import isolation

    tree = subprocess.Popen(["bash", "-c", "(sleep 60 &) ; (sleep 60 & sleep 60) & sleep 0 & exec sleep 60"],
                            preexec_fn=lambda: isolation._libc.prctl(isolation.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0),
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(isolation._descendants_by_scan(tree.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # `sleep 0` has ended: a zombie of the exec'd sleep, which never waits
        walked = isolation.descendants(tree.pid)
        assert walked == isolation._descendants_by_scan(tree.pid) and len(walked) == 4, walked  # a subshell, its two, the orphan
        states = {p: Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] for p in
                  map(int, Path(f"/proc/{tree.pid}/task/{tree.pid}/children").read_text().split())}
        assert "Z" in states.values(), states  # there is one to leave out
        monkeypatch.setattr(isolation, "_children", lambda pid: None)
        assert isolation.descendants(tree.pid) == walked
    finally:
        os.killpg(tree.pid, 9)
        tree.wait()


LEADER_GONE = """
import ctypes, threading, time
held = bytearray(64 << 20)  # touched: resident
for i in range(0, len(held), 4096):
    held[i] = 1
threading.Thread(target=time.sleep, args=(60,)).start()
time.sleep(0.2)
ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: this thread alone (x86-64); the other keeps the process and its memory
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the syscall number is x86-64's")
def test_a_process_whose_main_thread_exited_is_counted_and_killed(monkeypatch):
    """Red team 2026-12-07: a process whose main thread exits while another runs shows state Z and no VmRSS of its own,
    so the memory watchdog counted none of what it held and kill_job left it as a zombie it need not kill. It is
    found, its memory counted from a live thread, and killed."""
    import time

    from rungs.sandbox import isolation

    tree = subprocess.Popen(["bash", "-c", f"{sys.executable} -c '{LEADER_GONE}' & wait"],
                            preexec_fn=lambda: isolation._libc.prctl(isolation.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0),
                            start_new_session=True)
    try:
        deadline, found = time.monotonic() + 20, set()
        while time.monotonic() < deadline:
            found = {p for p in isolation.descendants(tree.pid)
                     if Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"}
            if found:
                break
            time.sleep(0.1)
        (pid,) = found  # its main thread gone, one thread left
        assert pid in isolation._descendants_by_scan(tree.pid)
        assert isolation.rss_bytes({pid}) >= 60 << 20
        isolation.kill_job(tree, None)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not isolation._zombie(pid):
            time.sleep(0.05)
        assert isolation._zombie(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(tree.pid, 9)
        tree.wait()
