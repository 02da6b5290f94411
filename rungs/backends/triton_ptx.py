"""Where Triton's CPU interpreter trusted or computed what the compiled build does not: made to match the sm_90a build.

A kernel is judged on a CPU by the interpreter and built for the GPU by the compiler; where the two differ, a kernel can
branch on the difference and be honest here and wrong there (red team 3, 2026-12-05, each read from the PTX of the
build and the PTX ISA's rules):
- hints: `tl.multiple_of`, `tl.max_contiguous`, `tl.max_constancy` are promises the compiler builds on (16-byte
  vector loads and stores, one predicate for a group of elements) and the interpreter ignored. A false one gave exact
  results here and, on the GPU, misaligned `ld.global.v4` and a store past the row. Each is now checked against the
  values it is made on, and a false one fails the run: on a GPU it is undefined behaviour.
- `tl.sqrt`, `tl.rsqrt` and `tl.exp2` compile to `sqrt.approx.ftz`, `rsqrt.approx.ftz`, `ex2.approx.ftz`: a subnormal
  input or result is flushed to zero there. numpy kept it (sqrt(1e-40) = 1e-20 here, 0 on the GPU).
- conversions to float8 (e4m3 `float8e4nv`, e5m2 `float8e5`) compile to `cvt.rn.satfinite`: rounded to nearest even and
  clamped to the largest finite value (1000 -> 448). The interpreter truncated and overflowed (1000 -> 256).
- `tl.exp` on float32 is built as `ex2.approx.f32` of `x * log2(e)` rounded to float32 (red team 4).
- the build fuses a float32 product into the add that takes it (fma.rn.f32, one rounding): so does the interpreter.
Not matched (docs/threat-model.md): the last bits of approximate instructions (ex2, div.full), which of two products
the compiler fuses where it could fuse either, and integer division by zero (unspecified on the GPU). A kernel that branches on a last-bit difference still passes here and runs other code on a GPU.
"""
from __future__ import annotations

from typing import Any

import numpy as np

_MARKER = "_kernel_harness_ptx"
_FP8 = {"fp8e4nv": (3, -6, 448.0), "fp8e5": (2, -14, 57344.0)}
"""Triton's names for the float8 types sm_90a converts to: mantissa bits, smallest normal exponent, largest finite."""


class FalseHint(ValueError):
    """A compiler hint the values it was made on do not keep."""


def install() -> None:
    """Patch the interpreter in this process. Idempotent; installed after rungs.backends.triton_interp.install()."""
    from triton.runtime import interpreter as interp

    builder, handle = interp.InterpreterBuilder, interp.TensorHandle
    if getattr(builder, _MARKER, False):
        return
    set_attr = handle.set_attr

    def checked_set_attr(self: Any, key: str, value: Any) -> None:
        check_hint(self, key, value)
        set_attr(self, key, value)

    for name in ("create_sqrt", "create_rsqrt", "create_exp2"):
        setattr(builder, name, _flushing(getattr(builder, name), handle))
    builder.create_exp = _exp_as_built(builder.create_exp, handle)
    _fuse_multiply_adds(builder, handle)
    builder.create_fp_to_fp = _to_fp8(builder.create_fp_to_fp, interp)
    handle.set_attr = checked_set_attr
    setattr(builder, _MARKER, True)


def _ftz(a: np.ndarray) -> np.ndarray:
    if a.dtype != np.float32:
        return a
    return np.where(np.abs(a) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), a), a).astype(np.float32)


def _flushing(op: Any, make: Any) -> Any:
    def flushed(self: Any, arg: Any) -> Any:
        out = op(self, make(_ftz(arg.data), arg.dtype.scalar))
        return make(_ftz(out.data), out.dtype.scalar)

    flushed.__name__ = getattr(op, "__name__", "flushed")
    return flushed


def _fp32(h: Any) -> bool:
    return getattr(h.dtype.scalar, "name", "") == "fp32" and np.asarray(h.data).dtype == np.float32


def _fuse_multiply_adds(builder: Any, make: Any) -> None:
    """The build contracts a float32 product into the add or subtract that takes it (TRITON_DEFAULT_FP_FUSION=1, as
    the sandbox sets it; NVPTX fuses a product even with several uses): fma.rn.f32, one rounding, where numpy rounds
    twice, and `x*x - (1 + 2**-11)` at x = 1 + 2**-12 was 0 here and 2**-24 on the GPU (red team 4, 2026-12-05). A
    product remembers its operands; an add or subtract of it is computed exactly in float64 and rounded once. Where
    both operands are products, the first is fused, as LLVM's combiner tries it first."""
    fmul, fadd, fsub = builder.create_fmul, builder.create_fadd, builder.create_fsub

    def product(h: Any) -> tuple[np.ndarray, np.ndarray] | None:
        return getattr(h, "_kh_product", None)

    def create_fmul(self: Any, lhs: Any, rhs: Any) -> Any:
        out = fmul(self, lhs, rhs)
        if _fp32(lhs) and _fp32(rhs):
            try:
                out._kh_product = (np.asarray(lhs.data), np.asarray(rhs.data))
            except AttributeError:  # a TensorHandle with slots: no fusion
                pass
        return out

    def fused(self: Any, lhs: Any, rhs: Any, sign: float, op: Any) -> Any:
        if not (_fp32(lhs) and _fp32(rhs)):
            return op(self, lhs, rhs)
        left, right = product(lhs), product(rhs)
        with np.errstate(all="ignore"):
            if left is not None:  # a*b + c, a*b - c
                exact = left[0].astype(np.float64) * left[1] + sign * rhs.data.astype(np.float64)
            elif right is not None:  # c + a*b, c - a*b
                exact = lhs.data.astype(np.float64) + sign * (right[0].astype(np.float64) * right[1])
            else:
                return op(self, lhs, rhs)
            return make(exact.astype(np.float32), lhs.dtype.scalar)

    builder.create_fmul = create_fmul
    builder.create_fadd = lambda self, lhs, rhs: fused(self, lhs, rhs, 1.0, fadd)
    builder.create_fsub = lambda self, lhs, rhs: fused(self, lhs, rhs, -1.0, fsub)


def _exp_as_built(op: Any, make: Any) -> Any:
    """tl.exp on float32 is built as ex2.approx.f32(fl32(x * fl32(log2 e))): the product's rounding moves exp(88.66) by
    30 ulp, and a kernel compared against a value between numpy's exp and the build's (red team 4, 2026-12-05).
    Computed the same way here (ex2.approx's own error, about 2 ulp, is not modelled; no flush: no .ftz there)."""
    def create_exp(self: Any, arg: Any) -> Any:
        if np.asarray(arg.data).dtype != np.float32:
            return op(self, arg)
        with np.errstate(over="ignore", under="ignore"):
            t = (np.asarray(arg.data, dtype=np.float32) * np.float32(1.4426950408889634)).astype(np.float32)
            return make(np.exp2(t.astype(np.float64)).astype(np.float32), arg.dtype.scalar)

    return create_exp


def _to_fp8(op: Any, interp: Any) -> Any:
    def create_fp_to_fp(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        source = getattr(src.dtype.scalar, "name", "")
        if source in _FP8 and dst_type.scalar.primitive_bitwidth >= 16:  # decoded as the GPU does: 0x7F is NaN
            values = _fp8_table(source)[np.asarray(src.data).view(np.uint8)]
            return interp.TensorHandle(values.astype(interp._get_np_dtype(dst_type)), dst_type.scalar)
        target = _FP8.get(getattr(dst_type.scalar, "name", ""))
        if target is None or src.dtype.scalar.primitive_bitwidth < 16:
            return op(self, src, dst_type, rounding_mode)
        # Rounded to nearest even on the float8 grid and clamped here, in numpy (the worker's op trace would take
        # torch for the candidate's); the exact value then goes through the interpreter's own encoding, which only
        # truncates what is not on the grid.
        import triton.language as tl

        mantissa, min_exp, limit = target
        x = np.asarray(src.data, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            exp = np.maximum(np.floor(np.log2(np.abs(x))), min_exp)
            ulp = np.exp2(np.where(np.isfinite(exp), exp, min_exp) - mantissa)
            q = np.where(np.isnan(x), x, np.clip(np.rint(np.where(np.isfinite(x), x, np.sign(x) * limit) / ulp) * ulp,
                                                 -limit, limit))
        out = op(self, interp.TensorHandle(q.astype(np.float32), tl.float32), dst_type, rounding_mode)
        nan = np.isnan(x)
        if nan.any():  # the interpreter's own encoding makes NaN a number (384 in e4m3); 0x7F is NaN in both
            bits = np.array(out.data, copy=True)
            bits.view(np.uint8)[nan.reshape(bits.shape)] = 0x7F
            out = interp.TensorHandle(bits, dst_type.scalar)
        return out

    return create_fp_to_fp


def _fp8_table(name: str) -> np.ndarray:
    """The float32 value of each of the 256 codes of e4m3 (no infinities, S.1111.111 is NaN) or e5m2 (IEEE-like)."""
    mantissa, min_exp, _ = _FP8[name]
    bias = 1 - min_exp
    top = (1 << (7 - mantissa)) - 1  # the largest exponent code
    b = np.arange(256)
    sign = np.where(b >> 7, -1.0, 1.0)
    e, m = (b >> mantissa) & top, b & ((1 << mantissa) - 1)
    value = np.where(e == 0, m / (1 << mantissa) * 2.0 ** min_exp, (1 + m / (1 << mantissa)) * np.exp2(e - bias))
    if name == "fp8e4nv":
        value = np.where((e == top) & (m == (1 << mantissa) - 1), np.nan, value)
    else:
        value = np.where(e == top, np.where(m == 0, np.inf, np.nan), value)
    return (sign * value).astype(np.float32)


def check_hint(handle: Any, key: str, value: Any) -> None:
    """Raise FalseHint where `key` (tt.divisibility, tt.contiguity, tt.constancy) does not hold for the handle's values:
    divisibility, of the first value of every run of consecutive values (an address in bytes for a pointer);
    contiguity, runs of that many consecutive values from every aligned start; constancy, equal values in every
    aligned group. Along each dimension, groups are capped at its size."""
    if key not in ("tt.divisibility", "tt.contiguity", "tt.constancy"):
        return
    data = np.asarray(handle.data)
    ty = handle.dtype
    step = 1
    if getattr(ty, "is_ptr", lambda: False)():
        step = max(int(getattr(ty.element_ty, "primitive_bitwidth", 8)) // 8, 1)
    if data.dtype.kind not in "iub":
        return  # floats: no hint applies
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    data = data.astype(np.int64) if data.dtype.kind != "u" else data.astype(np.uint64)
    what = {"tt.divisibility": "tl.multiple_of", "tt.contiguity": "tl.max_contiguous",
            "tt.constancy": "tl.max_constancy"}[key]
    if data.ndim == 0 or data.size == 1:
        if key == "tt.divisibility" and int(data.reshape(-1)[0]) % int(values[0]) != 0:
            raise FalseHint(f"{what}(..., {values[0]}) is false: the value is {int(data.reshape(-1)[0])}; the "
                            "compiled build trusts it (aligned vector accesses), so on a GPU this is undefined")
        return
    for dim, v in enumerate(values[:data.ndim]):
        v = int(v)
        if v <= 1:
            continue
        moved = np.moveaxis(data, dim, -1)
        n = moved.shape[-1]
        g = min(v, n)
        diffs = np.diff(moved, axis=-1).astype(np.int64)
        if key == "tt.divisibility":
            starts = np.ones(moved.shape, dtype=bool)
            starts[..., 1:] = diffs != step
            bad = starts & (moved % v != 0)
        else:  # within each aligned group: steps of one element (contiguity) or none (constancy)
            joins = np.ones(diffs.shape, dtype=bool)
            joins[..., (np.arange(1, n) % g) == 0] = False  # a group's first element may start anywhere
            bad = np.zeros(moved.shape, dtype=bool)
            bad[..., 1:] = joins & (diffs != (step if key == "tt.contiguity" else 0))
        if bad.any():
            at = [int(i) for i in np.argwhere(bad)[0]]
            raise FalseHint(f"{what}(..., {values}) is false along dimension {dim} (at index {at} of the values "
                            "moved to that axis); the compiled build trusts it (vector accesses, one predicate a "
                            "group), so on a GPU this is undefined: drop the hint or make it true")
