"""Triton's and numpy's names as they were before the candidate's code ran, checked where a CPU verdict's two builds
read them.

On a CPU the verdict is Triton's interpreter's while the build the GPU would run is compiled apart. Both compute with
what Triton's and numpy's modules and classes hold: the language (`tl.exp`, `tl.tensor.__mul__`), the compiler's
semantics (`TritonSemantic.sub`), the interpreter's builder (`InterpreterBuilder.create_exp`), numpy's functions the
interpreter calls (`np.sum` and what it calls). A candidate that adds or replaces a name in one of them, in one phase
or in both, can make the interpreter compute one thing and the build another: red teams of 2026-12-07 did it five
ways past the screen (names reached through loop variables), each a CPU pass with a wrong build. So every module of
triton, numpy and math in sys.modules (the compiler's and the interpreter's imported first, in both phases) and
every class defined in one have their names taken before the candidate's import (`Namespaces`, about 600 spaces and
15,000 names, 12 ms) and compared (about 2 ms) where each build reads them: the compile phase before each build, the
interpreter at each launch and again after its grid function (just before the programs). In the interpreter a name
may also hold what the interpreter itself puts there (a function whose code is the interpreter's or this harness's
patch of it: its `_patch_attr` lambdas, `_new_range`, `functools.partial(_set_attr, ...)`, `print`; the
interpreter's globals it copies into a module it runs a jit function in). Anything else is refused with
`NamespaceChanged`. The launch gate's list (rungs/worker/launch_args.py) judges what is handed to a launch; this
judges what is reached through the libraries' own names.
"""
from __future__ import annotations

import builtins
import functools
import importlib
import sys
import types
from typing import Any

ROOTS = ("triton", "numpy", "math")
"""Every module of these in sys.modules at the snapshot, and every class defined in one: what either build computes
with (the compiler and its semantics, the interpreter and its builder, numpy's functions the interpreter calls).
Red team 2026-12-07, second round, past the screen through loop names: `InterpreterBuilder.create_exp` replaced in
the run phase only, `numpy._core.fromnumeric._wrapreduction` (what `np.sum` calls) halving sums, and
`TritonSemantic.sub` replaced in the compile phase only; each a CPU pass with a wrong build."""
PRELOAD = ("triton.language", "triton.language.core", "triton.language.math", "triton.language.standard",
           "triton.language.semantic", "triton.language.extra", "triton.language.extra.libdevice",
           "triton.language.extra.cuda", "triton.language.extra.cuda.libdevice", "triton.compiler.compiler",
           "triton.compiler.code_generator", "triton.runtime.jit", "triton.runtime.interpreter")
"""Imported before the snapshot where this Triton has them (both phases alike), so the candidate cannot import one
first and change it before it is watched."""
HARNESS = ("rungs.backends.triton_interp", "rungs.backends.triton_ptx", "rungs.backends.triton_order",
           "rungs.backends.triton_lang_patch", "rungs.backends.triton_sections", "rungs.backends.triton_namespaces",
           "rungs.backends.triton_worker", "rungs.worker.launch_args")
"""This harness's modules around the interpreter and the launch log: their functions and classes watched too."""
MAKERS = ("triton.runtime.interpreter", "rungs.backends.triton_interp", "rungs.backends.triton_ptx",
          "rungs.backends.triton_order", "rungs.backends.triton_lang_patch", "rungs.backends.triton_sections")
"""Modules whose functions may stand in a watched name in the interpreter: Triton's and this harness's patches."""

SKIP = frozenset({"triton.runtime.interpreter.InterpretedFunction.rewritten_fn",
                  "triton.runtime.jit._triton_jit_function_registry"})
"""Held dicts whose entries are the candidate's own code by design: the interpreter's rewritten jit functions, the
registry of every @triton.jit function made (sys.modules, which a module may hold too, is left out as well)."""
RUNTIME_SET: dict[str, type] = {"__slotnames__": list, "__warningregistry__": dict}
"""Set by Python itself: on a class by copyreg when a constexpr is copied (a list of names), in a module's globals by
the warnings machinery when code run in them warns (the interpreter runs tl.sum in triton.language.standard's)."""
_MISSING = object()


def _inherited(bases: tuple[type, ...], name: str) -> Any:
    for klass in bases:
        if name in vars(klass):
            return vars(klass)[name]
    return _MISSING


def preload() -> None:
    """Import PRELOAD (about 0.8 s): at the worker's start, before it takes a job (TritonWorker.preload), so that the
    job's time limit does not pay it; again, a no-op, at the snapshot."""
    for name in PRELOAD:  # all imported first: importing a submodule binds its name in its package
        try:
            importlib.import_module(name)
        except ImportError:
            continue


class NamespaceChanged(RuntimeError):
    """The candidate added or replaced a name in triton.language: the two builds would read different things."""


def _codes(module: types.ModuleType) -> set[int]:
    """The code objects of a module's functions and classes' methods, nested ones too (closures, lambdas)."""
    found: set[int] = set()
    todo: list[Any] = []
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            todo.append(value.__code__)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            todo += [v.__code__ for v in vars(value).values() if isinstance(v, types.FunctionType)]
    while todo:
        code = todo.pop()
        if id(code) not in found:
            found.add(id(code))
            todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


class Namespaces:
    """The watched modules' and classes' names and values, taken before the candidate's import."""

    def __init__(self) -> None:
        preload()
        self.spaces: dict[str, tuple[Any, dict[str, Any]]] = {}
        self.code_only: set[str] = set()
        self.held: set[int] = set()
        self.module_dicts = {id(vars(m)) for m in list(sys.modules.values()) if isinstance(m, types.ModuleType)}
        self.ids: dict[str, tuple[list[Any], list[int]]] = {}
        for name, module in list(sys.modules.items()):
            if module is None or not (name.split(".")[0] in ROOTS or name in HARNESS):
                continue
            self.spaces[name] = (module, dict(vars(module)))
            if name in HARNESS:  # their state changes as they run: only what holds code
                self.code_only.add(name)
            for key, value in list(vars(module).items()):
                if isinstance(value, type) and value.__module__ == name:
                    self.spaces[f"{name}.{value.__qualname__}"] = (value, dict(vars(value)))
                    for attr, held in list(vars(value).items()):  # CodeGenerator.builtin_namespace
                        self._inside(f"{name}.{value.__qualname__}.{attr}", held)
                elif name.split(".")[0] in ROOTS:
                    self._inside(f"{name}.{key}", value)
        self.interpreter_globals: dict[str, Any] = {}
        self.codes: set[int] = set()
        self.keep: list[Any] = []  # the code objects counted by id stay alive
        for name in MAKERS:
            module = sys.modules.get(name)
            if module is not None:
                self.codes |= _codes(module)
                self.keep.append(module)

    def _inside(self, label: str, value: Any, depth: int = 0) -> None:
        """What a module or class holds in place, watched for code: a dict's entries (a red team put its own `float`
        into CodeGenerator.builtin_namespace, which the code generator calls at compile time), a library object's
        attributes and theirs, one level down (`interpreter_builder.create_exp` set on the instance;
        `knobs.runtime.add_stages_inspection_hook`, a hook that rewrote the PTX). Only what holds code is compared
        there: their data (caches, a builder's program index, knob values) changes as they run."""
        if label in SKIP or id(value) in self.held or value is sys.modules or id(value) in self.module_dicts:
            return  # a module's own names (a jit function's __globals__) are its space already
        if isinstance(value, dict):
            self.held.add(id(value))
            self.spaces[label] = (value, dict(value))
            self.code_only.add(label)
        elif (not isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType))
              and isinstance(getattr(value, "__dict__", None), dict)
              and (type(value).__module__ or "").split(".")[0] in ROOTS):
            self.held.add(id(value))
            self.spaces[label] = (value, dict(vars(value)))
            self.code_only.add(label)
            if depth < 1:
                for attr, inner in list(vars(value).items()):
                    self._inside(f"{label}.{attr}", inner, depth + 1)

    def _interpreters(self, value: Any) -> bool:
        """What the interpreter (or this harness's patch of it) puts in a name while it runs a kernel."""
        if value is builtins.print:  # tl.static_print
            return True
        if isinstance(value, property):  # tensor.T
            value = value.fget
        fn = value.func if isinstance(value, functools.partial) else value
        code = getattr(fn, "__code__", None)
        return isinstance(code, types.CodeType) and id(code) in self.codes and isinstance(fn, types.FunctionType)

    def changed(self, interpreted: bool) -> list[str]:
        """The names added or holding another value since the snapshot (a removed name fails both builds alike)."""
        out = []
        for label, (space, then) in self.spaces.items():
            now = space if isinstance(space, dict) else vars(space)
            ids = self.ids.get(label)
            if ids is None:
                ids = self.ids[label] = (list(then), list(map(id, then.values())))
            if list(now) == ids[0] and list(map(id, now.values())) == ids[1]:
                continue  # unchanged (the snapshot holds every value, so an id is not reused): the common case, fast
            module = isinstance(space, types.ModuleType)
            for name, value in list(now.items()):
                if then.get(name, _MISSING) is value or (interpreted and self._interpreters(value)):
                    continue
                if label in self.code_only and not (callable(value) or isinstance(value, types.ModuleType)):
                    continue
                if module and value is sys.modules.get(f"{label}.{name}"):
                    continue  # a submodule imported since, bound in its package
                # the interpreter runs a jit function of Triton's (tl.sum) in that module's globals, first copying in
                # its own module's globals where a name is free (FunctionRewriter._compile_and_exec)
                if interpreted and module and value is self.interpreter_globals.get(name, _MISSING):
                    continue
                # the interpreter's restore of a name it patched on a class sets what the class inherited
                if isinstance(space, type) and value is _inherited(space.__mro__[1:], name):
                    continue
                if isinstance(value, RUNTIME_SET.get(name, ())):
                    continue
                fn = value.fget if isinstance(value, property) else value
                code = getattr(getattr(fn, "func", fn), "__code__", None)
                at = f" (code at {code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})" if code else ""
                out.append(f"{label}.{name}{at}")
        return out

    def check(self, where: str, interpreted: bool) -> None:
        changed = self.changed(interpreted)
        if changed:
            names = ", ".join(changed[:4]) + (f" (+{len(changed) - 4} more)" if len(changed) > 4 else "")
            raise NamespaceChanged(
                f"the kernel added or replaced {names} ({where}): on a CPU the verdict is the interpreter's and the "
                "GPU runs the compiled build, and Triton's or numpy's names holding the file's own Python or values "
                "could make them differ")


_taken: list[Namespaces] = []


def take(fresh: bool = False) -> Namespaces:
    """Once per process, before the candidate's import (TritonWorker.before_run, install_compile_capture). `fresh`:
    again, for a trusted process that installs the compile capture more than once (a worker installs it once)."""
    if fresh:
        _taken.clear()
    if not _taken:
        _taken.append(Namespaces())
    return _taken[0]


def check(where: str, interpreted: bool) -> None:
    if _taken:
        _taken[0].check(where, interpreted)


def install_interpreter_checks() -> None:
    """In an interpreter worker, after this harness's patches and before the candidate's import: take the names,
    and check them as the interpreter patches the language for a launch (after the pre-run hooks) and once the grid
    function has run (`set_grid_dim`, just before the programs). Not at the nested jit calls inside the programs
    (0.25 ms a check, two calls a softmax program): nothing of the candidate's but jit bodies runs there."""
    from triton.runtime import interpreter as interp

    if getattr(interp, "_kernel_harness_namespaces", False):
        return
    patch_lang, builder, executor_call = interp._patch_lang, interp.interpreter_builder, interp.GridExecutor.__call__
    set_grid_dim = builder.set_grid_dim
    programs = {"running": False, "grid_is_code": True}

    def checked_patch_lang(fn: Any) -> Any:
        if not programs["running"]:
            check("as the interpreter patches the language for a launch", interpreted=True)
        return patch_lang(fn)

    def checked_set_grid_dim(*grid: Any) -> Any:
        if programs["grid_is_code"]:  # only a grid function runs code between the launch's check and here
            check("after the grid function, before the programs run", interpreted=True)
        programs["running"] = True
        return set_grid_dim(*grid)

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        programs["running"], programs["grid_is_code"] = False, callable(getattr(self, "grid", None))
        try:
            return executor_call(self, *args, **kwargs)
        finally:
            programs["running"] = False

    interp._patch_lang = checked_patch_lang
    builder.set_grid_dim = checked_set_grid_dim
    interp.GridExecutor.__call__ = launch
    interp._kernel_harness_namespaces = True
    # taken with these in; and what the interpreter copies into a module it runs a jit function in
    take().interpreter_globals = dict(vars(interp))
