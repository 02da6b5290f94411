"""KernelBench problem files as tasks: the task-source adapter.

A KernelBench problem (`class Model(nn.Module)`, module-level size globals, `get_inputs()`, `get_init_inputs()`)
becomes a TaskSpec whose entry is `ModelNew`:

- reference and input maker: a shim beside a copy of the file, in the harness cache (rungs/core/kernelbench_problem.py
  says why a file, not closures: the baseline process and the sandboxed worker import them by path);
- test shapes: the size globals shrunk (halved, largest first, while the model still runs on meta tensors) until
  the inputs, outputs and weights are small enough for the Triton interpreter; sizes that came out equal then
  spread apart in the order of the file's own (a kernel that masks columns with M instead of N passes when M == N);
  plus the same sizes one off (no block divides them), within the same budget; bench shape: the file's own sizes;
- roofline: FLOPs counted by torch's FlopCounterMode (matmul, convolution, attention) and bytes as each input,
  weight and output once, at the bench shape, when every op the model runs is one of those, elementwise, a
  reduction or data movement; otherwise no roofline, said plainly (`roofline_note`);
- precision (`harness eval --precision`, upstream's fp32 | bf16 | fp16): the task's dtype, to which the float
  inputs, the floating tensors of get_init_inputs() and the weights are cast, for reference and solution alike;
  its tolerance adds upstream's allclose figure for that precision to the dtype's own metrics;
- a problem file whose own code raises (importing it, get_inputs, Model) is a one-line BadInput naming the file and
  line, found by one run of the reference at the first test shape (`first_run`).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from pydantic import PrivateAttr, ValidationError

from rungs.core import seeding
from rungs.core.alarm import raised_after
from rungs.core.atomic import atomic_write
from rungs.core.errors import BadInput
from rungs.core.fmt import pairs
from rungs.core.spec import PRECISIONS, Roofline, Shapes, TaskSpec, Tolerance
from rungs.core.kernelbench_problem import (DRAWING, INIT_FILE, SEMANTICS, Problem, global_name, global_reads,
                                           input_signature, upstream_mode)

ELEMENT_BUDGET = 12_288
"""Inputs + outputs + weights, in elements, a CPU test shape may reach: seconds through the interpreter."""
SHRINK_FLOOR = 8
"""Sizes at or below this are left alone (kernel sizes, channels of three); halving stops here."""
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "var_mean", "norm", "argmax",
              "argmin", "logsumexp", "_softmax", "_log_softmax", "native_layer_norm", "native_group_norm",
              "native_batch_norm", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit",
              "linalg_vector_norm", "cumsum", "cumprod", "any", "all", "_safe_softmax", "rms_norm", "_fused_rms_norm"}
MOVEMENT = {"view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "squeeze", "unsqueeze",
            "clone", "contiguous", "slice", "select", "cat", "stack", "split", "split_with_sizes", "chunk",
            "unbind", "flatten", "unflatten", "_to_copy", "to", "copy_", "detach", "alias", "empty", "empty_like",
            "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "fill_", "zero_", "as_strided",
            "new_empty", "new_zeros", "narrow", "repeat", "lift_fresh", "pad", "constant_pad_nd", "_reshape_alias",
            "index_select", "gather", "scalar_tensor", "arange", "unfold", "unsafe_split", "unsafe_chunk",
            "split_with_sizes_copy", "unsafe_split_with_sizes",
            # the Swin models' shifted windows (roll) and relative-position bias (index); adaptive_avg_pool1d on meta
            # tensors reshapes its output in place (as_strided_)
            "roll", "index", "as_strided_"}
WINDOWS = {"avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool3d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d"}
"""Pools: a reduction over each window, read once (their bytes, not their arithmetic, bound them)."""
UNTAGGED_POINTWISE = {"hardswish", "prelu", "_prelu_kernel", "log_sigmoid_forward", "glu", "rrelu_with_noise",
                      # tagged pointwise in the torch of this machine, not in every torch the harness runs on: the
                      # activations KernelBench's models call, named so the roofline does not rest on a version's tags
                      "leaky_relu", "hardtanh", "elu", "celu", "selu", "gelu", "silu", "mish", "softplus", "hardsigmoid",
                      "threshold", "softshrink", "hardshrink", "relu", "sigmoid", "tanh", "clamp", "clamp_min",
                      "clamp_max", "where"}
"""Elementwise ops torch does not tag pointwise (levels 2 and 3 use hardswish in five problems), or did not in an
earlier version."""
COUNTED = {"mm", "addmm", "bmm", "baddbmm", "convolution", "_convolution", "conv1d", "conv2d", "conv3d",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "matmul", "linear",
           "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
           "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu"}


class KernelBenchTask(TaskSpec):
    """A TaskSpec made from a problem file; `write_module_init` gives the worker ModelNew's arguments and weights."""

    _problem: Problem = PrivateAttr()
    _notes: list[str] = PrivateAttr(default_factory=list)
    _resident: float = PrivateAttr(default=0.0)

    def resident_bytes(self) -> tuple[float, dict[str, Any]] | None:
        """The bench shape's inputs, outputs and weights in bytes (float32), from the model's run on meta tensors
        at load, roofline or none (rungs/ladder/gpu_memory.bench_bytes); None where the model does not run there."""
        return (self._resident, self.shapes.bench[0]) if self._resident and self.shapes.bench else None

    @property
    def own_distribution(self) -> bool:
        """Inputs are what the problem's get_inputs draws (torch.rand, randn, randint, ...), only the seed varies:
        the prompt says so instead of naming the task's distribution list (which has one unused entry)."""
        return True

    @property
    def notes(self) -> list[str]:
        """What the adapter could not do as asked (a problem it could not shrink, no roofline), for the user."""
        return self._notes

    @property
    def has_roofline(self) -> bool:
        return self.roofline.bytes != "0" or self.roofline.flops != "0"

    def write_module_init(self, job: Any, job_dir: Path, cases: list[Any]) -> str:
        """The worker's INIT_FILE for every test case and bench entry of the job, and a hollow entry (no weights) for
        each bench shape the compile phase only builds (Job.dump_bench); returns its name."""
        entries: dict[tuple[Any, ...], dict[str, Any]] = {}
        for case in cases:
            entry = self._problem.init_entry(case.shape, case.inputs)
            entries.setdefault(entry["signature"], entry)
        for bench in job.bench or []:  # rungs.worker.job.Job
            inputs = meta_inputs(self._problem, bench["shape"], bench["dtype"])
            entry = self._problem.init_entry(bench["shape"], inputs)
            entries.setdefault(entry["signature"], entry)
        for bench in job.dump_bench or []:  # compiled, never run: the constructor's arguments, no weights
            from rungs.timing.inputs import hollow_bench_inputs

            signature = input_signature(hollow_bench_inputs(bench["spec"], "meta"), with_dtype=True)
            entries.setdefault(signature, {"signature": signature, "hollow": True,
                                           "init_args": self._problem.init_inputs(bench["shape"])})
        job_dir.mkdir(parents=True, exist_ok=True)
        torch.save(list(entries.values()), job_dir / INIT_FILE)
        return INIT_FILE


def harness_cache() -> Path:
    """The harness's cache folder (KERNEL_HARNESS_CACHE, else ~/.cache/kernel-harness)."""
    from rungs.ladder.roofline import cache_dir

    return cache_dir()


def cache_root() -> Path:
    return harness_cache() / "kernelbench"


SIGNATURE = ("class ModelNew(nn.Module): built as Model is, ModelNew(*get_init_inputs()), with torch's generator at "
             "Model's seed; forward(*get_inputs()) returns what Model.forward returns. Parameters and buffers named as "
             "in Model receive Model's values. Both run in training mode, as upstream KernelBench runs them (a "
             "BatchNorm normalizes with the batch's statistics), with Dropout off; the size globals are set smaller "
             "for the CPU test shapes")
SHIM = '''"""Written by harness/kernelbench.py for {source} (sha256 {digest}): its input maker and reference.
The reference's mode: {semantics}."""
from pathlib import Path

from rungs.core.kernelbench_problem import Problem

problem = Problem(Path(__file__).with_name("problem.py"), precision={precision!r})


def make_inputs(shape, dtype, seed, dist, device=None):
    return problem.make_inputs(shape, dtype, seed, dist, device)


def reference(*inputs):
    return problem.reference(*inputs)


# What inspect.getsource shows (the model's prompt): the problem file itself, and its get_inputs.
reference.__wrapped__ = problem.module
make_inputs.__wrapped__ = problem.module.get_inputs
'''


def write_shim(path: Path, precision: str = "fp32") -> Path:
    """The problem copied into the cache under its content hash, with the shim beside it (its Problem at the
    precision's dtype); returns the shim."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    # The shim's own text and the precision are in the name too: a harness with a different shim, or another
    # precision, writes a folder of its own (the baselines and bench references are keyed by the shim's bytes).
    salt = SHIM.encode() + SEMANTICS.encode() + (b"" if precision == "fp32" else precision.encode())
    folder = cache_root() / f"{path.stem}-{hashlib.sha256(data + salt).hexdigest()[:12]}"
    shim = folder / "task.py"
    if not shim.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / "problem.py", data)
        atomic_write(shim, SHIM.format(source=path, digest=digest, precision=PRECISIONS[precision],
                                       semantics=SEMANTICS))
    folder.chmod(0o755)                        # the sandboxed worker (another uid) imports them for the bench inputs:
    for f in (folder / "problem.py", shim):  # a umask of 077 makes the folder private, atomic_write's temporary
        f.chmod(0o644)                         # file is private (0600)
    return shim


def meta_inputs(problem: Problem, shape: dict[str, Any], dtype: str = "float32") -> tuple[Any, ...]:
    """The shape's inputs as meta tensors: their sizes without the memory or the time."""
    with torch.device("meta"):
        inputs = problem.make_inputs(shape, torch.float32 if dtype == "tf32" else getattr(torch, dtype), 0, "normal")
    return inputs


@contextlib.contextmanager
def _on_meta(problem: Problem, shape: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], torch.nn.Module]]:
    """The inputs and the Model (in KernelBench's mode) at `shape` as meta tensors, for a block that runs it there:
    sizes without the memory or the time. Holds DRAWING (torch's generator and the problem's sizes: one user at a
    time) and the meta device for the block."""
    with DRAWING:
        with torch.device("meta"):
            inputs = problem.make_inputs(shape, torch.float32, 0, "normal")
        seeding.manual_seed(0)
        model = _model_on_meta(problem, shape)
        with torch.device("meta"), problem.running(shape):
            yield inputs, model


def _model_on_meta(problem: Problem, shape: dict[str, Any]) -> torch.nn.Module:
    """The Model at `shape` with its parameters and buffers on the meta device. Built under the meta device where
    it can be; a model whose __init__ reads a value it computed (both Swin models of level 3 take
    `[x.item() for x in torch.linspace(...)]` for their drop-path rates) is built on the CPU instead, each
    parameter and buffer moved to meta as it is registered. A layer's weight is then torch.empty's untouched pages
    until it moves, and its initialisation runs on the meta copy; what __init__ draws itself (a Parameter of
    torch.randn) is drawn on the CPU, one tensor at a time."""
    try:  # sized: a constructor that reads a size global (`torch.randn(in_features, out_features)`) sees the shape's
        with torch.device("meta"):
            args = problem.init_inputs(shape)
            with problem.sized(shape):
                return upstream_mode(problem.module.Model(*args))
    except Exception:  # noqa: BLE001 - any failure: try the CPU build; its own failure goes to the caller
        pass
    with _registered_on_meta():
        args = problem.init_inputs(shape)
        with problem.sized(shape):
            return upstream_mode(problem.module.Model(*args))


@contextlib.contextmanager
def _registered_on_meta() -> Iterator[None]:
    """nn.Module's register_parameter / register_buffer move each tensor to the meta device (what accelerate's
    init_empty_weights does). Only under DRAWING, which holds every model build of this process."""
    nn = torch.nn
    parameter, buffer = nn.Module.register_parameter, nn.Module.register_buffer

    def on_meta_parameter(self: Any, name: str, param: Any) -> None:
        if param is not None:
            param = nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        parameter(self, name, param)

    def on_meta_buffer(self: Any, name: str, tensor: Any, persistent: bool = True) -> None:
        buffer(self, name, None if tensor is None else tensor.to("meta"), persistent=persistent)

    nn.Module.register_parameter, nn.Module.register_buffer = on_meta_parameter, on_meta_buffer  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn.Module.register_parameter, nn.Module.register_buffer = parameter, buffer  # type: ignore[method-assign]


def _meta_run(problem: Problem, shape: dict[str, Any]) -> tuple[int, list[Any]] | None:
    """(elements of inputs, outputs and weights, the outputs) of the model at `shape` on meta tensors; None when the
    model cannot run at these sizes."""
    ran = _meta_counts(problem, shape)
    return None if ran is None else (ran[0] + ran[1], ran[2])


def _tensors(value: Any) -> list[torch.Tensor]:
    """Every tensor in a value, in order: a tensor, or lists and tuples of them nested any way (a model may return
    `(out, (h, c))`); anything else holds none."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _meta_counts(problem: Problem, shape: dict[str, Any]) -> tuple[int, int, list[Any]] | None:
    """(elements of inputs and outputs, elements of weights and buffers, the outputs) of the model at `shape` on
    meta tensors; None when the model cannot run at these sizes."""
    try:
        with _on_meta(problem, shape) as (inputs, model), torch.no_grad():
            out = model(*inputs)
    except Exception:  # noqa: BLE001 - these sizes break the model: not a shape to test
        return None
    outs = list(out) if isinstance(out, (tuple, list)) else [out]

    def count(values: list[Any]) -> int:
        return sum(v.numel() for v in _tensors(values))
    return count([*inputs, *outs]), count([*model.parameters(), *model.buffers()]), outs


def shrink(problem: Problem) -> tuple[dict[str, int], str]:
    """Smaller size globals for the CPU test shape, and a note saying what was done (or why nothing could be)."""
    sizes = dict(problem.defaults)
    first = _meta_run(problem, sizes)
    if first is None:
        return {}, "cannot be shrunk: the model does not run on meta tensors at its own sizes; tested at them"
    total, frozen = first[0], set()
    while total > ELEMENT_BUDGET:
        candidates = [k for k, v in sizes.items() if v > SHRINK_FLOOR and k not in frozen]
        if not candidates:
            break
        name = max(candidates, key=lambda k: sizes[k])
        trial = dict(sizes, **{name: max(SHRINK_FLOOR, sizes[name] // 2)})
        ran = _meta_run(problem, trial)
        tied = [k for k in candidates if k != name and sizes[k] == sizes[name]]
        if ran is None and tied:  # sizes the model needs equal (100_HingeLoss: batch_size, input_shape[0]): halved together
            trial.update({k: trial[name] for k in tied})
            ran = _meta_run(problem, trial)
        less = degenerate(problem, trial, ran[1]) if ran is not None else None
        if less and (held := _held_by(problem, name, sizes)):
            # it would hold its groups or heads fewer than twice: they are halved with it (a grouped convolution's
            # 16 groups kept its channels at 32 and the test at three times the element budget)
            both = dict(trial, **{o: sizes[o] // 2 for o in held})
            halved = _meta_run(problem, both)
            if halved is not None and halved[0] < total and not degenerate(problem, both, halved[1]):
                trial, ran, less = both, halved, None
        # breaks the model, changes nothing the model holds, or tests less than the file's sizes do (halving further
        # only tests less again)
        if ran is None or ran[0] >= total or less:
            frozen.add(name)
            continue
        sizes, total = trial, ran[0]
    changed = {k: v for k, v in sizes.items() if v != problem.defaults[k]}
    if not changed:
        return {}, (f"cannot be shrunk: no size global makes it smaller ({total} elements); tested at its own sizes"
                    if total > ELEMENT_BUDGET else "")
    note = "" if total <= ELEMENT_BUDGET else f"shrunk only to {total} elements (the CPU interpreter will be slow)"
    return changed, note


def _fits(problem: Problem, shape: dict[str, int], limit: int, weights: float | None = None) -> bool:
    """Whether the model runs at `shape` within `limit` elements of inputs, outputs and weights (given `weights`: of
    inputs and outputs, its weights within `weights` apart, as a long shape's are) and tests no less than the file's
    sizes do (degenerate)."""
    ran = _meta_counts(problem, shape)
    if ran is None:
        return False
    io, held, outs = ran
    within = io + held <= limit if weights is None else io <= limit and held <= weights
    return within and degenerate(problem, shape, outs) is None


def degenerate(problem: Problem, shape: dict[str, int], outs: list[Any]) -> str | None:
    """Why sizes `shape` (with outputs `outs`, on meta tensors) would test less than the file's own sizes do, or None.
    A red team (2026-12-05) passed two wrong kernels at shrunk sizes: GroupNorm's 64 channels halved onto its 8
    groups (one channel a group: InstanceNorm passed as GroupNorm), and an 11-wide average pool with stride 11 over 12
    and 13 columns (one window: a kernel that ignored the stride passed). So a size global that held another size
    the model is built with (get_init_inputs' groups, kernel sizes, heads) a whole number of times, twice or more,
    and must (the model refuses it one above), still holds it twice or more (channels per group, a head's
    dimension), and an output
    dimension longer than one at the file's sizes stays longer than one."""
    full = _full_run(problem)
    sizes = {**problem.defaults, **shape}
    for name, value in shape.items():
        for other in _multiple_of(problem, name):
            if value < 2 * sizes[other] and _must_divide(problem, name, other):
                return (f"{name} {value} holds {other} ({sizes[other]}) fewer than twice (at the file's sizes "
                        f"{problem.defaults[name] // problem.defaults[other]} times)")
    if full is not None and len(full) == len(outs):
        for i, (a, b) in enumerate(zip(full, outs)):
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim():
                for d, (n, m) in enumerate(zip(a.shape, b.shape)):
                    if n > 1 and m <= 1:
                        return f"output {i}'s dimension {d} is {m} (it is {n} at the file's sizes)"
    return None


def _memo(problem: Problem, key: Any, compute: Callable[[], Any]) -> Any:
    """A fact of the problem file alone, computed once per Problem: the shrink asks at every trial size."""
    memo = problem.__dict__.setdefault("_shrink_memo", {})
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _built(problem: Problem) -> frozenset[str]:
    """The sizes the model is built with: those whose global get_init_inputs reads (each element of a tuple it
    reads)."""
    def names() -> frozenset[str]:
        read = global_reads(problem.module, "get_init_inputs")
        return frozenset(k for k in problem.defaults if global_name(k) in read)

    return _memo(problem, "built", names)


def _multiple_of(problem: Problem, name: str) -> list[str]:
    """The sizes the model is built with (any, not only the small ones: 16 heads halved with a 1024 embedding down to
    16 and 16 left a head dimension of one, where 1/sqrt(d) is 1 and an attention without its scale passed, red team
    2026-12-06) that `name` holds a whole number of times, twice or more, at the file's sizes: those it may have to
    be a multiple of (_must_divide says, at a cost of meta runs)."""
    was, built = problem.defaults[name], _built(problem)
    return [o for o, g in problem.defaults.items()  # in the file's order
            if o in built and o != name and g >= 2 and was % g == 0 and was // g >= 2]


def _held_by(problem: Problem, name: str, sizes: dict[str, int]) -> list[str]:
    """The sizes the model is built with that `name` must be a multiple of (at least twice in the file) and that can
    be halved at `sizes`."""
    return [o for o in _multiple_of(problem, name) if sizes[o] >= 2 and sizes[o] % 2 == 0
            and _must_divide(problem, name, o)]


def _must_divide(problem: Problem, name: str, other: str) -> bool:
    """Whether `name` must be a multiple of `other` (GroupNorm's channels of its groups, a grouped convolution's, an
    embedding of its heads): the model refuses it one above the file's size and half an `other` above, and takes it
    one `other` above; unlike a size merely larger than a kernel's (taken one above), one that must equal another
    (nn.Linear's in_features and the input's width: refused both ways), or a multiple of another by chance (a
    grouped convolution's 512 channels out are two of its 256 in, and a multiple of its 16 groups is all it needs:
    taken 128 above)."""
    was, g = problem.defaults[name], problem.defaults[other]
    refuses_one_more = _memo(problem, ("one_more", name),
                             lambda: _meta_run(problem, {**problem.defaults, name: was + 1}) is None)

    def divides() -> bool:
        return ((g < 4 or _meta_run(problem, {**problem.defaults, name: was + g // 2}) is None)
                and _meta_run(problem, {**problem.defaults, name: was + g}) is not None)

    return refuses_one_more and _memo(problem, ("must_divide", name, other), divides)


def _full_run(problem: Problem) -> list[Any] | None:
    """The outputs at the file's own sizes, on meta tensors."""
    def outs() -> list[Any] | None:
        ran = _meta_run(problem, dict(problem.defaults))
        return ran[1] if ran is not None else None

    return _memo(problem, "full_outs", outs)


def dimensions(problem: Problem) -> list[str]:
    """The size globals a kernel tiles: those above SHRINK_FLOOR in the file (not kernel sizes or channels of 3)."""
    return [k for k, v in problem.defaults.items() if v > SHRINK_FLOOR]


def spread(problem: Problem, sizes: dict[str, int], limit: int) -> dict[str, int]:
    """`sizes` with the dimensions that are equal made distinct, ordered as the file orders them (the smaller
    there, the smaller here; ties in file order), as long as the model runs and the elements stay within `limit`.
    Halving the largest first makes every dimension equal (64 64 64), where a kernel that swaps two of them
    passes and a failure cannot say which one is wrong."""
    dims = dimensions(problem)
    out = dict(sizes)
    for value in sorted({out[k] for k in dims}, reverse=True):
        group = sorted((k for k in dims if out[k] == value), key=lambda k: problem.defaults[k])  # stable: file order
        if len(group) < 2:
            continue
        others = {out[k] for k in dims if k not in group}
        n = len(group)
        layouts = []
        for step in (max(1, value // 4), max(1, value // 8)):
            layouts.append([value + step * i - step * (n // 2) for i in range(n)])  # around the value
            layouts.append([value - step * (n - 1 - i) for i in range(n)])           # below it: fewer elements
        for layout in layouts:
            if min(layout) < 1 or others & set(layout):
                continue
            trial = {**out, **dict(zip(group, layout))}
            if _fits(problem, trial, limit):
                out = trial
                break
        else:
            out = _spread_one_by_one(problem, out, group, dims, limit)
    return out


def _spread_one_by_one(problem: Problem, sizes: dict[str, int], group: list[str], dims: list[str],
                       limit: int) -> dict[str, int]:
    """`group`'s equal sizes made distinct one at a time, where no layout of the whole group runs: a depthwise
    convolution's channels in and out must stay equal, so every layout failed and KernelBench's 84 was tested at
    batch = channels = height = width = 8 alone, where a kernel that swapped height with width and batch with
    channels passed (red team, 2026-12-05). Sizes the model is built with that the file makes equal (those channels
    in and out) move together, so the test is of the file's model (a channel multiplier of three let that kernel
    pass again); each unit but the first tries a few sizes near its own, smaller first."""
    built = _built(problem)
    units: list[list[str]] = []
    for k in group:
        tie = next((u for u in units if k in built and u[0] in built
                    and problem.defaults[u[0]] == problem.defaults[k]), None)
        tie.append(k) if tie is not None else units.append([k])
    out = dict(sizes)
    value = out[group[0]]
    moved: set[str] = set()
    for unit in units[1:]:
        if moved & set(unit):
            continue
        # alone, else with the later sizes the file gives the same value: a size the model needs equal to one it is
        # not built with (nn.Linear's in_features and the input's `input_shape[0]`) can only move with it, and left
        # where it was, in_features, out_features and the input's width stayed all 64, where a linear that took one
        # for the other passed (red team, 2026-12-06)
        partners = [k for u in units[units.index(unit) + 1:] for k in u
                    if problem.defaults[k] == problem.defaults[unit[0]]]
        for together in ([unit, unit + partners] if partners else [unit]):
            taken = {out[d] for d in dims if d not in together}
            found = None
            for step in (-2, 2, -1, 1, -3, 3, -4, 4, value, 2 * value):
                v = value + step
                if v < 1 or v in taken:
                    continue
                trial = {**out, **{k: v for k in together}}
                if _fits(problem, trial, limit):
                    found = trial
                    break
            if found is not None:
                out = found
                moved.update(together)
                break
    return out


def awkward(problem: Problem, small: dict[str, int], limit: int = ELEMENT_BUDGET) -> dict[str, int] | None:
    """The test sizes with every dimension one off (plus one, else minus one where plus one holds more than `limit`
    elements; each alone where the model refuses some): sizes no block divides. None where the model runs at no
    such sizes or its inputs cannot tell them from the first shape's (the worker picks ModelNew's instance by its
    inputs)."""
    dims = [k for k in dimensions(problem) if k in small]
    if not dims:
        return None

    def distinct(trial: dict[str, int]) -> bool:
        # as distinct as the first shape's: sizes the model needs equal (out_channels and bias_shape[0]) stay equal
        return len({trial[k] for k in dims}) == len({small[k] for k in dims})

    found = None
    for step in (1, -1):
        trial = {**small, **{k: small[k] + step for k in dims}}
        if distinct(trial) and _fits(problem, trial, limit):
            found = trial
            break
    if found is None:  # one dimension at a time: those the model takes one off
        trial = dict(small)
        for k in dims:
            for step in (1, -1):
                one = {**trial, k: small[k] + step}
                if distinct(one) and _fits(problem, one, limit):
                    trial = one
                    break
        found = trial if trial != small else None
    if found is None:
        return None
    a = input_signature(meta_inputs(problem, small), with_dtype=False)
    b = input_signature(meta_inputs(problem, found), with_dtype=False)
    return found if a != b else None


LONG_SIZES = (2561, 1281, 641, 321)
"""A long test shape's length along its dimension, the longest that fits LONG_ELEMENTS: each past two blocks of
1024, 512, 256 or 128 and odd, so a loop over blocks runs three times or more and ends on a partial block."""
LEADING_LONG = 321
"""A long shape's length along a dimension that leads every input it sizes (a batch, a matrix's rows): one is
usually the grid, one program a row or a tile, and the interpreter takes about 5 ms a program (2561 rows of a
softmax: 12.7 s a case, 0.4 s at 8 x 2561); past two blocks of 128 and past a persistent kernel's 132 programs."""
LONG_ELEMENTS = 32_768
"""Inputs + outputs, in elements, a long test shape may reach (the other dimensions held small)."""
LONG_WEIGHTS = 4 * LONG_ELEMENTS
"""Weights + buffers, in elements, a long test shape may reach, this many for each size gone long together. Apart
from LONG_ELEMENTS: sizes a Linear is built with that the file makes equal (in_features = out_features = 8192,
KernelBench level 2's gemms) go long together, and their weight grows as the square: within one budget of 32768 they
reached 177, under a block of 256 (one K block passed); a weight costs the interpreter a tile loaded per program, not
a program, so 321 x 321 is cheap."""
LONG_WEIGHTS_GROWN = 3_000_000
"""The most a size alone may grow the weights to, as it grows (12 MB of float32): K at 321 beside an out_features of
8192 the file pins (2.6M), not at 2561 (21M: a weight file of 84 MB a case, seconds of interpreted matmul)."""
LONG_OTHERS = (8, 4, 2)
"""The sizes tried for the other dimensions of a long shape, largest first, where their shrunk sizes do not fit."""


def long_shapes(problem: Problem, main: dict[str, int], others: list[dict[str, int]],
                limit: int = LONG_ELEMENTS) -> list[dict[str, int]]:
    """A shape for each dimension the shrink made short, long along it and small along the others. At the shrunk
    sizes (8-96) one block covers a dimension, so a red team (2026-12-06) passed kernels on the CPU that were wrong
    at any real size: a matmul with no loop over K, an attention without the online softmax's rescale, a causal mask
    by the index within a block, a softmax and a cumsum that never carried past their first block. The length is the
    longest of LONG_SIZES that fits `limit` (at most the file's own size), else the longest that fits, at least
    half again the shrunk size; the other sizes the inputs are drawn with (dimensions, and a batch of 8 the shrink
    left alone) drop to LONG_OTHERS where their shrunk ones do not fit. Sizes the file gives the same value go long
    together where the model needs them equal (nn.Linear's in_features and the input's width) or is built with
    both (a depthwise convolution's channels in and out). A long shape whose
    inputs cannot be told from another shape's is left out (the worker picks ModelNew's instance by its inputs)."""
    dims = [k for k in dimensions(problem) if k in main]
    built = _built(problem)
    sizes = {**problem.defaults, **main}
    # a size the model is built with that the shrink left at the file's value (an 11-wide pool's kernel, whose
    # stride it is) stays: lowered, the test would be of another model
    lowered = [k for k in problem.defaults if (k in dims and not (k in built and main[k] == problem.defaults[k]))
               or (k not in built and sizes[k] > 2)]
    # the worker keeps one ModelNew a distinct input signature: the test shapes' and the file's own are taken
    seen = {input_signature(meta_inputs(problem, s), with_dtype=False) for s in [main, *others, problem.defaults]}
    at_main = _meta_counts(problem, {**problem.defaults, **main})
    main_weights = at_main[1] if at_main else 0
    out: list[dict[str, int]] = []
    covered: set[str] = set()
    for d in dims:
        was, short = problem.defaults[d], main[d]
        low = short + short // 2  # half again the shrunk size at least: else not worth its cases
        if was < low or d in covered:  # covered: gone long already, with a size the file makes equal to it
            continue
        partners = [k for k in dims if k != d and problem.defaults[k] == was]
        # sizes the model is built with that the file makes equal go long together, one alone only where they
        # cannot (a depthwise convolution's channels in and out: 4 in and 128 out ran, a grouped convolution,
        # another model)
        tied = [k for k in partners if d in built and k in built]
        tries = [[d, *tied], [d, *partners]] if partners and tied != partners else [[d, *tied]]
        if tied:  # alone last, where its partners cannot move (a bias shaped `(out_features,)` by the file: level
            tries.append([d])  # 2's 76_Gemm_Add_ReLU had no long in_features, and one K block of 32 passed)
        high = min(was, LEADING_LONG if _leads(problem, main, d) else LONG_SIZES[0])
        best: tuple[int, dict[str, int], Any, list[str]] | None = None
        for other in (None, *LONG_OTHERS):
            small = {k: sizes[k] if other is None else min(sizes[k], other) for k in lowered if k != d}
            for together in tries:
                def at(n: int) -> dict[str, int]:
                    return {**main, **small, **{k: n for k in together}}  # noqa: B023 - used at once
                def fits(shape: dict[str, int]) -> bool:  # weights grow with each size gone long together,
                    # or as the size alone does (K long beside an N of 8192 the file pins: the weight grows as K)
                    grown = main_weights * shape[d] / max(1, short)  # noqa: B023
                    cap = max(LONG_WEIGHTS * len(together), min(grown, LONG_WEIGHTS_GROWN))  # noqa: B023
                    return _fits(problem, shape, limit, cap)  # noqa: B023
                length = _longest(at, low, high, fits)
                if length:  # the first way of going long that runs; the longest over the other sizes' tries
                    # whose inputs can be told from every shape's so far (a size only the model's constructor
                    # reads, a Linear's out_features, leaves the inputs as they were: the other sizes must differ)
                    shape = at(length)
                    sig = input_signature(meta_inputs(problem, shape), with_dtype=False)
                    if sig not in seen and (best is None or length > best[0]):
                        best = (length, shape, sig, together)
                    break
            if best is not None and best[0] >= high - 1:  # as long as it may be: the other sizes need not drop
                break
        if best is not None:
            seen.add(best[2])
            covered.update(best[3])
            out.append(best[1])
    return out


def _leads(problem: Problem, main: dict[str, int], name: str) -> bool:
    """Whether size `name` is the first dimension of every input tensor it sizes (and sizes one) and of every output
    it sizes (and sizes one: a sum over the rows reduces them, and its kernel loops over them): the inputs and
    outputs at `main` beside those with it one longer."""
    def tensors(shape: dict[str, int]) -> list[tuple[int, ...]]:
        ran = _meta_run(problem, {**problem.defaults, **shape})
        if ran is None:
            raise ValueError("the model does not run")
        # () between the inputs and the outputs: each side must be led by it
        return ([tuple(t.shape) for t in _tensors(meta_inputs(problem, shape))] + [()]
                + [tuple(t.shape) for t in _tensors(ran[1])])

    try:
        a, b = tensors(main), tensors({**main, name: main[name] + 1})
    except Exception:  # noqa: BLE001 - get_inputs or the model refuses the size: judged not leading
        return False
    if len(a) != len(b):
        return False
    split = a.index(())
    moved_in, moved_out = ([i for x, y in zip(a[lo:hi], b[lo:hi]) if len(x) == len(y)
                            for i, (m, n) in enumerate(zip(x, y)) if m != n]
                           for lo, hi in ((0, split), (split + 1, len(a))))
    return set(moved_in) == {0} and set(moved_out) == {0}


def _longest(at: Callable[[int], dict[str, int]], low: int, high: int,
             fits: Callable[[dict[str, int]], bool]) -> int | None:
    """The first of LONG_SIZES (or the file's size, where smaller: one under it first where it is even, so the last
    block is a partial one, a 2048 split in blocks of 128 or 256 being whole) in [low, high] at which the model runs
    and `fits`, else the longest odd length there that does (found by halving the range: the elements grow with
    it), else None."""
    if low > high:
        return None
    for n in sorted({min(high, n) for n in LONG_SIZES}, reverse=True):
        for m in ((n - 1, n) if n % 2 == 0 else (n,)):
            if m >= low and fits(at(m)):
                return m
    lo, hi = low, min(high, LONG_SIZES[-1])  # lo untested; LONG_SIZES' last did not fit
    if not fits(at(lo)):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(at(mid)) else (lo, mid)
    if lo % 2 == 0 and lo - 1 >= low and fits(at(lo - 1)):
        return lo - 1
    return lo


def test_shapes(problem: Problem) -> tuple[list[dict[str, int]], list[dict[str, int]], str]:
    """The CPU test shapes, the long shapes (long_shapes) and a note for the user (what could not be done): the
    shrunk sizes with equal dimensions spread apart, then the same one off. Each shape names every dimension (and
    any other size that changed); a problem with none is tested at its own sizes.

    The shrink asks meta tensors, which check shapes, not values: a tuple's element halved alone let a cross entropy
    written `input_shape = (4096,)` beside `randint(0, num_classes, ...)` draw targets past its classes (a red team's
    file, 2026-12-06). So each shape also runs once on real tensors; where the first does not, the shapes are chosen
    again without the tuples' elements (as before they counted), and a one-off shape that does not is left out."""
    shapes, long, note = _test_shapes(problem)
    if not _runs_for_real(problem, shapes[0]):
        elements = {k: v for k, v in problem.defaults.items() if global_name(k) != k}
        if elements:
            saved = problem.defaults
            problem.defaults = {k: v for k, v in saved.items() if k not in elements}
            try:
                again, again_long, again_note = _test_shapes(problem)
            finally:
                problem.defaults = saved
            if _runs_for_real(problem, again[0]):
                shapes, long, note = again, again_long, again_note
    return (shapes[:1] + [s for s in shapes[1:] if _runs_for_real(problem, s)],
            [s for s in long if _runs_for_real(problem, s)], note)


REAL_RUN_ELEMENTS = 1 << 22
"""Inputs + outputs + weights, in elements, up to which a chosen test shape is also run on real tensors at load (16 MB
in float32: the shrunk shapes of level 1 and 2 are far below it)."""


def _runs_for_real(problem: Problem, shape: dict[str, int]) -> bool:
    """Whether the model runs at `shape` on real CPU tensors (float32, seed 0). A shape over REAL_RUN_ELEMENTS is not
    tried (the file's own sizes may be GBs, a level-3 model's weights hundreds of MB: host_memory_problem and
    first_run judge those), and counts as running."""
    sizes = {**problem.defaults, **shape}
    ran = _meta_run(problem, sizes)
    if sizes == problem.defaults or ran is None or ran[0] > REAL_RUN_ELEMENTS:
        return True
    try:
        inputs = problem.make_inputs(shape, torch.float32, 0, "normal")
        with torch.no_grad(), problem.running(shape):
            problem.model(shape)(*inputs)
    except Exception:  # noqa: BLE001 - any failure: not a shape to test at
        return False
    return True


def _test_shapes(problem: Problem) -> tuple[list[dict[str, int]], list[dict[str, int]], str]:
    small, note = shrink(problem)
    sizes = {**problem.defaults, **small}
    first = _meta_run(problem, sizes)
    limit = max(ELEMENT_BUDGET, first[0]) if first is not None else ELEMENT_BUDGET  # shrunk only so far: no larger
    if first is not None:
        sizes = spread(problem, sizes, limit)
    keys = [k for k in problem.defaults if k in dimensions(problem) or sizes[k] != problem.defaults[k]]
    if not keys or first is None:  # nothing to shrink or spread: the file's own sizes
        return [dict(problem.defaults)], [], note
    main = {k: sizes[k] for k in keys}
    odd = awkward(problem, main, limit)
    return [main] + ([odd] if odd is not None else []), long_shapes(problem, main, [odd] if odd else []), note


def _op_names(problem: Problem, shape: dict[str, Any]) -> set[str]:
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.add(func.overloadpacket.__name__ if torch.Tag.pointwise not in func.tags else "<pointwise>")
            return func(*args, **(kwargs or {}))

    with _on_meta(problem, shape) as (inputs, model), torch.no_grad(), Record():
        model(*inputs)
    return seen


def roofline_of(problem: Problem, bench: dict[str, Any]) -> tuple[Roofline, str]:
    """The roofline at the bench shape, or none and why."""
    from torch.utils.flop_counter import FlopCounterMode

    try:
        ops = _op_names(problem, bench)
    except Exception as exc:  # noqa: BLE001 - an op with no meta kernel: we cannot see what it runs
        return Roofline(), f"no roofline: the model does not run on meta tensors ({type(exc).__name__})"
    unknown = sorted(ops - REDUCTIONS - WINDOWS - UNTAGGED_POINTWISE - MOVEMENT - COUNTED - {"<pointwise>"})
    if unknown:
        return Roofline(), f"no roofline: {', '.join(unknown[:3])} is not a matmul, convolution, elementwise op, reduction or pool"
    counter = FlopCounterMode(display=False)
    with _on_meta(problem, bench) as (inputs, model), torch.no_grad(), counter:
        out = model(*inputs)
    tensors = _tensors([*inputs, out, *model.parameters(), *model.buffers()])
    nbytes = sum(v.numel() * v.element_size() for v in tensors)
    flops = int(counter.get_total_flops())
    unit = "matmul" if flops else "fp32"
    # A constant, not a formula of the sizes: the roofline is judged at the bench shape only (the file's own).
    return Roofline(flops=str(flops), bytes=str(nbytes), unit=unit, target=0.9), ""


KERNELBENCH_TOLERANCE = {"fp32": 1e-4, "bf16": 1e-2, "fp16": 1e-2}
"""atol and rtol of KernelBench's allclose check per precision: upstream's get_tolerance_for_precision
(src/kernelbench/eval.py, from torchbench's figures; fp32 was 1e-2 in KernelBench v0 and v0.1)."""


def tiny_output_note(outs: list[torch.Tensor], precision: str = "fp32") -> str:
    """A note when every output of the reference (`first_run`'s) is below KernelBench's absolute tolerance for the
    precision: there, zeros pass its allclose check (a known weakness); the relative metrics of the correctness rung
    fail them."""
    atol = KERNELBENCH_TOLERANCE[precision]
    # floating outputs only: a mask (`x > 0`) has no magnitude (and no abs), an index none that a tolerance meets
    largest = max((float(o.abs().max()) for o in outs if o.numel() and o.is_floating_point()), default=None)
    if largest is not None and largest < atol:
        return (f"outputs are tiny next to the tolerance (largest |output| {largest:.2g} < KernelBench's atol "
                f"{atol:g}): zeros would pass an allclose check; the relative metrics here fail them")
    return ""


def _line_in(exc: BaseException, copy: Path) -> int | None:
    """The line of the innermost frame of `exc`'s traceback that runs in `copy` (the problem file as imported)."""
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == copy.resolve():
        return exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == copy.resolve()]
    return frames[-1].lineno if frames else None


@contextlib.contextmanager
def blamed(path: Path, copy: Path, what: str) -> Iterator[None]:
    """The problem file's own code run within the block: whatever it raises becomes a one-line BadInput naming the
    file, the line (of `copy`, the cached copy that ran, which is line for line the user's file) and `what` ran.
    That includes SystemExit (`sys.exit()` in get_inputs ended the eval with exit 1 and no word, red team 2026-12-05)
    and a KeyboardInterrupt the code raised itself; a Ctrl-C pressed meanwhile still stops the eval."""
    with ctrl_c_watch() as pressed:
        try:
            yield
        except BadInput:
            raise
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the user's to fix: one line
            if isinstance(exc, KeyboardInterrupt) and pressed():
                raise
            line = _line_in(exc, copy)
            words = str(exc).strip().splitlines()
            if isinstance(exc, SystemExit):
                words = [f"exit code {exc.code}"]
            raise BadInput(f"{path}{f':{line}' if line else ''}: {what} raised {type(exc).__name__}"
                           f"{': ' + words[0][:300] if words else ''}") from None


@contextlib.contextmanager
def ctrl_c_watch() -> Iterator[Callable[[], bool]]:
    """Within the block, whether a KeyboardInterrupt came from a Ctrl-C (SIGINT) or from code that raised it: the
    returned function says whether SIGINT arrived. Where SIGINT is ignored (a `-j N` process: the parent stops them)
    or the block is not on the main thread, no Ctrl-C can raise there, so it says False."""
    import signal
    import threading

    pressed = [False]
    try:
        previous = signal.getsignal(signal.SIGINT)
    except ValueError:  # pragma: no cover - no signals here
        previous = signal.SIG_IGN
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield lambda: pressed[0]
        return

    def on_ctrl_c(signum: int, frame: Any) -> None:
        pressed[0] = True
        previous(signum, frame)

    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield lambda: pressed[0]
    finally:
        signal.signal(signal.SIGINT, previous)


HOST_SHARE = 0.5
"""The part of this machine's available memory the float64 reference at a test shape may take (its inputs, outputs and
weights, twice over for what the forward makes on the way)."""


def host_memory_problem(problem: Problem, shape: dict[str, Any]) -> str | None:
    """Why the problem cannot be tested at `shape`, in words, or None: its float64 reference does not fit this
    process's memory, or its test cases the sandbox's job folder. A problem whose sizes no global shrinks is tested at
    its own (KernelBench's 100_HingeLoss was, before its tuple's element counted as a size): its float64 reference
    then took 17 GB on a 24 GB machine, and the harness was killed for memory; on a GPU host, its 4 GB test cases
    filled the job folder. Counted on meta tensors, before anything is allocated."""
    ran = _meta_run(problem, shape)
    if ran is None:
        return None  # the first run itself says what is wrong
    need = 2 * 8 * ran[0]  # float64, twice over
    available = _available_bytes()
    if available is not None and need > HOST_SHARE * available:
        return (f"cannot be tested on this machine: no size global makes it smaller, and at its own sizes "
                f"({pairs(shape)}) its float64 reference needs about {need / 1e9:.1f} GB of host memory, "
                f"{available / 1e9:.1f} GB available (run it where the host has more)")
    # The test cases travel to the sandboxed worker as files (only bench shapes are drawn on the GPU from a seed):
    # past the job folder's limit the worker was killed "writing without bound", blamed on the candidate.
    from rungs.sandbox.pool import JOB_DIR_BYTES

    files = 8 * ran[0] * KernelBenchTask.model_fields["seeds"].default  # each case's inputs and outputs (int64 at most)
    if files > JOB_DIR_BYTES // 2:
        return (f"cannot be tested: no size global makes it small enough, and at its test sizes ({pairs(shape)}) its "
                f"test cases need up to {files / 1e9:.1f} GB of files in the sandbox's job folder, over half its "
                f"{JOB_DIR_BYTES / 1e9:.1f} GB limit")
    return None


def _available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def first_run(problem: Problem, path: Path, shape: dict[str, Any]) -> list[torch.Tensor]:
    """The reference once at the first test shape, in float64 on the CPU, before any case is made, each step of the
    file's own on its own: a `get_inputs` that raises is a BadInput naming the file, line and step here, not an
    internal error halfway through the eval. Returns the reference's tensor outputs."""
    with blamed(path, problem.path, "get_init_inputs()"):
        problem.init_inputs(shape)
    with blamed(path, problem.path, "get_inputs()"):
        inputs = problem.make_inputs(shape, torch.float32, 0, "normal")
    with blamed(path, problem.path, "Model(*get_init_inputs())"):
        problem.model(shape)
    doubled = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]
    with blamed(path, problem.path, "Model.forward(*get_inputs())"):
        out = problem.reference(*doubled)
        again = problem.reference(*doubled)
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    odd = next(((i, v) for i, v in enumerate(items) if not isinstance(v, torch.Tensor)), None)
    if odd is not None:  # the correctness rung compares tensors: said here, naming the file, not at its first case
        raise BadInput(f"{path}: Model.forward returns {type(odd[1]).__name__} as output {odd[0]}: outputs must be "
                       "tensors (a number as a 0-d tensor: torch.tensor(x))")
    outs, twice = ([o for o in (r if isinstance(r, (tuple, list)) else [r]) if isinstance(o, torch.Tensor)]
                   for r in (out, again))
    if any(a.shape != b.shape or not torch.allclose(a, b, rtol=1e-9, atol=0, equal_nan=True)
           for a, b in zip(outs, twice)):
        # every kernel would fail against it, each differently: say so once, before any work
        raise BadInput(f"{path}: the reference is random: Model.forward gives two different outputs for the same "
                       "inputs in training mode (a dropout it calls itself, or torch.randn in forward?)")
    return outs


def load_problem(path: Path, dsl: str = "triton", precision: str = "fp32") -> KernelBenchTask:
    """The task for a KernelBench problem file at a precision (PRECISIONS); BadInput (one line) when it is not one."""
    if precision not in PRECISIONS:
        raise BadInput(f"precision {precision}: unknown (known: {', '.join(PRECISIONS)})")
    path = Path(path).resolve()
    if not path.is_file():
        raise BadInput(f"{path}: no such problem file")
    shim = write_shim(path, precision)
    copy = shim.with_name("problem.py")
    limit = load_limit_s()
    _warm_meta()
    try:
        with raised_after(limit, _LoadTimedOut):
            return _load(path, shim, copy, dsl, precision)
    except _LoadTimedOut as exc:
        line = _line_in(exc, copy)
        raise LoadTimedOut(f"{path}{f':{line}' if line else ''}: loading it (importing it, sizing its test shapes and "
                       f"running its Model once) passed its {limit:g} s limit: a loop that never ends? "
                       f"({LOAD_ENV} sets the limit)") from None


@functools.cache
def _warm_meta() -> None:
    """torch's first ops on meta tensors import its decompositions (3-6 s on a loaded 2-core CPU): paid here, once a
    process, not inside a problem's load limit, which is for the problem's own code (a test's 4 s limit failed a
    good problem as a hang while CI ran beside it)."""
    with torch.device("meta"):
        x = torch.randn(8, 8)
        torch.nn.functional.linear(torch.softmax(x @ x * 2 + 1, dim=1), x).sum()  # a scalar op imports dynamo


LOAD_ENV = "KERNEL_HARNESS_LOAD_S"
LOAD_S = 600.0
"""How long a problem file's own code may take to load (import, get_init_inputs, the shrink's runs at test sizes, the
first run): a `while True` at import hung `harness eval` for good (red team, 2026-12-05). Upstream's level 1 loads
in seconds each on a CPU; the environment variable raises it for a slower machine or a heavier problem."""


def load_limit_s() -> float:
    try:
        value = float(os.environ.get(LOAD_ENV, LOAD_S))
    except ValueError:
        raise BadInput(f"{LOAD_ENV}={os.environ[LOAD_ENV]!r}: expected a number of seconds") from None
    if not value > 0:
        raise BadInput(f"{LOAD_ENV}={os.environ[LOAD_ENV]!r}: expected a number of seconds above 0")
    return value


class LoadTimedOut(BadInput):
    """A problem file whose loading passed LOAD_S: the one-line error, said once (an eval does not load it again)."""


class _LoadTimedOut(BaseException):
    """Raised by the limit (rungs/core/alarm.raised_after) into whatever runs: a BaseException, so the problem's `except Exception` (and blamed(),
    which turns the problem's own errors into one line) lets it through."""


def _load(path: Path, shim: Path, copy: Path, dsl: str, precision: str) -> KernelBenchTask:
    dtype, tol = PRECISIONS[precision], KERNELBENCH_TOLERANCE[precision]
    from rungs.core.imports import import_file

    with blamed(path, copy, "importing it"):
        module = import_file(copy)  # the module the shim's Problem then uses
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(getattr(module, n, None))]
    if missing:
        raise BadInput(f"{path}: not a KernelBench problem file: it defines no {missing[0]}")
    problem = _shim_problem(shim)
    test, long, note = test_shapes(problem)
    too_big = host_memory_problem(problem, test[0])
    if too_big:
        raise BadInput(f"{path}: {too_big}")
    outs = first_run(problem, path, test[0])
    keys = list(test[0]) or list(problem.defaults)
    bench = {k: problem.defaults[k] for k in keys}
    roofline, roof_note = roofline_of(problem, bench)
    doc = (problem.module.Model.__doc__ or "").strip().splitlines()
    try:
        task = KernelBenchTask(
            name=path.stem, description=(doc[0] if doc else f"KernelBench problem {path.name}"), dsl=dsl,
            entry="ModelNew", signature=SIGNATURE,
            reference=f"{shim}:reference", inputs=f"{shim}:make_inputs", dtypes=[dtype],
            # upstream's allclose at its figure for the precision, beside the dtype's own metrics (magnitude-aware:
            # allclose alone passes zeros where the reference is near zero everywhere)
            tolerances={dtype: Tolerance(atol=tol, rtol=tol)},
            shapes=Shapes(test=test, bench=[bench], long=long), roofline=roofline)
    except ValidationError as exc:  # a --dsl the task spec does not know yet
        raise BadInput(f"{path}: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from None
    task.path = path
    task._problem = problem
    resident = _meta_run(problem, bench)
    task._resident = 4.0 * resident[0] if resident else 0.0
    task._notes = [n for n in (note, roof_note, tiny_output_note(outs, precision)) if n]
    return task


def _shim_problem(shim: Path) -> Problem:
    """The Problem the shim's functions call (the one the cases use), so weights and shapes agree."""
    from rungs.core.imports import import_file

    return import_file(shim).problem
