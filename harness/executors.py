"""Where a round's climbs run: the plug point between the agent loop and the ladder.

    local  in this process: one climb after another, or side by side on `--parallel` CPU pools (search.on_pools)
    ray    each climb is a Ray task with one GPU (`num_gpus=1`; one CPU where the cluster has no GPU), on a local
           Ray instance (`ray.init()`) or an existing cluster (`--ray-address ADDR`)

Either way the journal, the run folder and the observer stay with the driver (the agent's process): a Ray task is
handed a `ClimbOrder` (the kernel's source, not its path, since the worker may be another host) and returns a
`ClimbReturn` (the verdict as JSON, the dumps as bytes), which the driver lands where a local climb would have
written them. The worker climbs the same Ladder, so every candidate process still runs inside the OS sandbox
(rungs/sandbox/bwrap.py) of the Ray worker's host; the verdict's sandbox note is that host's.
"""
from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence

from harness.search import Draft, on_pools
from harness.store import RunStore, iter_dumps
from rungs.sandbox import gpus as gpu_list
from rungs.sandbox.pool import WorkerPool
from rungs.core.errors import BadInput, HarnessError
from rungs.core.result import GpuUse, Verdict
from rungs.core.spec import TaskSpec

EXECUTORS = "local, ray"


class Told:
    """The run's observer, told one call at a time (climbs side by side report from their threads). A method the
    observer lacks is skipped: climb_started and iteration_recorded are optional (harness/agent.Observer)."""

    def __init__(self, observer: Any) -> None:
        self.observer = observer
        self._lock = threading.Lock()

    def __call__(self, method: str, *args: Any) -> None:
        fn = getattr(self.observer, method, None)
        if callable(fn):
            with self._lock:
                fn(*args)


@dataclass(frozen=True)
class ClimbContext:
    """What a round's climbs need of the run, and no more: the task, where kernels and dumps are, the ladder's
    options, the pools to climb on, and who hears each climb. The agent hands a fresh one to each round."""

    task: TaskSpec
    store: RunStore
    dumps_root: Path
    tell: Told
    pools: list[WorkerPool | None] = field(default_factory=lambda: [None])
    ladder_options: dict[str, Any] = field(default_factory=dict)

    def dumps(self, n: int) -> Path:
        return iter_dumps(self.dumps_root, self.store.id, n)

    def climb(self, d: Draft, pool: WorkerPool | None) -> Verdict:
        """One candidate up the ladder in this process, on `pool` (None: the device's default)."""
        from rungs.ladder.ladder import Ladder

        prev = self.dumps(d.parent) if d.parent else None
        options = {**self.ladder_options, **({"pool": pool, "device": pool.device} if pool is not None else {})}
        self.tell("climb_started", d.node)  # a view labels the rungs that follow with the climbing candidate
        t0 = time.monotonic()
        verdict = Ladder(task=self.task, kernel=self.store.iter_dir(d.node) / "kernel.py",
                         work_dir=self.store.iter_dir(d.node) / ".work", dump_dir=self.dumps(d.node),
                         previous_dump_dir=prev if prev is not None and prev.is_dir() else None,
                         baseline_cache=self.store.root / "baselines",  # eager and torch.compile timed once a run
                         on_rung=lambda name: self.tell("rung_started", name),
                         on_result=lambda r: self.tell("rung_finished", r), **options).climb()
        self.tell("iteration_finished", d.node, verdict, time.monotonic() - t0)
        return verdict


class Executor(Protocol):
    """The plug point: the verdicts of a round's distinct candidates, in order. The observer hears each climb
    (live, or as its result comes back); the agent journals the round once all are in, so budgets stay exact."""

    name: str

    def climb(self, drafts: Sequence[Draft], ctx: ClimbContext) -> list[Verdict]: ...


@dataclass(frozen=True)
class Local:
    name: str = "local"

    def climb(self, drafts: Sequence[Draft], ctx: ClimbContext) -> list[Verdict]:
        return on_pools(ctx.climb, drafts, ctx.pools)


def gpu_pools(indexes: Sequence[int], names: Sequence[str], device: str = "cuda") -> list[WorkerPool]:
    """One worker pool per listed GPU index (an index listed twice: two pools on that GPU, --parallel), each pinned
    to its device (rungs/sandbox/gpus.pinned_env): the local executor's climbs take one each. Two pools of one GPU
    climb side by side; their timings never overlap (each holds the GPU's timing lock, rungs/timing/gpu_lock.py)."""
    return [WorkerPool(device, i, names[i] if i < len(names) else "") for i in indexes]


class ExecutorFailed(HarnessError):
    """A climb could not run where the executor sent it (no sandbox on the worker's host, a lost worker): the run
    stops with the round unjournaled, so `harness resume` redoes it."""


Files = dict[str, bytes]


def pack(folder: Path | None) -> Files:
    """A folder's files by relative path (dumps and baseline timings travel this way)."""
    if folder is None or not folder.is_dir():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def unpack(files: Files, folder: Path) -> None:
    for rel, data in files.items():
        dest = folder / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            continue  # a name the worker's climb could not have written; never outside `folder`
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)


@dataclass(frozen=True)
class ClimbOrder:
    """One climb as plain data, fit to travel to another host."""

    node: int
    task: TaskSpec
    kernel: str
    """The candidate's source text."""
    task_files: dict[str, str]
    """The task file and the files its reference and inputs name, by path relative to the task's folder: written
    out where the task's own path does not exist (another host)."""
    previous_dumps: Files = field(default_factory=dict)
    baselines: Files = field(default_factory=dict)
    ladder_options: dict[str, Any] = field(default_factory=dict)
    unsandboxed: bool = False
    """The driver's --unsandboxed: the worker's environment does not carry it to another host."""


@dataclass(frozen=True)
class ClimbReturn:
    verdict: str
    """The Verdict as JSON."""
    dumps: Files
    baselines: Files
    seconds: float
    host: str
    error: str | None = None
    """Why the climb was not run at all (no OS sandbox on the worker's host)."""
    gpu: str | None = None
    """The GPU Ray gave the task (its id on the worker's host), when it gave one."""
    gpu_name: str = ""


def task_files(task: TaskSpec) -> dict[str, str]:
    names = {task.path.name, *(ref.partition(":")[0] for ref in (task.reference, task.inputs))}
    return {rel: task.resolve(rel).read_text() for rel in sorted(names) if task.resolve(rel).is_file()}


def order_for(ctx: ClimbContext, d: Draft) -> ClimbOrder:
    from rungs.sandbox import bwrap

    prev = ctx.dumps(d.parent) if d.parent else None
    return ClimbOrder(node=d.node, task=ctx.task, kernel=d.code or "", task_files=task_files(ctx.task),
                      previous_dumps=pack(prev), baselines=pack(ctx.store.root / "baselines"),
                      ladder_options=dict(ctx.ladder_options), unsandboxed=bwrap.unsandboxed())


def _task_here(order: ClimbOrder, root: Path) -> TaskSpec:
    """The order's task as this host can read it: as is where its path exists (the same host, a shared file
    system), else rebuilt from the files it carries."""
    if order.task.path.is_file():
        return order.task
    folder = root / "task"
    for rel, text in order.task_files.items():
        if ".." not in Path(rel).parts and not Path(rel).is_absolute():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
    return order.task.model_copy(update={"path": folder / order.task.path.name})


def run_order(order: ClimbOrder) -> ClimbReturn:
    """One climb, on whichever host runs it (a Ray task's body; plain Python, so it also runs in-process)."""
    from rungs.sandbox import bwrap
    from rungs.ladder.ladder import Ladder

    if order.unsandboxed:
        os.environ[bwrap.UNSANDBOXED_VAR] = "1"
    else:
        os.environ.pop(bwrap.UNSANDBOXED_VAR, None)  # a reused Ray worker must not keep an earlier run's opt-out
    host = socket.gethostname()
    try:
        bwrap.require()
    except bwrap.SandboxUnavailable as exc:
        return ClimbReturn(verdict="", dumps={}, baselines={}, seconds=0.0, host=host, error=str(exc))
    from rungs.sandbox.leftovers import scratch

    # removed by rm at the end (the job folder is the candidate's to shape), and by a later sweep if this host's
    # worker process is killed first (rungs/sandbox/leftovers.py)
    with scratch("harness-climb-") as root:
        name = f"iter-{order.node:03d}"
        kernel = root / name / "kernel.py"
        kernel.parent.mkdir(parents=True)
        kernel.write_text(order.kernel)
        dumps, prev, baselines = root / "dumps" / name, root / "previous-dumps", root / "baselines"
        unpack(order.previous_dumps, prev)
        unpack(order.baselines, baselines)
        t0 = time.monotonic()
        verdict = Ladder(task=_task_here(order, root), kernel=kernel, work_dir=kernel.parent / ".work", dump_dir=dumps,
                         previous_dump_dir=prev if order.previous_dumps else None, baseline_cache=baselines,
                         **order.ladder_options).climb()
        gpu, name = _ray_gpu()
        return ClimbReturn(verdict=verdict.model_dump_json(), dumps=pack(dumps), baselines=pack(baselines),
                           seconds=time.monotonic() - t0, host=host, gpu=gpu, gpu_name=name)


def _ray_gpu() -> tuple[str | None, str]:
    """The GPU this Ray task was given (its id on this host) and its name; (None, "") for a CPU task."""
    try:
        import ray

        ids = ray.get_gpu_ids()
    except Exception:  # noqa: BLE001 - not inside a Ray task (run_order called in-process)
        return None, ""
    if not ids:
        return None, ""
    import torch

    return str(ids[0]), torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""


def land(ctx: ClimbContext, d: Draft, back: ClimbReturn) -> Verdict:
    """A returned climb, written where a local one would have left it, and told to the observer."""
    if back.error:
        raise ExecutorFailed(f"iteration {d.node} on Ray worker host {back.host}: {back.error}")
    verdict = Verdict.model_validate_json(back.verdict)
    if back.gpu is not None and back.gpu.isdigit():  # on this host, the index as the driver's --gpus counts it
        index = gpu_list.index_of(back.gpu) if back.host == socket.gethostname() else int(back.gpu)
        verdict.gpu = GpuUse(index=index, name=back.gpu_name, seconds=round(back.seconds, 3))
    unpack(back.dumps, ctx.dumps(d.node))
    unpack(back.baselines, ctx.store.root / "baselines")
    ctx.tell("climb_started", d.node)  # a view labels the rungs that follow with the climbing candidate
    for r in verdict.rungs:  # as the ladder tells a local climb's: a skipped rung never starts
        if r.status != "skip":
            ctx.tell("rung_started", r.name)
        ctx.tell("rung_finished", r)
    ctx.tell("iteration_finished", d.node, verdict, back.seconds)
    return verdict


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BadInput("--executor ray: ray is not installed (pip install ray, on every host of the cluster)") \
            from None
    return ray


@dataclass
class Ray:
    """Climbs as Ray tasks. Ray is imported (and started, or joined) on the first round, not at construction."""

    address: str | None = None
    gpus: list[int] | None = None
    """`--gpus` on a local Ray instance: the GPUs it is started with (None: all it finds)."""
    name: str = "ray"
    _remote: Any = None

    def __post_init__(self) -> None:
        _import_ray()  # a missing ray is said before the run starts

    def climb(self, drafts: Sequence[Draft], ctx: ClimbContext) -> list[Verdict]:
        if not drafts:
            return []
        ray = _import_ray()
        remote = self._remote or self._start(ray)
        refs = [remote.remote(order_for(ctx, d)) for d in drafts]
        verdicts: list[Verdict | None] = [None] * len(drafts)
        pending = {ref: i for i, ref in enumerate(refs)}
        try:
            while pending:  # the observer hears each climb as it ends, in whatever order they end
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        back = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        first = (str(exc).strip().splitlines() or [""])[0][:300]
                        raise ExecutorFailed(f"iteration {drafts[i].node}: the Ray task failed "
                                             f"({type(exc).__name__}: {first})") from None
                    verdicts[i] = land(ctx, drafts[i], back)
        finally:
            for ref in pending:  # a stop (Ctrl-C, a failed climb) leaves no climb of the round running
                ray.cancel(ref, force=True)
        return [v for v in verdicts if v is not None]

    def _start(self, ray: Any) -> Any:
        import logging

        if not ray.is_initialized():
            # No runtime_env py_modules: a worker's sandbox hides the checkout its own `rungs` came from, so code
            # shipped into Ray's session folder would leave the checkout on the import path in the candidates' sight.
            # Every host runs the harness installed there (on one host, this checkout: Ray puts the driver's folder on
            # its workers' import path).
            try:
                with _only_gpus(self.gpus):
                    ray.init(address=self.address, include_dashboard=False, logging_level=logging.ERROR,
                             log_to_driver=False, **({"num_gpus": len(self.gpus)} if self.gpus is not None else {}))
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = f"--ray-address {self.address}" if self.address else "a local Ray instance"
                raise BadInput(f"--executor ray: could not start or join {where}: {str(exc).splitlines()[0]}") \
                    from None
        # One GPU per climb, so timings never share a device; a GPU task's worker process exits after it (max_calls=1),
        # since the harness's own CUDA context in it (references, baselines) is bound to the GPU it was given.
        gpus = ray.cluster_resources().get("GPU", 0)
        options = {"num_gpus": 1, "max_calls": 1} if gpus else {"num_cpus": 1}
        self._remote = ray.remote(**options)(run_order)
        return self._remote


@contextlib.contextmanager
def _only_gpus(indexes: list[int] | None) -> Iterator[None]:
    """A local Ray instance finds its GPUs in CUDA_VISIBLE_DEVICES as it starts: show it only the listed ones, then
    put the harness's own value back (the harness's indexes keep meaning what they meant)."""
    if indexes is None:
        yield
        return
    old = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpu_list.physical(i) for i in indexes)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = old


def parse_executor(name: str, address: str | None = None, parallel: int = 1,
                   gpus: list[int] | None = None) -> Executor:
    """`--executor`'s value (with `--ray-address`, `--parallel` and the `--gpus` given, None when not given); a bad
    one is one line naming the known ones."""
    if name == "local":
        if address:
            raise BadInput("--ray-address needs --executor ray")
        return Local()
    if name == "ray":
        if parallel > 1:
            raise BadInput("--parallel is the local executor's: Ray climbs as many candidates at once as the "
                           "cluster has GPUs (or CPUs, where it has none)")
        if address and gpus is not None:
            raise BadInput("--gpus with --ray-address: an existing cluster's GPUs are Ray's to hand out; --gpus "
                           "limits a local Ray instance")
        return Ray(address=address, gpus=gpus)
    raise BadInput(f"--executor {name!r}: not an executor; known: {EXECUTORS}")


__all__ = ["Executor", "ClimbContext", "Told", "Local", "Ray", "gpu_pools", "ClimbOrder", "ClimbReturn", "run_order", "parse_executor", "ExecutorFailed",
           "EXECUTORS"]
