"""Triton's CPU interpreter patches triton.language for a call of a @jit helper in a fraction of the time.

The interpreter swaps the language's builtins (tl.load, tl.exp, tensor.__add__, ...) for its own versions at each
launch, and again at each call of a @jit function from inside a kernel (`InterpretedFunction.__call__` calls
`_patch_lang`): `tl.max` and `tl.sum` are such functions, so a softmax program pays two more full patches. Each
patch walks triton.language, tl.core, the tensor class and tl.math with `inspect.getmembers` (every name, sorted,
then `is_builtin` on each value) to find the builtins: 11.2 of 24.0 s under cProfile for the softmax demo's 21 test
inputs on this project's 2-core CPU, the same walk on every call. Without the walk those 21 calls took 4.1 s
instead of 6.7 s (Triton 3.9).

Here the walk is made once, at install, before any candidate's code runs: a later patch looks up only the names
found builtin then and patches each that is a builtin at that moment, as the walk would. (A nested call's patch is
never undone in Triton 3.9: builtins it replaced stay replaced, so a name missed at install because an earlier
launch had replaced it needs no patch later either.) A package not seen at install, one holding a builtin under a
name added since (a candidate can register one: `tl.core._tensor_member_fn`) is walked as before; a Triton whose
`_patch_builtin` takes other arguments is left as it is. Which builtins a call patches, and how (the interpreter's
own `_patch_attr`), stay Triton's: tests/test_interp_patch_cache.py compares the changes both make. One thing is
added: a builtin whose code is not Triton's (the kernel's own, which `_semantic` would let tell the interpreter from
the compiler) is refused with ForeignBuiltin instead of patched.
"""
from __future__ import annotations

import inspect
import os
from typing import Any

from rungs.core.code_origin import code_files, package_dir

_MARKER = "_kernel_harness_builtin_names"


def install() -> bool:
    """Make `_patch_builtin` look up the builtins found at install. Idempotent. False where this Triton's
    interpreter is not the one it was written for (it is then left as it is: slower, not different)."""
    import triton.language as tl
    from triton.runtime import interpreter as interp

    if getattr(interp, _MARKER, False):
        return True
    walk, patch_attr = getattr(interp, "_patch_builtin", None), getattr(interp, "_patch_attr", None)
    is_builtin = getattr(tl.core, "is_builtin", None)
    if not (callable(walk) and callable(patch_attr) and callable(is_builtin)):
        return False
    params = list(inspect.signature(walk).parameters)
    if params not in (["pkg", "builder"], ["pkg", "builder", "scope"]):  # 3.6 and 3.9
        return False
    packages = [tl, tl.core, tl.tensor, tl.core.tensor, tl.math, getattr(tl.core, "tensor_descriptor_base", None)]
    known: dict[int, tuple[Any, tuple[str, ...], set[str]]] = {}
    for pkg in packages:
        if pkg is not None:
            builtins = tuple(name for name, member in inspect.getmembers(pkg) if is_builtin(member))
            known[id(pkg)] = (pkg, builtins, _names(pkg))

    triton_dir = package_dir("triton") or os.sep.join(["", "no", "triton", ""])
    vetted: dict[int, Any] = {}

    def vet(member: Any) -> None:
        # A builtin is handed `_semantic`, the interpreter's here and the compiler's in the build: one of the
        # kernel's own could tell them apart and compute differently (red team 2026-12-06). Only Triton's own code.
        if vetted.get(id(member)) is member:
            return
        where = next((f for f in code_files(member) if f is None or not f.startswith(triton_dir)), "")
        if where != "":
            raise ForeignBuiltin(f"a Triton builtin defined outside Triton ({getattr(member, '__qualname__', member)!s:.80}"
                                 f" in {where}): it is handed the interpreter's semantics here and the compiler's "
                                 "in the build, so what it computes here is not what the GPU runs")
        vetted[id(member)] = member

    def patch_builtin(pkg: Any, builder: Any, *scope: Any) -> None:
        seen = known.get(id(pkg))
        # A name added since install that holds a builtin (a candidate's `tl.core._tensor_member_fn` of its own, red
        # team 2026-12-06: left unpatched, it ran its no-`_semantic` branch here and another on the GPU): walked.
        if (seen is None or seen[0] is not pkg
                or any(is_builtin(getattr(pkg, name, None)) for name in _names(pkg) - seen[2])):
            names: tuple[str, ...] = tuple(name for name, _ in inspect.getmembers(pkg))  # Triton's own walk
        else:
            names = seen[1]
        for name in names:
            member = getattr(pkg, name, None)
            if is_builtin(member):
                vet(member)
                patch_attr(pkg, name, member, builder, *scope)

    interp._patch_builtin = patch_builtin
    setattr(interp, _MARKER, True)
    return True


class ForeignBuiltin(RuntimeError):
    """A Triton builtin whose code is not Triton's (the kernel's own): refused in the interpreter."""


def _names(pkg: Any) -> set[str]:
    """Every name `inspect.getmembers` would look at: a module's own, a class's along its MRO."""
    if isinstance(pkg, type):
        return {name for klass in pkg.__mro__ for name in vars(klass)}
    return set(vars(pkg))
