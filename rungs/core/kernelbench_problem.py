"""A KernelBench problem file at run time: inputs, the float64 reference, and the candidate's `ModelNew`.

A problem file is a `class Model(nn.Module)`, module-level size globals (`batch_size = 16`), `get_inputs()` and
`get_init_inputs()`. The task adapter (harness/kernelbench.py) writes a two-line shim beside a copy of the file whose
`make_inputs` and `reference` are bound methods of a `Problem`: the harness's usual `file.py:function` contract, so
cases, baselines and bench inputs work unchanged, in the parent, the baseline process and the worker.

A task shape is a dict of size globals; it is applied by setting those globals while `get_inputs()` and
`get_init_inputs()` run. Weights come from a fixed seed per shape; the candidate's module gets the reference's
parameters and buffers wherever the names and shapes match (the same seed alone would not make them equal).

A precision other than float32 (`harness eval --precision bf16`, as upstream KernelBench's precision option does)
casts the floating tensors of `get_init_inputs()` and the model's weights to it, for reference and candidate alike:
the float64 reference then computes with the very weights the candidate holds, rounded to the precision.

Kept to torch and the standard library: the sandboxed worker imports it (ModuleEntry).
"""
from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import torch

from rungs.core import seeding
from rungs.core.imports import import_file

WEIGHT_SEED = 42
"""Seed the reference's weights are drawn with, for every shape (KernelBench seeds its model the same way)."""
DRAWING = threading.RLock()
"""Held while a problem's size globals are set and while anything draws from torch's global generator for it
(get_inputs, the weights): `harness run --parallel P` prepares P candidates' cases in threads of one process, and a
problem's globals and torch's generator are that process's. Without it, one climb's shape was restored (or another's
set) under another's get_inputs: an honest kernel failed with `the output has shape [1024, 64], expected [1024, 8192]`
(KernelBench level-2 12_Gemm_Multiply_LeakyReLU, two climbs side by side)."""
INIT_FILE = "inputs-module.pt"
"""The worker's file of constructor arguments and weights per input signature (the `inputs-` prefix makes the
sandbox hand it over with the case inputs)."""


TUPLE_SIZE_FLOOR = 8
"""A tuple global's element above this can be a size (`input_shape = (32768,)`)."""


def size_globals(module: ModuleType) -> dict[str, int]:
    """The problem's module-level integer globals: its sizes (bools and private names are not); and, as `name[i]`,
    each element above TUPLE_SIZE_FLOOR of a tuple of literal integers that get_inputs reads and get_init_inputs does
    not: an input's shape (KernelBench's losses take `torch.rand(batch_size, *input_shape)` with `input_shape =
    (32768,)`; 100_HingeLoss broadcasts its targets along it, so it runs only while batch_size equals input_shape[0],
    and neither alone could be halved). Not a tuple the model is built with (a kernel size, `bias_shape =
    (out_channels, 1, 1)`), nor one written from another global (`input_shape = (num_classes,)`: setting the global
    would not change the tuple, and a tuple changed alone breaks what ties them, cross entropy's class count)."""
    sizes: dict[str, int] = {}
    for k, v in vars(module).items():
        if type(v) is int and not k.startswith("_") and k.isidentifier():
            sizes[k] = v
    read = global_reads(module, "get_inputs") - global_reads(module, "get_init_inputs")
    for k in sorted(_literal_tuples(module) & read):
        v = getattr(module, k, None)
        if type(v) is tuple and all(type(e) is int for e in v):
            sizes.update({f"{k}[{i}]": e for i, e in enumerate(v) if e > TUPLE_SIZE_FLOOR})
    return sizes


def _code_names(code: Any) -> set[str]:
    """The names a code object reads, its comprehensions' and lambdas' too (their own code objects on 3.11)."""
    return set(code.co_names).union(*(_code_names(c) for c in code.co_consts if hasattr(c, "co_names")))


def global_reads(module: ModuleType, function: str) -> frozenset[str]:
    """The names a module function reads, its comprehensions' and lambdas' too."""
    code = getattr(getattr(module, function, None), "__code__", None)
    return frozenset(_code_names(code)) if code is not None else frozenset()


def _literal_tuples(module: ModuleType) -> set[str]:
    """The module-level names assigned a tuple written in numbers alone (`(32768,)`, `(8192 * 2,)`) in the file."""
    import ast

    try:
        tree = ast.parse(Path(module.__file__ or "").read_bytes())  # bytes: the file's coding line and BOM hold
    except (OSError, SyntaxError, ValueError):
        return set()
    return {node.targets[0].id for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Tuple) and not any(isinstance(n, ast.Name) for n in ast.walk(node.value))}


def global_name(size: str) -> str:
    """The module global a size key sets: `input_shape` for `input_shape[0]`, the name itself otherwise."""
    return size.split("[", 1)[0]


def set_sizes(module: ModuleType, shape: dict[str, Any]) -> None:
    """Set the module's size globals to `shape`: an element key (`input_shape[0]`) replaces that element of the
    tuple, keeping the others."""
    for k, v in shape.items():
        name = global_name(k)
        if name == k:
            setattr(module, k, v)
        else:
            items = list(getattr(module, name))
            items[int(k[len(name) + 1:-1])] = v
            setattr(module, name, tuple(items))


def input_signature(inputs: tuple[Any, ...] | list[Any], with_dtype: bool) -> tuple[Any, ...]:
    """What tells one shape's inputs from another's: tensor shapes (and dtypes), other values as they are."""
    sig: list[Any] = []
    for v in inputs:
        if isinstance(v, torch.Tensor):
            sig.append((tuple(v.shape), str(v.dtype)) if with_dtype else tuple(v.shape))
        elif isinstance(v, (list, tuple)):  # a list of tensors (never their repr: that reads their values)
            sig.append((type(v).__name__, input_signature(v, with_dtype)))
        else:
            sig.append(repr(v))
    return tuple(sig)


CONSTANT_SPREAD = 0.1
"""The relative spread of the values a constant parameter is given (vary_constant_parameters)."""


def vary_constant_parameters(model: torch.nn.Module) -> list[str]:
    """Give every floating parameter whose elements are all one value (nn's initial ones and zeros: a norm's weight and
    bias, a PReLU's slope) values of its own around that one, from a seed of their own; returns their names. With
    nn's initial values a kernel that ignores a LayerNorm's weight and bias, or reads a GroupNorm's weight by the wrong
    channel, matched the reference exactly. The candidate's ModelNew gets these values like any other where its
    names match (ModuleEntry), so a kernel that applies them passes as before. Buffers (running statistics, masks)
    are left as they are: their values can carry meaning (a variance is positive, a mask is 0 or 1)."""
    g = torch.Generator().manual_seed(WEIGHT_SEED + 1)
    varied = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.is_floating_point() or p.numel() == 0:
                continue
            first = p.reshape(-1)[0]
            if not bool((p == first).all()):
                continue
            scale = max(abs(float(first)), 1.0) * CONSTANT_SPREAD
            p.add_(torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype) * scale)
            varied.append(name)
    return varied


SEMANTICS = "training mode, random layers off (2026-12-05)"
"""What the reference computes, beyond the problem file: part of every shim's text (harness/kernelbench.py), so the
caches keyed by the shim (bench-shape references, eager/torch.compile baselines) start over when it changes. Change
it with upstream_mode or anything else that changes a reference's values."""


def upstream_mode(module: torch.nn.Module) -> torch.nn.Module:
    """`module` in KernelBench's mode, for reference and candidate alike: training, as nn builds a module (upstream's
    eval never calls eval()), so a BatchNorm normalizes with the batch's own statistics, not the running ones (in
    eval mode 33_BatchNorm was an affine map, and a kernel written for upstream's semantics failed here). What is
    random in training mode is off, since a random mask cannot be compared element by element (level 2's 66 and 83
    draw p = 0.2): Dropout and RReLU modules in eval mode, the dropout of attention and recurrent layers at 0. A
    forward that calls F.dropout(training=self.training) itself stays random."""
    module.train()
    for sub in module.modules():
        if isinstance(sub, (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU)):
            sub.eval()
        elif isinstance(sub, (torch.nn.MultiheadAttention, torch.nn.RNNBase)) and sub.dropout:
            sub.dropout = 0.0
    return module


class Problem:
    """One problem file, imported once per process."""

    def __init__(self, path: str | Path, precision: str = "float32") -> None:
        self.path = Path(path)
        self.precision = getattr(torch, precision)
        """The dtype the floating tensors of get_init_inputs() and the weights are cast to (the task's dtype)."""
        self.module = import_file(self.path)
        self.defaults = size_globals(self.module)
        self._shape_of: dict[tuple[Any, ...], dict[str, Any]] = {}  # input signature -> the shape that made it
        self._models: dict[tuple[Any, ...], torch.nn.Module] = {}

    @contextlib.contextmanager
    def sized(self, shape: dict[str, Any]) -> Iterator[None]:
        """The size globals set to `shape` within the block (the file's own values after it)."""
        unknown = set(shape) - set(self.defaults)
        if unknown:
            raise KeyError(f"{self.path.name} has no size global {sorted(unknown)[0]!r}")
        with DRAWING:
            saved = {global_name(k): getattr(self.module, global_name(k)) for k in shape}
            try:
                set_sizes(self.module, shape)
                yield
            finally:
                for k, v in saved.items():
                    setattr(self.module, k, v)

    @property
    def model_reads_sizes(self) -> bool:
        """Whether a method of the module's classes reads a size global (`x.sum(1) / dim` in forward): then the
        model runs with the shape's sizes set too, or the reference at a test shape divided by the file's `dim`."""
        if "_model_reads" not in self.__dict__:
            names = {global_name(k) for k in self.defaults}
            read: set[str] = set()
            for cls in vars(self.module).values():
                if isinstance(cls, type) and cls.__module__ == self.module.__name__:
                    for member in vars(cls).values():
                        code = getattr(getattr(member, "__func__", member), "__code__", None)
                        if code is not None:
                            read |= _code_names(code)
            self.__dict__["_model_reads"] = bool(read & names)
        return self.__dict__["_model_reads"]

    def running(self, shape: dict[str, Any]) -> contextlib.AbstractContextManager[None]:
        """The block a forward of the model at `shape` runs in: the shape's sizes set where a method reads them and
        they are not the file's own (a bench shape's timed forwards take no lock)."""
        changed = {k: v for k, v in shape.items() if self.defaults.get(k) != v}
        return self.sized(changed) if changed and self.model_reads_sizes else contextlib.nullcontext()

    def init_inputs(self, shape: dict[str, Any]) -> list[Any]:
        """get_init_inputs() under the shape's sizes, floating tensors cast to the precision."""
        # at a seed of its own, as upstream seeds before get_init_inputs: a random init argument is the same for the
        # reference's build and ModelNew's (init_entry calls this again), and torch's generator is left as it was
        with DRAWING, self.sized(shape), torch.random.fork_rng(devices=[]):
            seeding.manual_seed(WEIGHT_SEED)
            made = list(self.module.get_init_inputs())
        return [v.to(self.precision) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in made]

    def make_inputs(self, shape: dict[str, Any], dtype: torch.dtype, seed: int, dist: str,
                    device: str | None = None) -> tuple[Any, ...]:
        """The harness's input maker: get_inputs() under the shape's sizes and a seeded generator, floats cast to
        the task dtype. Only the file's own distribution exists (`dist` is always `normal`).

        `device`: where get_inputs() draws (its factory calls default to it): a bench shape's tensors of GBs are
        drawn on the GPU in milliseconds, by every process that needs them (worker, baseline, bench reference),
        identically from the seed, never through the host. get_inputs() draws from torch's global generator, so
        this runs where no other thread draws (rungs/timing/inputs.py: never in the prefetch thread). None: the
        caller's default device (a `with torch.device("meta")` around the call makes shapes without values)."""
        with self.sized(shape), (torch.device(device) if device else contextlib.nullcontext()):
            seeding.manual_seed(seed)
            made = self.module.get_inputs()
        inputs = tuple(_placed_input(v, device, dtype) for v in made)
        self._shape_of[input_signature(inputs, with_dtype=False)] = dict(shape)
        self._shape_of[("rows cut",) + _without_rows(inputs)] = dict(shape)
        return inputs

    def model(self, shape: dict[str, Any]) -> torch.nn.Module:
        """The reference Model for a shape on the CPU, weights from WEIGHT_SEED, in the precision (float32 unless
        asked)."""
        key = tuple(sorted(shape.items()))
        with DRAWING:
            if key not in self._models:
                self._models[key] = self._build(shape)
            return self._models[key]

    def _build(self, shape: dict[str, Any]) -> torch.nn.Module:
        """A new reference Model for a shape (the caller holds DRAWING): the same weights every time."""
        args = self.init_inputs(shape)
        with self.sized(shape):  # a constructor that reads a size global sees the shape's
            seeding.manual_seed(WEIGHT_SEED)
            model = upstream_mode(self.module.Model(*args))
        vary_constant_parameters(model)
        return model if self.precision == torch.float32 else model.to(self.precision)

    def shape_for(self, inputs: tuple[Any, ...]) -> dict[str, Any]:
        """The shape whose make_inputs call made inputs like these (this process's); or whose inputs these are a
        slice of along dimension 0 (the bench-shape reference computes in slices of rows); else the file's own."""
        exact = self._shape_of.get(input_signature(inputs, with_dtype=False))
        if exact is not None:
            return exact
        return self._shape_of.get(("rows cut",) + _without_rows(inputs), {})

    def reference(self, *inputs: Any) -> Any:
        """The reference: the shape's Model in the dtype and on the device of the inputs (float64 in the parent)."""
        model = self.model(self.shape_for(inputs))
        first = next((v for v in inputs if isinstance(v, torch.Tensor) and v.is_floating_point()), None)
        device = first.device if first is not None else torch.device("cpu")
        dtype = first.dtype if first is not None else torch.float32
        key = ("cast", id(model), str(device), str(dtype))
        if key not in self._models:
            # Built anew, not deep-copied: a copy's closures still hold the original's modules (level 3's
            # 44_MiniGPTBlock keeps `self.mlpf = lambda x: m.c_proj(...)`, and its float64 copy ran float32 layers)
            with DRAWING:
                self._models[key] = self._build(self.shape_for(inputs)).to(device=device, dtype=dtype)
        with torch.no_grad(), _default_dtype(dtype), self.running(self.shape_for(inputs)):
            return self._models[key](*inputs)

    def init_entry(self, shape: dict[str, Any], inputs: tuple[Any, ...]) -> dict[str, Any]:
        """What the worker builds ModelNew from for inputs like these: constructor arguments and the weights."""
        state = {k: v.detach().clone() for k, v in self.model(shape).state_dict().items()}
        return {"signature": input_signature(inputs, with_dtype=True), "init_args": self.init_inputs(shape),
                "state": state}


def _placed_input(v: Any, device: str | None, dtype: torch.dtype) -> Any:
    """An input of get_inputs on `device`, floating tensors in `dtype` and contiguous; a list or tuple of them
    likewise, element by element."""
    if isinstance(v, torch.Tensor):
        return v.to(device=device, dtype=dtype).contiguous() if v.is_floating_point() else v.to(device)
    if isinstance(v, (list, tuple)) and any(isinstance(e, torch.Tensor) for e in v):
        return type(v)(_placed_input(e, device, dtype) for e in v)
    return v


def _without_rows(inputs: tuple[Any, ...] | list[Any]) -> tuple[Any, ...]:
    """The input signature with dimension 0 of each tensor left out (a list of tensors as input_signature gives it,
    never their repr)."""
    return tuple(tuple(v.shape[1:]) if isinstance(v, torch.Tensor) else input_signature([v], with_dtype=False)[0]
                 for v in inputs)


class ModuleEntry:
    """The worker's entry for a `class ModelNew` task: one instance per input signature, built before any judged
    call (its constructor's torch ops are not the forward's), with the reference's weights copied in where the names
    and shapes match, on the device and in the dtype of the inputs. Calling it calls the matching instance.

    A hollow entry (a bench shape the compile phase builds its kernels for and never runs: Job.dump_bench) carries no
    weights: its instance is made on the meta device here (no memory, no values) and given memory that holds nothing
    in particular on its first call, so a phase that never calls it at that shape pays nothing."""

    def __init__(self, cls: type, init_file: Path, device: str) -> None:
        entries = torch.load(init_file, weights_only=True)
        self.instances: dict[tuple[Any, ...], Any] = {}
        self.copied: dict[tuple[Any, ...], list[str]] = {}
        self.hollow: dict[tuple[Any, ...], Any] = {}
        """signature -> ModelNew on the meta device, or the exception its constructor raised there"""
        self.device = device
        for entry in entries:
            sig = tuple(entry["signature"])  # pickled tuples come back as tuples
            if sig in self.instances or sig in self.hollow:
                continue
            if entry.get("hollow"):
                try:
                    with torch.device("meta"):
                        self.hollow[sig] = cls(*entry["init_args"])
                except Exception as exc:  # noqa: BLE001 - said when that shape is called (the compile rung's note)
                    self.hollow[sig] = exc
                continue
            instance = seeded_build(cls, entry["init_args"])
            if isinstance(instance, torch.nn.Module):
                own = instance.state_dict()
                matched = {k: v for k, v in entry["state"].items() if k in own and own[k].shape == v.shape}
                instance.load_state_dict(matched, strict=False)
                instance = _placed(instance, sig, device)
                self.copied[sig] = sorted(matched)
            self.instances[sig] = instance

    def __call__(self, *inputs: Any) -> Any:
        sig = input_signature(inputs, with_dtype=True)
        instance = self.instances.get(sig)
        if instance is None and sig in self.hollow:
            made = self.hollow.pop(sig)
            if isinstance(made, Exception):
                raise RuntimeError(f"ModelNew's constructor on the meta device (a bench shape's build, no weights): "
                                   f"{type(made).__name__}: {made}") from made
            if isinstance(made, torch.nn.Module):
                made = _placed(made.to_empty(device=self.device), sig, self.device)
            instance = self.instances[sig] = made
        if instance is None:
            known = "; ".join(str(s) for s in self.instances) or "none"
            raise LookupError(f"ModelNew was built for inputs {known}, not {sig}")
        return instance(*inputs)


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """torch's default dtype at float64 while a float64 reference runs: what its forward makes without a dtype
    (`torch.randn(...)`, `torch.zeros(...)`, a tensor of Python floats) is float64 like the rest of it, not a float32
    tensor that stops the forward (level 3's 35_LSTM: `mat1 and mat2 must have the same dtype`) or rounds it. The
    default is the process's, so one such forward at a time (DRAWING); any other dtype runs as it is."""
    if dtype != torch.float64:
        yield
        return
    with DRAWING:
        before = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            yield
        finally:
            torch.set_default_dtype(before)


def seeded_build(cls: type, args: Any) -> Any:
    """cls(*args) with torch's generator at WEIGHT_SEED, as the reference's Model is built, and as upstream builds
    ModelNew (its eval seeds both constructors alike): weights a ModelNew draws in the reference's order under names of
    its own (`self.w = nn.Linear(...).weight`) equal the reference's, where the copy by name cannot reach them.
    The CPU generator's state is restored after (inputs are drawn from seeds of their own either way)."""
    with torch.random.fork_rng(devices=[]):
        seeding.manual_seed(WEIGHT_SEED)
        return cls(*args)


def _placed(instance: torch.nn.Module, sig: tuple[Any, ...], device: str) -> torch.nn.Module:
    """On the device, in the dtype of the signature's first floating input, in KernelBench's mode (upstream_mode)."""
    def tensors(sig: tuple[Any, ...]) -> list[tuple[Any, str]]:  # (shape, dtype) pairs, a list's in its place
        out: list[tuple[Any, str]] = []
        for s in sig:
            if isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], str):
                out.append(s)
            elif isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], tuple):
                out.extend(tensors(s[1]))
        return out

    dtypes = [s[1] for s in tensors(sig) if "float" in s[1]]
    dtype = getattr(torch, dtypes[0].replace("torch.", "")) if dtypes else None
    instance = instance.to(device=device, dtype=dtype) if dtype else instance.to(device)
    return upstream_mode(instance)
