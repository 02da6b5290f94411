"""The worker's compile phase: import the candidate and compile every kernel it launches, without running them,
through the DSL backend's compile capture (rungs/backends/<dsl>_worker.py; Triton on a CPU compiles ahead of time
for sm_90a through a stand-in driver), at every test shape, at the largest for every other point of a declared config
space, and at the bench shapes on inputs that hold nothing; the compiled stages are written out, and each case's
launches, which the parent compares with the run phase's.
"""
from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Callable

from rungs.backends import WorkerBackend
from rungs.core.alarm import raised_after
from rungs.core.fmt import pairs
from rungs.core.tracebacks import short_traceback as _short_traceback  # with the kernel's own line (issue 39)
from rungs.timing.inputs import hollow_bench_inputs
from rungs.worker import autotune
from rungs.worker.calls import GUARD_ERRORS
from rungs.worker.candidate import judged_state, largest_case, load_candidate, to_device, write_json
from rungs.worker.hot_path import TorchComputeRefused, light_watch
from rungs.worker.job import LAUNCH_LOG, WHERE_FILE, Job
from rungs.worker.launch_gate import start_launch_log, take_launch_log


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


def compile_cases(fn: Callable[..., Any], job: Job, job_dir: Path, launches: Launches,
                   device: str) -> dict[str, list[dict[str, Any]]]:
    """Every test shape through the compile capture (a kernel specialized per shape compiles once per
    specialization); returns each case's launch log, which the parent compares with the run phase's."""
    import torch

    launch_log: dict[str, list[dict[str, Any]]] = {}
    for case in [c for c in job.cases if c.get("first_of_shape", True)]:
        inputs = torch.load(job_dir / case["inputs"], weights_only=True)
        launches.shape = case.get("shape")
        launches.mark(False)
        start_launch_log()
        with torch.no_grad():
            fn(*[to_device(v, device) for v in inputs])
        launch_log[case["id"]] = take_launch_log()
    return launch_log


def _compile_space(entry: Callable[..., Any], job: Job, job_dir: Path, launches: Launches, device: str) -> int:
    """CONFIGS: every point but the default (which compiled at every test shape) compiles at the largest test shape;
    one past the hardware (ptxas out of registers, a launch out of shared memory: out_of_resources) is dropped and
    said (Space.dropped), as triton.autotune prunes: never timed nor chosen. Any other failure fails the compile,
    naming the point.
    A @triton.autotune compiled all its configs already (the capture warms every config up). Returns the points."""
    import torch

    space = autotune.current()
    if space is None:
        return 0
    if space.kind == "CONFIGS":
        case = largest_case(job)
        inputs = [to_device(v, device) for v in torch.load(job_dir / case["inputs"], weights_only=True)]
        launches.shape = case.get("shape")
        for k in range(1, len(space)):
            with autotune.chosen(k):
                launches.mark(False)
                try:
                    with torch.no_grad():
                        autotune.bound(entry)(*inputs)
                except GUARD_ERRORS:
                    raise
                except Exception as exc:
                    if not out_of_resources(exc):  # the point's own fault: the compile (or run) rung names it
                        exc.autotune_config = (k, space.labels[k])  # type: ignore[attr-defined]
                        raise
                    space.dropped[k] = dropped_reason(exc, launches.in_triton)  # past the hardware at this shape: dropped
                    launches.mark(False)
    return len(space)


RESOURCE_ERRORS = ("PTXASError", "OutOfResources", "CompileTimeAssertionFailure")
"""What triton.autotune prunes a config for (its _bench): ptxas refusing it (out of registers), shared memory past the
GPU's, a static_assert on the tile. With the CUDA driver's "too many resources requested for launch" (threads times
registers past the SM's), the failures of a tile too large for the hardware, not of the code."""


def out_of_resources(exc: BaseException) -> bool:
    return type(exc).__name__ in RESOURCE_ERRORS or any(
        phrase in str(exc) for phrase in ("out of resource", "too many resources requested"))


def dropped_reason(exc: BaseException, in_compiler: bool) -> str:
    """A dropped point's reason in one line: ptxas's own `fatal` line where there is one (its first lines are the
    repro command's), the message under Triton's `at LINE:COL:` and source excerpt, else the error's first line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()] or [""]
    fatal = next((ln for ln in lines if "fatal" in ln and "Ptx assembly aborted" not in ln), "")
    first = fatal or (lines[-1] if re.match(r"at \d+:\d+:", lines[0]) else lines[0])
    whose = "the compiler" if in_compiler else "the entry"
    return f"{whose}: {type(exc).__name__}: {first}"[:240]


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
        launch_log = compile_cases(autotune.bound(entry), job, job_dir, launches, device)
        points = _compile_space(entry, job, job_dir, launches, device)
    except GUARD_ERRORS:
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
    write_json(job_dir / LAUNCH_LOG.format(phase="compile"), launch_log)
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

    def stop() -> BenchBuildTimeout:
        return BenchBuildTimeout(f"the build at the bench shapes took over {limit:.0f} s (the entry's own Python at "
                                 "bench sizes); it is not needed for the verdict")

    try:
        with raised_after(limit, stop):
            return _each_bench_shape(fn, job, launches, device)
    except BenchBuildTimeout as exc:
        return str(exc)
    finally:
        launches.count = tested


BENCH_BUILD_SHARE, BENCH_BUILD_MAX_S = 0.25, 30.0
"""The bench-shape build's time: a quarter of the job's limit, at most 30 s."""


class BenchBuildTimeout(Exception):
    """Raised by the alarm in the candidate's code when the bench-shape build runs past its time."""


def _each_bench_shape(fn: Callable[..., Any], job: Job, launches: Launches, device: str) -> str | None:
    import torch

    # Hollow inputs are meant to stay untouched pages; the judged state's NaN fill of fresh memory (judged_state)
    # would write every byte of them and of the entry's own outputs: at KernelBench's sizes, 12.8 GB and 30 s of a
    # CPU for one elementwise problem, and two problems side by side (eval -j 2) killed for memory. Nothing built
    # here is judged, so the fill is off for the build and back on after it.
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        return _build_each(fn, job, launches, device)
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = fill


def _build_each(fn: Callable[..., Any], job: Job, launches: Launches, device: str) -> str | None:
    import torch

    for entry in job.dump_bench:
        label = pairs(entry["shape"])
        inputs: list[Any] = []
        try:
            inputs = hollow_bench_inputs(entry["spec"], device)
            launches.shape = {"bench": entry["id"], **entry["shape"]}
            launches.mark(False)
            # Under the judged run's torch-op and host-read refusals: torch compute at bench sizes (real work on a
            # CPU, over values that mean nothing) stops at its first op; the run phase judges it at the test shapes.
            with torch.no_grad(), light_watch(job):
                fn(*inputs)
        except TorchComputeRefused as exc:
            return f"bench shape {label}: not compiled (the entry computed with torch there: {str(exc)[:160]})"
        except (*GUARD_ERRORS, BenchBuildTimeout):
            raise
        except BaseException as exc:  # noqa: BLE001 - said in the compile rung's message, judged by the benchmark
            whose = "the compiler" if launches.in_triton else "the entry"
            return f"bench shape {label}: not compiled ({whose} raised {type(exc).__name__}: {str(exc)[:200]})"
        finally:
            inputs.clear()  # a bench shape's inputs may be large: gone before the next is made
    return None
