"""What a kernel launch may take, and how the launch log describes it (rungs/worker/launch_gate.py's `note_launch`).

On a CPU the verdict is the Triton interpreter's while the build the GPU would run is compiled apart (the compile
phase's sm_90a build). A launch argument that carries Python of the file's own runs at compile time in the build and
at run time in the interpreter, so it can tell the two apart and compute differently in each: a function or an
object with methods (two red teams, 2026-12-06), and also a `float` subclass with a `__call__` of its own, passed as
a constexpr and called from the body (2026-12-07: `isinstance(value, float)` logged it as a number, a CPU pass for a
softmax that halves its logits in the build). So a launch takes only what is on a list, by exact type, each type
taken from the libraries before the candidate's code runs (`snapshot`, called where the gate goes in): numbers,
strings, None, torch tensors, dtypes and devices, numpy scalars, Triton's constexprs, dtypes, enums, jit functions
(of Triton's own classes) and builtins (Triton's own function objects), Triton's TensorDescriptor, and tuples and
lists of these. Anything else is described as `{"python": what}`, which `integrity.one_build` refuses where the run
phase is the interpreter. The same holds for what a jit body reads from its module's globals (`jit_globals`).
"""
from __future__ import annotations

import collections
import dataclasses
import dis
import enum
import functools
import os
import sys
import sysconfig
from typing import Any

PLAIN = (bool, int, float, str, type(None))
"""Exact types: a subclass of one can carry methods of its own."""

MAX_DEPTH = 8


@dataclasses.dataclass
class Allowed:
    """The library types and objects a launch may take, fixed when `snapshot` ran."""
    tensors: set[type] = dataclasses.field(default_factory=set)
    containers: set[type] = dataclasses.field(default_factory=lambda: {tuple, list})
    scalars: set[type] = dataclasses.field(default_factory=set)
    """numpy's scalar types: described by their value."""
    named: set[type] = dataclasses.field(default_factory=set)
    """dtypes, devices, Triton's enums: described by str()."""
    jit: set[type] = dataclasses.field(default_factory=set)
    builtins: dict[int, Any] = dataclasses.field(default_factory=dict)
    records: set[type] = dataclasses.field(default_factory=set)
    """Dataclasses of the libraries' (Triton's TensorDescriptor): described field by field."""
    constexpr: type | None = None
    module_dirs: tuple[str, ...] = ()


_allowed: list[Allowed] = []


def _subclasses(cls: type) -> set[type]:
    found, todo = set(), [cls]
    while todo:
        klass = todo.pop()
        if klass not in found:
            found.add(klass)
            todo += klass.__subclasses__()
    return found


def snapshot() -> Allowed:
    """The allow-list, made once per process: where the launch gate goes in (before the candidate's import in a
    worker that runs it), so that a class or function the candidate makes later is on no list. A process that
    describes launches without the gate (a compile-only worker) makes it at its first launch; the run phase's,
    made before the import, is the one an interpreted verdict rests on."""
    if _allowed:
        return _allowed[0]
    allowed = Allowed()
    dirs = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
    try:
        import torch

        allowed.tensors = {torch.Tensor, torch.nn.Parameter}
        allowed.named |= {torch.dtype, torch.device}
        allowed.containers.add(torch.Size)
        dirs.add(os.path.dirname(torch.__file__))
    except ImportError:  # pragma: no cover - the worker always has torch
        pass
    try:
        import numpy

        allowed.scalars = {t for t in set(numpy.sctypeDict.values()) if isinstance(t, type)}
        dirs.add(os.path.dirname(numpy.__file__))
    except ImportError:  # pragma: no cover
        pass
    try:
        _triton(allowed)
        import triton

        dirs.add(os.path.dirname(triton.__file__))
    except (ImportError, AttributeError):  # no Triton, or one laid out otherwise: its launches are then all refused
        pass  # on a CPU (nothing on the list), logged as before on a GPU, where no interpreter judges them
    allowed.module_dirs = tuple(os.path.abspath(d) + os.sep for d in dirs if d)
    _allowed.append(allowed)
    return allowed


def _triton(allowed: Allowed) -> None:
    import triton.language as tl
    from triton.runtime.jit import KernelInterface

    allowed.jit = _subclasses(KernelInterface)
    try:
        from triton.runtime.interpreter import InterpretedFunction  # what @triton.jit makes under TRITON_INTERPRET=1

        allowed.jit.add(InterpretedFunction)
    except ImportError:  # pragma: no cover
        pass
    allowed.constexpr = tl.constexpr
    # dtypes and the like; `_aggregate_type` wraps a class of the file's own (@aggregate): left out
    allowed.named |= {c for c in _subclasses(tl.core.base_type) if not c.__name__.startswith("_")}
    for name, module in list(sys.modules.items()):
        if not name.startswith("triton.language") or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type) and issubclass(value, enum.Enum) and value.__module__.startswith("triton."):
                allowed.named.add(value)
            elif callable(value) and getattr(value, "__triton_builtin__", False) is True:
                allowed.builtins[id(value)] = value
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor

        allowed.records.add(TensorDescriptor)
    except ImportError:  # pragma: no cover - an older Triton
        pass


def is_jit(value: Any) -> bool:
    """A Triton jit function (or its autotune/heuristics wrapper) of one of Triton's own classes: not a subclass
    the file made (its `__call__` run by the interpreter, not by the compiler), not anything with `fn` and `run`."""
    return type(value) in snapshot().jit


def jit_name(value: Any) -> str:
    fn = value
    for _ in range(8):  # autotune(heuristics(jit(fn))): the function at the bottom
        inner = getattr(fn, "fn", None)
        if inner is None:
            break
        fn = inner
    return getattr(fn, "__name__", type(value).__name__)


def describe(value: Any, depth: int = 0) -> Any:
    """A launch argument as the log keeps it: the value itself for a plain one, a tensor's dtype, shape and stride,
    a list for a tuple or list, a name for a dtype, jit function or builtin; `{"python": what}` for anything not on
    the list (what: "the Python function f", "an object of class C", ...)."""
    allowed = snapshot()
    kind = type(value)
    if kind in PLAIN:
        return value
    if kind in allowed.tensors:
        return f"tensor {str(value.dtype).replace('torch.', '')} {list(value.shape)} stride {list(value.stride())}"
    if depth >= MAX_DEPTH:
        return {"python": f"arguments nested past {MAX_DEPTH} levels"}
    if kind in allowed.containers or _plain_namedtuple(kind):
        return [describe(v, depth + 1) for v in value]
    if allowed.constexpr is not None and kind is allowed.constexpr:
        return describe(value.value, depth + 1)
    if kind in allowed.scalars:
        return value.item()
    if kind in allowed.named:
        return f"{kind.__name__} {value}"
    if kind in allowed.jit:
        return f"jit function {jit_name(value)}"  # JITFunction in the build, InterpretedFunction in the interpreter
    if allowed.builtins.get(id(value)) is value:
        return f"builtin {getattr(value, '__name__', '?')}"
    if kind in allowed.records:
        return {kind.__name__: {f.name: describe(getattr(value, f.name, None), depth + 1)
                                for f in dataclasses.fields(value)}}
    return {"python": what(value)}


@functools.lru_cache(maxsize=64)
def _plain_namedtuple(kind: type) -> bool:
    """A class exactly as `collections.namedtuple` makes it (Triton takes one as a tuple; red team 2026-12-07: an
    honest kernel passing its strides in one was refused): its names those of a fresh namedtuple of the same fields,
    its functions' code the same, its `__new__` building a plain tuple. One with anything of its own (a method, a
    `__getattr__`, another base) is not."""
    fields = vars(kind).get("_fields")
    if kind.__bases__ != (tuple,) or not isinstance(fields, tuple) or not all(isinstance(f, str) for f in fields):
        return False
    try:
        ref = collections.namedtuple(kind.__name__, fields)
    except (TypeError, ValueError):
        return False
    mine, theirs = vars(kind), vars(ref)
    if set(mine) != set(theirs):
        return False
    for name, value in mine.items():
        other = theirs[name]
        if type(value) is not type(other):
            return False
        fn, ref_fn = getattr(value, "__func__", value), getattr(other, "__func__", other)
        code, ref_code = getattr(fn, "__code__", None), getattr(ref_fn, "__code__", None)
        if (code is None) != (ref_code is None):
            return False
        if code is not None and (code.co_code != ref_code.co_code or code.co_names != ref_code.co_names
                                 or code.co_consts != ref_code.co_consts
                                 or fn.__globals__.get("_tuple_new") is not ref_fn.__globals__.get("_tuple_new")):
            return False
    getters = [mine[f] for f in fields]
    probe = tuple.__new__(kind, range(len(fields)))
    return all(type(g) is type(theirs[f]) and g.__get__(probe, kind) == i for i, (f, g) in enumerate(zip(fields, getters)))


def what(value: Any) -> str:
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if callable(value) and hasattr(value, "__code__"):
        return f"the Python function {getattr(value, '__qualname__', '?')}"
    return f"an object of class {type(value).__name__}"


def _library_module(value: Any) -> bool:
    """A module a jit body may read from: one the import system holds under its name, from the stdlib, torch,
    numpy or Triton (a module the file made, or the file itself, is not)."""
    name = getattr(value, "__name__", None)
    if not isinstance(name, str) or sys.modules.get(name) is not value:
        return False
    path = getattr(value, "__file__", None)
    if path is None:
        return name in sys.builtin_module_names
    return isinstance(path, str) and os.path.abspath(path).startswith(snapshot().module_dirs)


def jit_globals(*roots: Any) -> dict[str, Any]:
    """What the launched kernel, and the jit functions it calls or is handed, read from their modules' globals (by
    LOAD_GLOBAL, not attribute names): the plain values (constexpr globals, numbers, strings), which Triton folds
    into the build like constexprs, as they are; a jit function walked in turn; a library module or one of Triton's
    builtins left out; anything else described as `describe` would (a float subclass with a `__call__` read as a
    global runs at compile time in the build and at run time in the interpreter, as a launch argument would)."""
    out: dict[str, Any] = {}
    todo, seen = [r for r in roots if is_jit(r)], set()
    while todo and len(seen) < 64:
        fn = todo.pop()
        for _ in range(8):  # down to the Python function
            if getattr(fn, "fn", None) is None:
                break
            fn = fn.fn
        code = getattr(fn, "__code__", None)
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        if code.co_freevars:  # red team 2026-12-07: a kernel made in a function, its SCALE local there and global too
            out[f"{getattr(fn, '__name__', '?')} closure"] = {"python": (
                f"a jit function with closure variables ({', '.join(code.co_freevars[:4])}): the build reads them from "
                "the closure, the interpreter from the module's globals")}
        space = getattr(fn, "__globals__", {})
        for name in sorted({i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}):
            if not isinstance(name, str) or name not in space:
                continue  # a builtin name (range, min, float): Triton's to handle
            value = space[name]
            if is_jit(value):  # a jit function it calls
                todo.append(value)
            elif _library_module(value) or snapshot().builtins.get(id(value)) is value:
                continue
            else:
                seen_as = describe(value)
                if isinstance(seen_as, dict) and "python" in seen_as:
                    seen_as = {"python": f"{seen_as['python']} (the global {name} its body reads)"}
                out[f"{getattr(fn, '__name__', '?')}.{name}"] = seen_as
    return out
