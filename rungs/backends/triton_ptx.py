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
- the build fuses a float16, bfloat16, float32 or float64 product into the add that takes it (fma.rn, one rounding), also
  through a splat, broadcast, reshape, transpose or negation of the product, unless the launch says
  `enable_fp_fusion=False` (or the knob's default is off): so does the interpreter, with its own exact fma
  (red team 4, 2026-12-05; float16, float64, splat and the launch option: red team of 2026-12-07).
- `tl.floor`, `tl.ceil` compile to `cvt.rmi.ftz` / `cvt.rpi.ftz`, and `tl.sin`, `tl.cos`, `tl.erf` to libdevice
  linked with flush-to-zero (`abs.ftz`, `mul.rn.ftz` on the input): a subnormal input is zero there (ceil(1e-44)
  is 0 on the GPU, 1 in numpy).
Not matched (docs/threat-model.md): the last bits of approximate instructions (ex2, div.full, libdevice's sin, cos,
log), the order in which a reduction or scan adds (numpy's pairwise sum against the build's per-thread, warp-shuffle
and shared-memory tree, which depends on the layout), which of two products the compiler fuses where it could fuse
either, and integer division by zero (unspecified on the GPU). A kernel that branches on such a last-bit difference
still passes here and runs other code on a GPU: a CPU verdict is the interpreter's, a GPU verdict the build's.
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

    for name in ("create_sqrt", "create_rsqrt", "create_exp2", "create_floor", "create_ceil", "create_sin",
                 "create_cos", "create_erf"):
        setattr(builder, name, _flushing(getattr(builder, name), handle))
    builder.create_exp = _exp_as_built(builder.create_exp, handle)
    _fuse_multiply_adds(builder, handle)
    _fusion_per_launch(interp)
    interp._implicit_cvt = _float_args_as_fp32(interp._implicit_cvt, interp)
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


_FUSABLE = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "bf16": np.float32}
"""Triton's float types the build fuses (fma.rn.f16/.f32/.f64/.bf16), with how the interpreter holds each (bfloat16 as
float32 arrays of bfloat16 values: rungs/backends/triton_interp.py)."""
_fusion = [True]
"""Whether the launch being interpreted lets the build fuse (its `enable_fp_fusion`, else Triton's default)."""


def _fusable(lhs: Any, rhs: Any) -> bool:
    name = getattr(lhs.dtype.scalar, "name", "")
    want = _FUSABLE.get(name)
    return (want is not None and getattr(rhs.dtype.scalar, "name", "") == name
            and np.asarray(lhs.data).dtype == want and np.asarray(rhs.data).dtype == want)


def _fuse_multiply_adds(builder: Any, make: Any) -> None:
    """The build contracts a float product into the add or subtract that takes it (TRITON_DEFAULT_FP_FUSION=1, as
    the sandbox sets it; NVPTX fuses a product even with several uses): fma.rn.f16/f32/f64, one rounding, where numpy
    rounds twice, and `x*x - (1 + 2**-11)` at x = 1 + 2**-12 was 0 here and 2**-24 on the GPU (red team 4,
    2026-12-05). A product remembers its operands, through the splat, broadcast, expand_dims, reshape, transpose or
    negation that brings it to the add (LLVM fuses through them: `a * a - tl.full([B], c)` splats a scalar product,
    red team 2026-12-07); the add or subtract of it is the interpreter's own fma (exact: Triton 3.9 computes float32
    and float64 fmas in C++). Where both operands are products, the first is fused, as LLVM's combiner tries it first."""
    fmul, fadd, fsub, fneg = builder.create_fmul, builder.create_fadd, builder.create_fsub, builder.create_fneg

    def remember(out: Any, operands: tuple[np.ndarray, np.ndarray] | None) -> Any:
        if operands is not None:
            try:
                out._kh_product = operands
            except AttributeError:  # a TensorHandle with slots: no fusion
                pass
        return out

    def product(h: Any) -> tuple[np.ndarray, np.ndarray] | None:
        return getattr(h, "_kh_product", None)

    def create_fmul(self: Any, lhs: Any, rhs: Any) -> Any:
        out = fmul(self, lhs, rhs)
        if _fusable(lhs, rhs):
            a, b = np.broadcast_arrays(np.asarray(lhs.data), np.asarray(rhs.data))
            remember(out, (a, b))
        return out

    def fused(self: Any, lhs: Any, rhs: Any, sign: float, op: Any) -> Any:
        if not (_fusion[0] and _fusable(lhs, rhs)):
            return op(self, lhs, rhs)
        left, right = product(lhs), product(rhs)
        kind = lhs.dtype.scalar
        if left is not None:  # a*b + c, a*b - c
            a, b, c = left[0], left[1], rhs.data if sign > 0 else -np.asarray(rhs.data)
        elif right is not None:  # c + a*b, c - a*b
            a, b, c = (right[0] if sign > 0 else -right[0]), right[1], lhs.data
        else:
            return op(self, lhs, rhs)
        a, b, c = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(c))
        if getattr(kind, "name", "") == "bf16":
            return make(_fma_bf16(a, b, c), kind)
        with np.errstate(all="ignore"):
            return self.create_fma(make(np.ascontiguousarray(a), kind), make(np.ascontiguousarray(b), kind),
                                   make(np.ascontiguousarray(c), kind))

    def carried(op: Any, shape_of: Any) -> Any:
        """`op` (a shape change, or a negation) of a product is still a product, of its operands changed alike."""
        def moved(self: Any, *args: Any) -> Any:
            out = op(self, *args)
            arg = next((a for a in args if hasattr(a, "data")), None)
            operands = product(arg) if arg is not None else None
            if operands is not None:
                try:
                    remember(out, shape_of(operands, np.asarray(out.data).shape, args))
                except ValueError:  # operands that do not follow the change: no fusion
                    pass
            return out

        moved.__name__ = getattr(op, "__name__", "moved")
        return moved

    def to_shape(ops: tuple[np.ndarray, np.ndarray], shape: tuple[int, ...], _: Any) -> tuple[np.ndarray, ...]:
        return tuple(np.broadcast_to(np.asarray(x).reshape(()) if np.asarray(x).size == 1 and len(shape) != np.ndim(x)
                                     else np.asarray(x), shape) for x in ops)

    def reshaped(ops: tuple[np.ndarray, np.ndarray], shape: tuple[int, ...], _: Any) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(x).reshape(shape) for x in ops)

    def transposed(ops: tuple[np.ndarray, np.ndarray], shape: tuple[int, ...], args: Any) -> tuple[np.ndarray, ...]:
        return tuple(np.transpose(x, args[1]) for x in ops)

    def expanded(ops: tuple[np.ndarray, np.ndarray], shape: tuple[int, ...], args: Any) -> tuple[np.ndarray, ...]:
        return tuple(np.expand_dims(x, args[1]) for x in ops)

    builder.create_fmul = create_fmul
    builder.create_fadd = lambda self, lhs, rhs: fused(self, lhs, rhs, 1.0, fadd)
    builder.create_fsub = lambda self, lhs, rhs: fused(self, lhs, rhs, -1.0, fsub)
    builder.create_splat = carried(builder.create_splat, to_shape)
    builder.create_broadcast = carried(builder.create_broadcast, to_shape)
    builder.create_expand_dims = carried(builder.create_expand_dims, expanded)
    builder.create_reshape = carried(builder.create_reshape, reshaped)
    builder.create_trans = carried(builder.create_trans, transposed)
    builder.create_fneg = carried(fneg, lambda ops, shape, _: (-np.asarray(ops[0]), ops[1]))


def _fma_bf16(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """fma.rn.bf16: a*b + c of bfloat16 values rounded once to bfloat16, as float32. The product is exact in float64
    (16 significant bits); the sum is rounded to odd in float64 and then in float32 (the sticky bit kept: round to
    odd with two or more spare bits, then to nearest, is one correct rounding), then to nearest-even bfloat16. An fma in
    float32 would round twice: (1 + 2**-4)**2 + 2**-40 sits just above a bfloat16 halfway point."""
    from rungs.backends.triton_interp import round_to_bf16

    with np.errstate(all="ignore"):
        p, c = a.astype(np.float64) * b.astype(np.float64), c.astype(np.float64)
        s = p + c
        back = s - p
        err = (p - (s - back)) + (c - back)  # s + err == p + c exactly (TwoSum)
        s = _to_odd(s, err)
        s32 = s.astype(np.float32)
        s32 = _to_odd(s32, s - s32.astype(np.float64))
        return round_to_bf16(s32).astype(np.float32)


def _to_odd(x: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """x, the nearest value to x + rest in its type, moved to the neighbour with an odd last bit where rest is
    nonzero and x's last bit is even: x + rest rounded to odd."""
    bits = x.view(np.int64 if x.dtype == np.float64 else np.int32)
    fix = (rest != 0) & np.isfinite(x) & np.isfinite(rest) & ((bits & 1) == 0)
    toward = np.where(rest > 0, np.inf, -np.inf).astype(x.dtype)
    return np.where(fix, np.nextafter(x, toward), x).astype(x.dtype)


def _fusion_per_launch(interp: Any) -> None:
    """Fuse only where the build would: a launch's `enable_fp_fusion=False` (or Triton's default, off) makes the
    build keep every product and add apart; the interpreter drops the option before it runs the body, so it is read
    here, around each launch (red team 2026-12-07: a kernel launched with fusion off passed, fused here only)."""
    call = interp.GridExecutor.__call__

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        default = True
        try:
            import triton

            default = bool(triton.knobs.language.default_fp_fusion)
        except (ImportError, AttributeError):  # an older Triton: its environment variable
            import os

            default = os.environ.get("TRITON_DEFAULT_FP_FUSION", "1") == "1"
        before = _fusion[0]
        _fusion[0] = bool(kwargs.get("enable_fp_fusion", default))
        try:
            return call(self, *args, **kwargs)
        finally:
            _fusion[0] = before

    launch.__name__ = getattr(call, "__name__", "__call__")
    interp.GridExecutor.__call__ = launch


def _float_args_as_fp32(convert: Any, interp: Any) -> Any:
    """A Python float handed to a launch is an fp32 argument of the build (Triton types it `fp32`), and `s * s` there
    is mul.f32 on fp32(s); the interpreter kept the Python float, so the same line was a float64 product rounded once
    (0.1 * 0.1: 0.0099999998 here, 0.010000001 built; red team of 2026-12-07). Now it is an fp32 scalar here too."""
    import triton.language as tl

    def implicit_cvt(arg: Any) -> Any:
        if type(arg) is float:
            with np.errstate(over="ignore"):  # past float32's range: inf, as the build's argument is
                return tl.tensor(interp.interpreter_builder.get_fp32(arg), tl.float32)
        return convert(arg)

    implicit_cvt.__name__ = getattr(convert, "__name__", "_implicit_cvt")
    return implicit_cvt


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
