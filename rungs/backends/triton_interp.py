"""Make Triton's CPU interpreter (TRITON_INTERPRET=1) compute bfloat16, and float32 `tl.dot`, like a GPU.

The interpreter keeps every tensor as a numpy array, and numpy has no bfloat16, so it stores bf16 as the raw
uint16 bit patterns. Its arithmetic, `tl.dot`, comparisons, reductions and math functions then work on those
integers and return garbage (triton-lang/triton issues 11584 and 11604), which would make every bf16 task fail
its correctness rung on a machine without a GPU.

`install()` changes where the bits live instead of patching every op: inside the interpreter a bf16 tensor is a
float32 array holding bf16-representable values, so every numpy op computes in float32 as a GPU does. Each
TensorHandle built with dtype bf16 rounds its data to nearest-even bf16, which is the rounding a GPU applies to a
bf16 result. Only the places that touch bf16 *bits* need their own code: loads and stores, bitcasts, fabs (a
sign-bit mask), conversions to and from fp8 or with a non-default rounding mode, and atomics (refused).

`tl.dot` on float32 operands: the interpreter multiplies them exactly (np.matmul) whatever `input_precision` says,
while on an NVIDIA GPU the default ("tf32") runs on TF32 tensor cores, so a kernel passed a tight float32 tolerance
here and missed it on the H200 by TF32's rounding (rel_l2 about 3e-4). The patched `create_dot` computes what the
compiled code does. With input_precision tf32 each float32 operand is rounded to TF32's 10 mantissa bits: Triton
emits no conversion (the sm_90a SASS is HGMMA/HMMA ...F32.TF32 straight on the float32 data), and what the H200
reported matches rounding to nearest, not truncation: issue 39's 9_gemm_scale_tanh gave rel_l2 3.0e-4 there; this
emulation gives 3.0e-4 rounded, 7.1e-4 truncated, at the file's sizes over three input seeds
(benchmarks/tf32_probe.py compares element by element on a GPU; not run yet). "tf32x3" splits each operand into a
TF32 part and a TF32 remainder (Triton's cvt.rna.tf32.f32) and adds three TF32 products: about float32's accuracy.
"ieee" stays exact. On sm_90a every float32 dot at tf32 or tf32x3 compiles to TF32 matrix instructions (HGMMA where
the tile allows wgmma, HMMA.1688 otherwise), so the interpreter rounds exactly where the dumps show TF32 math.

Written against Triton 3.9. install() checks the parts it replaces before touching anything and runs a small
self-check afterwards, so a Triton whose interpreter changed fails there with a clear error instead of giving
wrong numbers. It also installs on Triton 3.6 (the GPU machine's, where the interpreter is not used).
"""
from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Callable

import numpy as np

# The interpreter's methods this module replaces, with the parameters our replacements rely on. "*" ends a prefix:
# the cache arguments of loads and stores differ between Triton versions (3.6: cache_modifier, eviction_policy;
# 3.9: cache_policy) and are passed through untouched. create_dot_scaled is missing from 3.6 and patched only if there.
_REPLACED_METHODS: dict[str, list[str]] = {
    "create_masked_load": ["self", "ptrs", "mask", "other", "*"],
    "create_masked_store": ["self", "ptrs", "value", "mask", "*"],
    "cast_impl": ["self", "src", "dst_type"],
    "create_fp_to_fp": ["self", "src", "dst_type", "rounding_mode"],
    "create_bitcast": ["self", "src", "dst_type"],
    "create_fabs": ["self", "arg"],
    "create_dot": ["self", "a", "b", "d", "input_precision", "max_num_imprecise_acc"],
    "create_atomic_cas": ["self", "ptr", "cmp", "val", "sem", "scope"],
    "create_atomic_rmw": ["self", "rmwOp", "ptr", "val", "mask", "sem", "scope"],
    "create_dot_scaled": ["self", "lhs", "lhs_scale_handle", "lhs_format_enum", "rhs", "rhs_scale_handle",
                          "rhs_format_enum", "fast_math", "lhs_k_pack", "rhs_k_pack", "acc_handle"],
}
_OPTIONAL_METHODS = {"create_dot_scaled"}
_MARKER = "_kernel_harness_bf16_installed"


class Bf16PatchError(RuntimeError):
    """This Triton's interpreter is not the one the bf16 patch was written for."""


def f32_to_bf16_bits(x: Any) -> np.ndarray:
    """Round to nearest even bf16 and return the bit patterns (uint16); NaN becomes the canonical 0x7FC0."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        x = x.astype(np.float32)
    nan = np.isnan(x)
    # NaN payloads would carry into the sign bit; zero them first, then put a quiet NaN back.
    bits = np.where(nan, np.uint32(0), x.view(np.uint32))
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return np.where(nan, np.uint16(0x7FC0), rounded.astype(np.uint16))


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns to the float32 values they denote (exact)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_to_bf16(x: Any) -> np.ndarray:
    """The nearest-even bf16 value of each element, as float32."""
    return bf16_bits_to_f32(f32_to_bf16_bits(x))


def tf32_round(x: Any) -> np.ndarray:
    """float32 values to the nearest TF32 value (10 mantissa bits; cvt.rna.tf32.f32: ties away from zero), Inf and
    NaN as they are; a finite value that rounds past the largest TF32 becomes Inf, as the instruction's does."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    return np.where(special, bits, (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def tf32_dot(a: np.ndarray, b: np.ndarray, acc: np.ndarray, precision: str) -> np.ndarray:
    """acc + a @ b as a GPU computes it for float32 operands: `precision` "tf32" (tl.dot's default on NVIDIA),
    "tf32x3" or "ieee" (exact float32 products)."""
    if precision == "tf32":
        return np.matmul(tf32_round(a), tf32_round(b), dtype=acc.dtype) + acc
    if precision == "tf32x3":
        with np.errstate(invalid="ignore", over="ignore"):  # Inf - Inf in a remainder: NaN, as on the GPU
            a_big, b_big = tf32_round(a), tf32_round(b)
            a_small, b_small = tf32_round(a - a_big), tf32_round(b - b_big)
            small = np.matmul(a_big, b_small, dtype=acc.dtype) + np.matmul(a_small, b_big, dtype=acc.dtype)
            return np.matmul(a_big, b_big, dtype=acc.dtype) + (small + acc)
    return np.matmul(a, b, dtype=acc.dtype) + acc


def install() -> None:
    """Patch triton.runtime.interpreter in this process so bf16 kernels compute as on a GPU. Idempotent."""
    try:
        import triton
        import triton.language as tl
        from triton.runtime import interpreter as interp
    except ImportError as e:
        raise Bf16PatchError(f"cannot import Triton's interpreter to patch bf16: {e}") from e
    if getattr(interp, _MARKER, False):
        return
    _check_interpreter(interp, tl, triton.__version__)
    patches = _patches(interp, tl)
    originals = [(obj, name, obj.__dict__[name]) for obj, name, _ in patches]
    for obj, name, new in patches:
        setattr(obj, name, new)
    try:
        _self_check(interp, tl)
    except Exception:
        for obj, name, old in originals:
            setattr(obj, name, old)
        raise
    setattr(interp, _MARKER, True)


def _check_interpreter(interp: ModuleType, tl: ModuleType, version: str) -> None:
    """Refuse, before patching anything, an interpreter unlike the one this patch was written against."""
    problems = []
    for name in ("_get_np_dtype", "TensorHandle", "InterpreterBuilder", "_interpreter", "_ir"):
        if name not in vars(interp):
            problems.append(f"triton.runtime.interpreter.{name} is missing")
    if problems:
        raise Bf16PatchError(f"cannot patch bf16 into the interpreter of triton {version}: " + "; ".join(problems))
    builder = interp.InterpreterBuilder
    for name, params in _REPLACED_METHODS.items():
        if name not in vars(builder):
            if name not in _OPTIONAL_METHODS:
                problems.append(f"InterpreterBuilder.{name} is missing")
            continue
        found = list(inspect.signature(vars(builder)[name]).parameters)
        if (found[:len(params) - 1] if params[-1] == "*" else found) != [p for p in params if p != "*"]:
            problems.append(f"InterpreterBuilder.{name} takes {found}, expected {params}")
    precision = getattr(getattr(interp, "_ir", None), "INPUT_PRECISION", None)
    for name in ("TF32", "TF32x3", "IEEE"):
        if not hasattr(precision, name):
            problems.append(f"the interpreter's ir has no INPUT_PRECISION.{name}")
    if "__post_init__" not in vars(interp.TensorHandle):
        problems.append("TensorHandle.__post_init__ is missing")
    for name in ("load", "store"):
        if not hasattr(interp._interpreter, name):
            problems.append(f"the interpreter's C++ module has no {name}()")
    if not problems and interp._get_np_dtype(tl.bfloat16) != np.dtype(np.uint16):
        # The whole patch assumes bits stored as uint16; a Triton that changed this needs a fresh look, not this patch.
        problems.append(f"the interpreter stores bf16 as {interp._get_np_dtype(tl.bfloat16)}, not uint16 bits")
    if problems:
        raise Bf16PatchError(f"cannot patch bf16 into the interpreter of triton {version}: " + "; ".join(problems))


def _patches(interp: ModuleType, tl: ModuleType) -> list[tuple[object, str, Callable[..., Any]]]:
    TensorHandle = interp.TensorHandle
    builder = interp.InterpreterBuilder
    orig = {name: vars(builder)[name] for name in _REPLACED_METHODS if name in vars(builder)}
    orig_np_dtype = interp._get_np_dtype
    orig_post_init = interp.TensorHandle.__post_init__
    bf16 = tl.bfloat16

    def is_bf16(ty: Any) -> bool:
        # .scalar is the element type of a block and the type itself otherwise; a pointer to bf16 is not bf16.
        return isinstance(ty, tl.dtype) and ty.scalar == bf16

    def get_np_dtype(tt_dtype: Any) -> np.dtype:
        return np.dtype(np.float32) if is_bf16(tt_dtype) else orig_np_dtype(tt_dtype)

    def post_init(self: Any) -> None:
        if not is_bf16(self.dtype):
            return orig_post_init(self)
        kind = self.data.dtype.kind
        if kind == "f":
            # The one place results become bf16: computed in float32, rounded once, as on a GPU.
            self.data = round_to_bf16(self.data)
        elif kind in "iu":
            raise TypeError("a bf16 tensor reached the interpreter as raw integer bits: a code path the bf16 patch "
                            "(rungs/backends/triton_interp.py) does not cover")
        # kind "b": comparisons of bf16 operands carry the operands' dtype on bool data; nothing to round.

    # The replacements below keep the interpreter's own (unannotated) signatures.
    def create_masked_load(self, ptrs, mask, other, *cache_and_volatile, **kw):
        if not is_bf16(ptrs.get_element_ty()):
            return orig["create_masked_load"](self, ptrs, mask, other, *cache_and_volatile, **kw)
        other_bits = np.zeros_like(ptrs.data, dtype=np.uint16) if other is None else f32_to_bf16_bits(other.data)
        bits = interp._interpreter.load(ptrs.data, mask.data, other_bits, np.dtype(np.uint16))
        return TensorHandle(bf16_bits_to_f32(bits), bf16)

    def create_masked_store(self, ptrs, value, mask, *cache, **kw):
        if not is_bf16(ptrs.get_element_ty()):
            return orig["create_masked_store"](self, ptrs, value, mask, *cache, **kw)
        return interp._interpreter.store(ptrs.data, f32_to_bf16_bits(value.data), mask.data)

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar.is_floating() and dst_type.scalar.is_int() \
                and dst_type.scalar.primitive_bitwidth > 1:
            return float_to_int(src, dst_type)
        # The original decodes bf16 <-> fp32 from bits; with float32 storage a numpy cast is right for every pair,
        # and a bf16 destination is rounded by TensorHandle.
        if is_bf16(src.dtype) or is_bf16(dst_type):
            return TensorHandle(src.data.astype(get_np_dtype(dst_type)), dst_type.scalar)
        return orig["cast_impl"](self, src, dst_type)

    def float_to_int(src, dst_type):
        """PTX's cvt.rzi: toward zero, clamped to the integer's range, NaN to 0. numpy's astype gives INT_MIN for NaN
        and wraps out of range on x86, so `tl.sqrt(-1.0).to(tl.int32) == 0` was false here and true on a GPU: a
        kernel could branch on it to run other code there (red team 2, 2026-12-05)."""
        np_dst = get_np_dtype(dst_type)
        info = np.iinfo(np_dst)
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.trunc(np.asarray(src.data, dtype=np.float64))
            out = np.where(np.isnan(d), 0, np.maximum(d, info.min))
            high = d >= float(info.max)  # 2**63 - 1 is not a float64: compare, then set
            out = np.where(high, 0, out).astype(np_dst)
            out[high] = info.max
        return TensorHandle(out, dst_type.scalar)

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        if is_bf16(src.dtype):
            # bf16 -> float32 is exact, so the original's float32 -> fp8/fp16 conversion gives the bf16 answer.
            return orig["create_fp_to_fp"](self, TensorHandle(src.data, tl.float32), dst_type, rounding_mode)
        if not is_bf16(dst_type):
            return orig["create_fp_to_fp"](self, src, dst_type, rounding_mode)
        wide = src.data  # float16/32 are exact in float32; float64 is rounded to float32 first (double rounding)
        if src.dtype.scalar.is_fp8():
            wide = orig["create_fp_to_fp"](self, src, tl.float32, rounding_mode).data  # exact upcast
        if rounding_mode == interp._ir.ROUNDING_MODE.RTZ:
            wide = (wide.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        return TensorHandle(wide, dst_type.scalar)

    def create_bitcast(self, src, dst_type):
        if not (is_bf16(src.dtype) or is_bf16(dst_type)):
            return orig["create_bitcast"](self, src, dst_type)
        data = f32_to_bf16_bits(src.data) if is_bf16(src.dtype) else src.data
        if is_bf16(dst_type):
            return TensorHandle(bf16_bits_to_f32(data.view(np.uint16)), dst_type.scalar)
        return TensorHandle(data.view(get_np_dtype(dst_type)), dst_type.scalar)

    def create_fabs(self, arg):
        # The original masks the sign bit of a primitive_bitwidth-wide view, which is 16 bits for bf16.
        if is_bf16(arg.dtype):
            return TensorHandle(np.abs(arg.data), arg.dtype.scalar)
        return orig["create_fabs"](self, arg)

    def refuse_bf16_atomic(val) -> None:
        # The C++ atomics read and write elements as wide as the numpy data (4 bytes here), and the unpatched
        # interpreter did integer arithmetic on the bits, so there is no right answer to fall back on.
        if is_bf16(val.dtype):
            raise NotImplementedError("bf16 atomics are not supported by the CPU interpreter")

    def create_atomic_cas(self, ptr, cmp, val, sem, scope):
        refuse_bf16_atomic(val)
        return orig["create_atomic_cas"](self, ptr, cmp, val, sem, scope)

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
        refuse_bf16_atomic(val)
        return orig["create_atomic_rmw"](self, rmwOp, ptr, val, mask, sem, scope)

    precisions = {interp._ir.INPUT_PRECISION.TF32: "tf32", interp._ir.INPUT_PRECISION.TF32x3: "tf32x3"}

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        # float32 x float32 only: the one case where input_precision changes what the GPU computes. bf16 operands
        # (float32 arrays of bf16 values here) multiply exactly in float32, as the original does.
        precision = precisions.get(input_precision)
        if precision is None or a.dtype.scalar != tl.float32 or b.dtype.scalar != tl.float32:
            return orig["create_dot"](self, a, b, d, input_precision, max_num_imprecise_acc)
        return TensorHandle(tf32_dot(a.data, b.data, d.data, precision), d.dtype.scalar)

    def create_dot_scaled(self, lhs, lhs_scale_handle, lhs_format_enum, rhs, rhs_scale_handle, rhs_format_enum,
                          fast_math, lhs_k_pack, rhs_k_pack, acc_handle):
        # The original decodes a bf16 operand from its bits; its float32 decode of the same values is exact.
        lhs, rhs = [TensorHandle(h.data, tl.float32) if is_bf16(h.dtype) else h for h in (lhs, rhs)]
        return orig["create_dot_scaled"](self, lhs, lhs_scale_handle, lhs_format_enum, rhs, rhs_scale_handle,
                                         rhs_format_enum, fast_math, lhs_k_pack, rhs_k_pack, acc_handle)

    patches = [
        (interp, "_get_np_dtype", get_np_dtype),
        (TensorHandle, "__post_init__", post_init),
        (builder, "create_masked_load", create_masked_load),
        (builder, "create_masked_store", create_masked_store),
        (builder, "cast_impl", cast_impl),
        (builder, "create_fp_to_fp", create_fp_to_fp),
        (builder, "create_bitcast", create_bitcast),
        (builder, "create_fabs", create_fabs),
        (builder, "create_dot", create_dot),
        (builder, "create_atomic_cas", create_atomic_cas),
        (builder, "create_atomic_rmw", create_atomic_rmw),
    ]
    if "create_dot_scaled" in orig:
        patches.append((builder, "create_dot_scaled", create_dot_scaled))
    return patches


def _self_check(interp: ModuleType, tl: ModuleType) -> None:
    """Load, add, cast and store bf16, and multiply float32 at each input precision, through the patched builder; a
    Triton that routes either elsewhere fails here."""
    b = interp.InterpreterBuilder()
    memory = np.array([0x3FC0, 0xC000], dtype=np.uint16)  # 1.5, -2.0
    ptrs = interp.TensorHandle(np.array([memory.ctypes.data, memory.ctypes.data + 2], dtype=np.uint64),
                               tl.pointer_type(tl.bfloat16))
    mask = interp.TensorHandle(np.ones(2, dtype=bool), tl.int1)
    # Our bf16 branches ignore the cache arguments, whose number depends on the Triton version.
    x = b.create_masked_load(ptrs, mask, None)
    third = b.create_fp_trunc(b.get_fp32(1 / 3), tl.bfloat16)  # 0x3EAB: needs round-to-nearest, not truncation
    total = b.create_fadd(b.create_fadd(x, x), b.create_splat(tl.block_type(tl.bfloat16, [2]), third))
    b.create_masked_store(ptrs, total, mask)
    expected = f32_to_bf16_bits(np.array([3.0, -4.0], dtype=np.float32) + np.float32(bf16_bits_to_f32(0x3EAB)))
    if memory.tolist() != expected.tolist() or f32_to_bf16_bits(third.data).tolist() != [0x3EAB]:
        raise Bf16PatchError(f"bf16 self-check failed after patching the interpreter: stored {memory.tolist()}, "
                             f"expected {expected.tolist()}")
    # A float32 dot: 1 + 2^-12 is below half of TF32's last mantissa bit (2^-10), so TF32 reads 1.0; tf32x3 and ieee
    # do not.
    one = interp.TensorHandle(np.array([[1 + 2.0**-12]], dtype=np.float32), tl.float32)
    unit = interp.TensorHandle(np.ones((1, 1), dtype=np.float32), tl.float32)
    zero = interp.TensorHandle(np.zeros((1, 1), dtype=np.float32), tl.float32)
    got = {name: float(b.create_dot(one, unit, zero, getattr(interp._ir.INPUT_PRECISION, name), 0).data[0, 0])
           for name in ("TF32", "TF32x3", "IEEE")}
    if got != {"TF32": 1.0, "TF32x3": 1 + 2.0**-12, "IEEE": 1 + 2.0**-12}:
        raise Bf16PatchError(f"TF32 self-check failed after patching the interpreter: (1 + 2^-12) * 1 gave {got}")
