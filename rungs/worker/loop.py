"""The child process that runs untrusted candidate code: `python -m rungs.worker JOB_DIR`.

The parent (rungs/sandbox/pool.py) writes JOB_DIR/job.json and the inputs; this process imports the candidate,
runs the phases the job names, and writes one `phase-<name>.json` per finished phase plus the outputs as
plain tensors. It never sees a reference output: judging happens in the parent. A phase whose file is
missing died with the process (segfault, os._exit, timeout), and the parent says so.

Kept free of the harness's own imports (pydantic and friends): it must start fast and run on the GPU
machine's bare image.

Phases:
- compile: import the candidate and compile every kernel it launches, without running them, through the DSL
  backend's worker half (rungs/backends/<dsl>_worker.py; Triton on a CPU compiles ahead of time for sm_90a through
  a stand-in driver); the compiled stages are written out.
- run: call the entry on each case's inputs (through Triton's interpreter on a CPU) and save outputs; the backend's
  launch gate counts the launches and can make them no-ops (the launch-dependence probe).
- bench: time the entry on the bench cases (CUDA only).
"""
from __future__ import annotations

import faulthandler
import importlib.util
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

from rungs.worker import autotune, guards
from rungs.backends import WorkerBackend, load_worker
from rungs.worker.job import Job
from rungs.core.precision import pin_precision
from rungs.core.tracebacks import short_traceback as _short_traceback  # with the kernel's own line (issue 39)
from rungs.core.atomic import atomic_write
from rungs.core.fmt import pairs

LAUNCH_LOG = "launches-{phase}.json"
"""Per case, the launches the compile phase (the sm_90a build) and the run phase made (guards.note_launch)."""


def _write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(data, default=str))  # the parent never reads half a file


WHERE_FILE = "compile-where.txt"
"""Whether the compile phase is in Triton's compiler or in the candidate's own Python, kept in a file so the parent
can blame the right rung when the process hangs or dies (rungs/ladder/blame.py)."""
STACKS_FILE = "stacks.txt"
"""Every thread's stack, written shortly before the parent's time limit runs out: where a hung job was."""


class Launches:
    """What a backend's compile capture records of the launches the candidate makes (compile phase: compiles instead
    of launching)."""

    def __init__(self, where_file: Path | None = None) -> None:
        self.compiled: list[tuple[str, Any, Any]] = []
        """(kernel name, the backend's compiled-kernel handle, the test shape it was compiled for)"""
        self.count = 0
        self.shape: Any = None
        self.in_triton = False
        """True while the DSL compiles a launch: an error then is the compiler's, otherwise the launcher's."""
        self.where_file = where_file

    def mark(self, in_triton: bool) -> None:
        self.in_triton = in_triton
        if self.where_file is not None:
            self.where_file.write_text(f"{'triton' if in_triton else 'launcher'} {self.count}\n")


_loaded: dict[tuple[str, str], Callable[..., Any]] = {}


def load_candidate(path: str, entry: str, job: "Job | dict[str, Any] | None" = None,
                   job_dir: Path | None = None) -> Callable[..., Any]:
    """Import the candidate once per process (a second import would recompile its kernels). A KernelBench task's
    job names a `module_init` file: the class is then built per input signature with the reference's weights."""
    if (path, entry) in _loaded:
        return _loaded[(path, entry)]
    spec = importlib.util.spec_from_file_location("candidate", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = module
    spec.loader.exec_module(module)
    fn = getattr(module, entry, None)
    if fn is None:
        raise AttributeError(f"the kernel file defines no '{entry}'")
    if not isinstance(fn, type):
        autotune.discover(module, fn)  # its config space, if it declares one (rungs/worker/autotune.py)
    if isinstance(job, Job):  # the profiler's target hands the plain dict of its profile-job.json
        job = {"module_init": job.module_init, "device": job.device}
    if isinstance(fn, type) and job is not None and job.get("module_init"):  # KernelBench: class ModelNew
        from rungs.core.kernelbench_problem import ModuleEntry

        fn = ModuleEntry(fn, Path(job_dir or ".") / job["module_init"], job["device"])
    elif isinstance(fn, type):
        fn = fn()
    if not callable(fn):
        raise TypeError(f"'{entry}' is not callable")
    _loaded[(path, entry)] = fn
    return fn


def _to_device(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    return value


def _describe(value: Any) -> dict[str, Any]:
    import torch

    if type(value) is torch.Tensor:
        return {"kind": "tensor", "shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", ""),
                "device": value.device.type, "stride": list(value.stride()), "contiguous": value.is_contiguous()}
    return {"kind": type(value).__name__}


def judged_state() -> None:
    """Torch's state for the judged calls: deterministic mode, whose NaN fill of fresh memory shows unwritten
    outputs. The compile phase's calls run in it too, so that a kernel keyed on the state behaves there as judged."""
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True


def _compile_cases(fn: Callable[..., Any], job: Job, job_dir: Path, launches: Launches,
                   device: str) -> dict[str, list[dict[str, Any]]]:
    """Every test shape through the compile capture (a kernel specialized per shape compiles once per
    specialization); returns each case's launch log, which the parent compares with the run phase's."""
    import torch

    launch_log: dict[str, list[dict[str, Any]]] = {}
    for case in [c for c in job.cases if c.get("first_of_shape", True)]:
        inputs = torch.load(job_dir / case["inputs"], weights_only=True)
        launches.shape = case.get("shape")
        launches.mark(False)
        guards.start_launch_log()
        with torch.no_grad():
            fn(*[_to_device(v, device) for v in inputs])
        launch_log[case["id"]] = guards.take_launch_log()
    return launch_log


def _largest_case(job: Job) -> dict[str, Any]:
    """The test case with the most input elements (the one rungs/ladder/cases.write_inputs marks for the launch probe)."""
    return next((c for c in job.cases if c.get("probe_launches")), job.cases[-1])


def _compile_space(entry: Callable[..., Any], job: Job, job_dir: Path, launches: Launches, device: str) -> int:
    """CONFIGS: every point but the default (which compiled at every test shape) compiles at the largest test shape.
    A @triton.autotune compiled all its configs already (the capture warms every config up). Returns the points."""
    import torch

    space = autotune.current()
    if space is None:
        return 0
    if space.kind == "CONFIGS":
        case = _largest_case(job)
        inputs = [_to_device(v, device) for v in torch.load(job_dir / case["inputs"], weights_only=True)]
        launches.shape = case.get("shape")
        for k in range(1, len(space)):
            with autotune.chosen(k):
                launches.mark(False)
                try:
                    with torch.no_grad():
                        autotune.bound(entry)(*inputs)
                except guards.GUARD_ERRORS:
                    raise
                except Exception as exc:  # the compile (or run) rung names the config (main(), config_of)
                    exc.autotune_config = (k, space.labels[k])  # type: ignore[attr-defined]
                    raise
    return len(space)


def config_of(exc: BaseException) -> list[Any] | None:
    """[index, label] of the declared config whose compile raised `exc` (None: not a config's)."""
    found = getattr(exc, "autotune_config", None)
    return list(found) if isinstance(found, tuple) else None


def phase_compile(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    judged_state()
    launches = Launches(job_dir / WHERE_FILE)
    restore = backend.install_compile_capture(on_cuda, launches)
    t0 = time.perf_counter()
    entry = load_candidate(job.kernel, job.entry, job, job_dir)
    import_s = time.perf_counter() - t0

    device = "cuda" if on_cuda else "cpu"
    launcher_error, launcher_config, bench_error = None, None, None
    launch_log: dict[str, list[dict[str, Any]]] = {}
    points = 0
    try:
        launch_log = _compile_cases(autotune.bound(entry), job, job_dir, launches, device)
        points = _compile_space(entry, job, job_dir, launches, device)
    except guards.GUARD_ERRORS:
        raise
    except BaseException as exc:  # noqa: BLE001 - the candidate's own Python failed: the run rung's to report
        if launches.in_triton:
            raise  # the DSL's compiler refused the kernel: a compile failure
        launcher_error = _short_traceback(exc, job.kernel)
        launcher_config = config_of(exc)
    else:
        bench_error = _compile_bench_shapes(autotune.bound(entry), job, launches, device)
    finally:
        restore()
    _write_json(job_dir / LAUNCH_LOG.format(phase="compile"), launch_log)
    out_dir = job_dir / "compiled"
    out_dir.mkdir(exist_ok=True)
    distinct: dict[Any, tuple[str, Any, list[Any]]] = {}  # one dump per specialization, with the shapes it served
    for name, kernel, shape in launches.compiled:
        _, _, shapes = distinct.setdefault(getattr(kernel, "hash", None) or id(kernel), (name, kernel, []))
        if shape is not None and shape not in shapes:
            shapes.append(shape)
    stems: list[tuple[str, Any, list[Any]]] = []
    seen: dict[str, int] = {}
    for name, kernel, shapes in distinct.values():
        n = seen[name] = seen.get(name, -1) + 1
        stems.append((name if n == 0 else f"{name}.{n}", kernel, shapes))
    kernels = backend.write_compiled(stems, out_dir)
    space = autotune.current()
    return {"ok": True, "import_s": import_s, "compile_s": time.perf_counter() - t0 - import_s,
            "launches": launches.count, "kernels": kernels, "launcher_error": launcher_error, "config": launcher_config,
            "bench_error": bench_error,
            "autotune": {**space.describe(), "compiled": points} if space is not None and len(space) > 1 else None}


def _compile_bench_shapes(fn: Callable[..., Any], job: Job, launches: Launches, device: str) -> str | None:
    """Compile (never run) what the entry launches at each bench shape, on hollow inputs: the dumps then show the
    kernels that are timed, whose tile sizes and specializations often differ from the small test shapes'. A failure
    here is said (the benchmark rung meets it for real on a GPU), not a compile failure: the entry's Python may
    read input values, which hollow inputs do not have."""
    if not job.dump_bench:
        return None
    tested = launches.count  # what the test shapes launched: the zero-launch check is theirs
    # The entry's own Python runs here at bench sizes, which nothing else does on a CPU: a host loop over the
    # elements (which the run phase refuses) must not spend the job's time limit and turn that verdict into a
    # timeout. Past its share of the limit the build stops, and says so.
    share = BENCH_BUILD_SHARE * job.timeout_s if job.timeout_s else BENCH_BUILD_MAX_S
    limit = max(5.0, min(BENCH_BUILD_MAX_S, share))

    def stop(signum: int, frame: Any) -> None:
        raise BenchBuildTimeout(f"the build at the bench shapes took over {limit:.0f} s (the entry's own Python at "
                                "bench sizes); it is not needed for the verdict")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return _each_bench_shape(fn, job, launches, device)
    except BenchBuildTimeout as exc:
        return str(exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        launches.count = tested


BENCH_BUILD_SHARE, BENCH_BUILD_MAX_S = 0.25, 30.0
"""The bench-shape build's time: a quarter of the job's limit, at most 30 s."""


class BenchBuildTimeout(Exception):
    """Raised by the alarm in the candidate's code when the bench-shape build runs past its time."""


def _each_bench_shape(fn: Callable[..., Any], job: Job, launches: Launches, device: str) -> str | None:
    import torch

    from rungs.timing import hollow_bench_inputs

    for entry in job.dump_bench:
        label = pairs(entry["shape"])
        inputs: list[Any] = []
        try:
            inputs = hollow_bench_inputs(entry["spec"], device)
            launches.shape = {"bench": entry["id"], **entry["shape"]}
            launches.mark(False)
            # Under the judged run's torch-op and host-read refusals: torch compute at bench sizes (real work on a
            # CPU, over values that mean nothing) stops at its first op; the run phase judges it at the test shapes.
            with torch.no_grad(), guards.light_watch(job):
                fn(*inputs)
        except guards.TorchComputeRefused as exc:
            return f"bench shape {label}: not compiled (the entry computed with torch there: {str(exc)[:160]})"
        except (*guards.GUARD_ERRORS, BenchBuildTimeout):
            raise
        except BaseException as exc:  # noqa: BLE001 - said in the compile rung's message, judged by the benchmark
            whose = "the compiler" if launches.in_triton else "the entry"
            return f"bench shape {label}: not compiled ({whose} raised {type(exc).__name__}: {str(exc)[:200]})"
        finally:
            inputs.clear()  # a bench shape's inputs may be large: gone before the next is made
    return None


def phase_autotune(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    """CUDA: time every point of the declared space on the bench shapes and choose the fastest, which the run and
    bench phases then judge. The compile phase's launch records are made again with it, so that the parent compares
    the run phase's launches with those of the same point."""
    from rungs.timing import tune_space

    space = autotune.current()
    if space is None or len(space) < 2 or not on_cuda:
        return {"ok": True, "configs": []}
    entry = load_candidate(job.kernel, job.entry, job, job_dir)
    result = tune_space(entry, space, job, job_dir)
    autotune.choose(result["winner"])
    if result["winner"] != 0:
        launches = Launches()
        restore = backend.install_compile_capture(on_cuda, launches)
        try:
            launch_log = _compile_cases(autotune.bound(entry), job, job_dir, launches, "cuda")
        finally:
            restore()
        _write_json(job_dir / LAUNCH_LOG.format(phase="compile"), launch_log)
    return {"ok": True, **result}


POISON_PATTERN = 1234.5
"""What the determinism re-run fills fresh output memory with (the first run uses NaN)."""


class pattern_poison:
    """Within the block, every torch.empty* tensor starts filled with POISON_PATTERN instead of NaN, so a kernel
    whose output depends on what memory held before (an uninitialized read, or a race) changes its answer."""

    NAMES = ("empty", "empty_like", "empty_strided")

    def __enter__(self) -> "pattern_poison":
        import torch

        self.saved = {n: getattr(torch, n) for n in self.NAMES}
        self.saved_new_empty = torch.Tensor.new_empty

        def filled(make: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                t = make(*args, **kwargs)
                return t.fill_(POISON_PATTERN if t.is_floating_point() else 0x5A) if t.numel() else t
            return wrapper

        for n in self.NAMES:
            setattr(torch, n, filled(self.saved[n]))
        torch.Tensor.new_empty = filled(self.saved_new_empty)
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        for n, f in self.saved.items():
            setattr(torch, n, f)
        torch.Tensor.new_empty = self.saved_new_empty


def phase_run(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    import torch

    # Output memory is poisoned: torch.empty* returns NaN (floats) or the largest integer, so an element the
    # kernel never writes shows up in the comparison instead of holding a stale right answer.
    judged_state()
    backend.before_run(on_cuda)  # the launch gate is in already: main() puts it in before the candidate's import
    guards.set_candidate(job.kernel)
    entry = load_candidate(job.kernel, job.entry, job, job_dir)
    fn = autotune.bound(entry)  # the chosen point of a declared space (the default on a CPU)
    device = "cuda" if on_cuda else "cpu"
    cases = []
    launch_log: dict[str, list[dict[str, Any]]] = {}

    def call(inputs: list[Any], case: dict[str, Any]) -> list[Any]:
        return guards.call_entry(fn, inputs, job, on_cuda, case.get("max_output_bytes"))

    def save(outputs: list[Any], name: str) -> None:
        guards.save_outputs(outputs, job_dir / name)

    for case in job.cases:
        inputs = [_to_device(v, device) for v in torch.load(job_dir / case["inputs"], weights_only=True)]
        before = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        launches_before = guards.launch_count()
        guards.start_launch_log()
        t0 = time.perf_counter()
        try:
            outputs = call(inputs, case)
        finally:
            launch_log[case["id"]] = guards.take_launch_log()
        seconds = time.perf_counter() - t0
        changed = [i for i, (a, b) in enumerate(zip(inputs, before)) if not guards.same_bits(a, b)]
        save(outputs, f"out-{case['id']}.pt")
        record = {"id": case["id"], "seconds": seconds, "outputs": [_describe(o) for o in outputs],
                  "inputs_changed": changed, "launches": guards.launch_count() - launches_before}
        if case.get("first_of_shape") and not changed:
            # Determinism: the same inputs again, with fresh memory holding a different poison.
            with pattern_poison():
                save(call(inputs, case), f"out-{case['id']}-again.pt")
        if case.get("probe_launches") and not changed:
            # Once more with every launch a no-op, over NaN-poisoned memory: the parent fails a kernel
            # whose output still matches the reference (computed by torch, numpy or the host, not the kernel).
            # A probe that raises is reported, not forgiven: raising when the launches did nothing is how a kernel
            # that computes elsewhere would hide from the probe (the parent fails it).
            with guards.launches_skipped():
                try:
                    save(call(inputs, case), f"out-{case['id']}-nolaunch.pt")
                except guards.GUARD_ERRORS:
                    raise
                except Exception as exc:  # noqa: BLE001 - judged by the parent
                    record["probe_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        cases.append(record)
    _write_json(job_dir / LAUNCH_LOG.format(phase="run"), launch_log)
    return {"ok": True, "cases": cases, "other_configs": _run_other_points(entry, job, job_dir, on_cuda)}


def _run_other_points(entry: Callable[..., Any], job: Job, job_dir: Path, on_cuda: bool) -> dict[str, Any] | None:
    """CUDA, a declared space: every point but the chosen one on the largest test case, saved as
    out-<case>-cfg<k>.pt, so that the parent checks each point the autotune table reports (the chosen one is judged
    on every case above)."""
    import torch

    space = autotune.current()
    if not on_cuda or space is None or len(space) < 2:
        return None
    case = _largest_case(job)
    inputs = [_to_device(v, "cuda") for v in torch.load(job_dir / case["inputs"], weights_only=True)]
    files: dict[str, str] = {}
    errors: dict[str, str] = {}
    for k in range(len(space)):
        if k == autotune.choice():
            continue
        with autotune.chosen(k):
            try:
                outputs = guards.call_entry(autotune.bound(entry), inputs, job, on_cuda, case.get("max_output_bytes"))
            except guards.GUARD_ERRORS:
                raise
            except Exception as exc:  # noqa: BLE001 - this point is reported as failing, the chosen one is judged
                errors[str(k)] = f"{type(exc).__name__}: {str(exc)[:300]}"
                continue
        files[str(k)] = f"out-{case['id']}-cfg{k}.pt"
        guards.save_outputs(outputs, job_dir / files[str(k)])
    return {"case": case["id"], "files": files, "errors": errors}


def phase_bench(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    from rungs.timing import bench_entry

    fn = autotune.bound(load_candidate(job.kernel, job.entry, job, job_dir))
    cases = bench_entry(fn, job, job_dir)
    return {"ok": True, "cases": cases, **guards.after_bench(fn, job, job_dir, on_cuda, cases)}


def phase_witness(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    """Under Nsight Compute (rungs/ladder/profile.py): the bench phase's loop on one bench entry, the parent's drawn call
    profiled, the judged point of a declared config space chosen."""
    from rungs.timing import witness_entry

    entry = load_candidate(job.kernel, job.entry, job, job_dir)
    autotune.choose(int((job.witness or {}).get("config", 0)))
    autotune.freeze()
    return witness_entry(autotune.bound(entry), job)


PHASES = {"compile": phase_compile, "autotune": phase_autotune, "run": phase_run, "bench": phase_bench,
          "witness": phase_witness}


TAKEN_FILE = "taken"
"""Made when the worker takes its job: the job's time limit counts from then, not from a hand-over to a worker that
may still be importing torch."""


def main(job_dir: Path) -> int:
    (job_dir / TAKEN_FILE).touch()
    job = Job.from_json((job_dir / "job.json").read_text())
    on_cuda = job.device == "cuda"
    backend = load_worker(job.worker_module, job.dsl)
    # The bench inputs are made in a background thread while the candidate compiles and runs (H200: making them
    # after the run phase cost 1.6-2.4 s per candidate; with the thread the run phase went from 0.6 to 0.8 s).
    if "bench" in job.phases and job.prefetch:
        from rungs.timing import prefetch_inputs

        prefetch_inputs(job)
    if job.timeout_s:
        # Shortly before the parent kills this process for running past its limit, write where every thread is, so
        # the verdict can say where the candidate hung (the watchdog is a C thread: no Python thread is added).
        # The parent's clock started when it wrote job.json and handed it over, maybe while this process was still
        # importing torch: count from then.
        stacks = open(job_dir / STACKS_FILE, "w")  # noqa: SIM115 - open until the process ends
        spent = max(0.0, time.time() - (job_dir / TAKEN_FILE).stat().st_mtime)  # the limit counts from there
        lead = min(2.0, 0.1 * job.timeout_s)
        faulthandler.dump_traceback_later(max(job.timeout_s - lead - spent, 0.1), file=stacks)
    if "run" in job.phases:
        # Before the candidate's first import (on a GPU the compile phase imports it, in this same process): a name it
        # binds at import (`from cutlass.cute.runtime import from_dlpack`) is then the gated one. The compile capture
        # wraps over the gate and puts it back.
        guards.install_launch_gate(backend)
    # TF32 off unless the task asks for it: a float32 task's candidate and its reference compute in IEEE float32
    # (rungs/core/precision.py); before the candidate's import, so what it reads at import is the pinned state.
    pin_precision({str(c.get("dtype", "")) for c in [*job.cases, *job.bench]})
    guards.arm()  # before any candidate code: what the harness relies on, as it was
    for name in job.phases:
        started = time.monotonic()  # system-wide clock: the parent compares it with its own
        try:
            result = PHASES[name](job, job_dir, on_cuda, backend)
            if result.get("ok"):
                guards.check(f"after the {name} phase")
        except BaseException as exc:  # noqa: BLE001 - any failure of candidate code is a result, not a crash
            result = {"ok": False, "error": _short_traceback(exc, job.kernel), "type": type(exc).__name__,
                      "config": config_of(exc)}
        result.update(started=started, wall_s=time.monotonic() - started)
        _write_json(job_dir / f"phase-{name}.json", result)
        if not result["ok"]:
            break
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: candidate threads or atexit hooks must not change the outcome


def wait_for_job(device: str, worker_module: str, ready: str | None = None) -> None:
    """A pre-started worker: pay for Python, torch, the DSL and the CUDA context now, while the model is still
    writing the next kernel, then take one job directory from stdin and run it."""
    import torch

    load_worker(worker_module, "").preload(device)

    if device == "cuda":
        torch.empty(1, device="cuda")  # creates the context
        import rungs.timing  # noqa: F401
    # Its first call imports torch._dynamo and torch._inductor (about 1.4 s): pay that here, not in the run phase.
    torch.use_deterministic_algorithms(False)
    if ready:  # the harness hands a GPU job over only once no other worker of its pool is still starting
        Path(ready).touch()
    line = sys.stdin.readline().strip()
    if not line:  # the harness exited without a job for us
        os._exit(0)
    job_dir = Path(line)
    os.chdir(os.environ.get("TMPDIR") or job_dir)  # the scratch folder: in the sandbox, its private /tmp
    main(job_dir)

