"""Reduced-precision matrix math on float32 data, against what the task's tolerance allows.

On an NVIDIA GPU, `tl.dot` of float32 operands runs on TF32 tensor cores unless told otherwise (input_precision
"tf32" is Triton's default there): each operand keeps 10 of float32's 23 mantissa bits, and a gemm's output misses the
exact answer by a relative L2 error of about 3e-4. A float32 task's default tolerance (rel_l2 <= 1e-5) fails that;
a task that lists the `tf32` dtype allows it. The same holds for a kernel that casts float32 data to bf16 or fp16
for its products. The dumps rung reads what the compiled code does (the SASS matrix instructions' input types, and
the input precision each `tt.dot` of the TTIR asks for, which tells tf32x3 from tf32) and says, per kernel, whether
the task's tolerance allows it; the prompts say the same before a kernel is written, and never advise a precision
the tolerance forbids.

The typical errors below are rungs/backends/triton_interp.py's emulation of each arithmetic on float32 gemms of normal
inputs (K from 79 to 4096): TF32 rounded to nearest as the H200 reads it (rel_l2 2.9e-4, max_abs_scaled 1.4e-3), bf16
(2.4e-3, 1.1e-2), fp16 (about TF32's: the same 10 mantissa bits), tf32x3 (3.6e-7, 2.7e-6: float32's own). A kind is
allowed where twice its typical error meets every limit of the task's float data.
"""
from __future__ import annotations

import math
import re
from typing import Any

from rungs.core import fmt
from rungs.ladder import metrics as m

TYPICAL: dict[str, tuple[float, float]] = {
    "tf32": (2.9e-4, 1.4e-3),
    "bf16": (2.4e-3, 1.1e-2),
    "f16": (2.9e-4, 1.4e-3),
    "fp8": (3.0e-2, 1.5e-1),
    "tf32x3": (3.6e-7, 2.7e-6),
}
"""rel_l2 and max_abs_scaled of a float32 gemm's output computed with each kind of products (see the docstring)."""
MARGIN = 2.0
WORDS = {"tf32": ("TF32 products", "10-bit mantissas"), "bf16": ("bf16 products", "7-bit mantissas"),
         "f16": ("fp16 products", "10-bit mantissas, fp16's range"), "fp8": ("fp8 products", "2- or 3-bit mantissas"),
         "tf32x3": ("tf32x3 products", "three TF32 products per dot: about float32's accuracy")}


def _named(kind: str, ops: list[str]) -> str:
    """'TF32 products (HGMMA.64x64x8.F32.TF32: 10-bit mantissas)'."""
    name, detail = WORDS[kind]
    return f"{name} ({', '.join(ops[:2])}: {detail})"
FLOAT32_DATA = ("float32", "tf32")
_DOT = re.compile(r"=\s*tt\.dot\s+[^\n]*?(?:inputPrecision\s*=\s*(\w+))?\s*:\s*tensor<[0-9x]*x?(\w+)>")


def task_precision(task: Any) -> dict[str, Any] | None:
    """What the dumps and the prompts judge reduced-precision math against: the task's float32 data and the limits
    that bind it (float32's where the task lists it, else tf32's); None for a task with no float32 data."""
    dtypes = list(task.dtypes)
    data = [d for d in dtypes if d in FLOAT32_DATA]
    if not data:
        return None
    binding = "float32" if "float32" in data else "tf32"
    over = task.tolerances[binding].model_dump() if binding in task.tolerances else None
    return {"dtype": binding, "limits": m.thresholds(binding, over), "dsl": getattr(task, "dsl", "triton"),
            "only_float32": all(d in FLOAT32_DATA for d in dtypes)}


def predicted(kind: str) -> dict[str, float]:
    """The metrics a float32 gemm computed with `kind` products reaches, with MARGIN to spare (peak over RMS of 3
    for psnr, a low guess for a gemm's output)."""
    rel, worst = (MARGIN * v for v in TYPICAL[kind])
    return {"rel_l2": rel, "max_abs_scaled": worst, "cosine": 1.0 - rel * rel / 2,
            "psnr_db": 20 * math.log10(3.0 / rel)}


def broken_limits(kind: str, limits: dict[str, float]) -> list[str]:
    """The task's limits `kind` products would break ('rel_l2 <= 1e-05'), as written in the task's contract."""
    got = predicted(kind)
    out = []
    for name, limit in sorted(limits.items(), key=lambda kv: kv[0] != "rel_l2"):  # rel_l2 first: the one quoted
        if name in got and m.violations({name: got[name]}, {name: limit}):
            out.append(f"{name} {'<=' if m.DIRECTION[name] == 'max' else '>='} {fmt.exact(limit)}")
    return out


def allowed(kind: str, precision: dict[str, Any]) -> bool:
    return not broken_limits(kind, precision["limits"])


def matrix_kind(op: str) -> str | None:
    """The input type of a SASS matrix instruction: HGMMA.64x64x8.F32.TF32 -> tf32, HMMA.16816.F32.BF16 -> bf16,
    HGMMA.64x128x16.F32 (fp16 inputs say no type) -> f16, QGMMA -> fp8; integer ones -> None."""
    parts = op.split(".")
    if parts[0] in ("IMMA", "IGMMA"):
        return None
    if "TF32" in parts:
        return "tf32"
    if "BF16" in parts:
        return "bf16"
    if parts[0] == "QGMMA" or any(p.startswith(("E4M3", "E5M2")) for p in parts):
        return "fp8"
    return "f16"


def ttir_dots(ttir: str | None) -> dict[str, int]:
    """The TTIR's tt.dot ops on float32 operands, by the input precision each asks for (no attribute: ieee)."""
    found: dict[str, int] = {}
    for precision, elem in _DOT.findall(ttir or ""):
        if elem == "f32":
            key = (precision or "ieee").lower()
            found[key] = found.get(key, 0) + 1
    return found


def kernel_precision(matrix: dict[str, int], ttir: str | None, precision: dict[str, Any] | None
                     ) -> dict[str, Any] | None:
    """One kernel's finding: {"breaks": bool, "short": one clause for the verdict, "text": the full sentence}; None
    where there is nothing to say (no float32 data, no reduced-precision math and no float32 dot)."""
    if precision is None:
        return None
    dots = ttir_dots(ttir)
    kinds: dict[str, list[str]] = {}
    for op in sorted(matrix):
        kind = matrix_kind(op)
        if kind == "tf32" and dots and "tf32" not in dots and dots.get("tf32x3"):
            kind = "tf32x3"  # every float32 dot asked for tf32x3: the TF32 instructions are its three products
        if kind is not None and (kind in ("tf32", "tf32x3") or precision["only_float32"]):
            kinds.setdefault(kind, []).append(op)
    dtype, limits, triton = precision["dtype"], precision["limits"], precision["dsl"] == "triton"
    for kind in ("fp8", "bf16", "f16", "tf32"):  # the worst first: one finding per kernel
        if kind not in kinds:
            continue
        broken = broken_limits(kind, limits)
        if not broken:
            return {"breaks": False, "short": f"{kind} products, within the {dtype} tolerance",
                    "text": f"{_named(kind, kinds[kind])} on float32 data: within this task's {dtype} tolerance "
                            f"(rel_l2 <= {fmt.exact(limits['rel_l2'])}; they give about "
                            f"{TYPICAL[kind][0]:.0e} on a gemm)"}
        where = "on the GPU" + (" and in the CPU interpreter" if kind == "tf32" and triton else "")
        return {"breaks": True,
                "short": f"{kind} products break the {dtype} tolerance ({broken[0]})",
                "text": f"{_named(kind, kinds[kind])} on float32 data break this task's {dtype} tolerance "
                        f"({', '.join(broken)}; they give rel_l2 about {TYPICAL[kind][0]:.0e} on a gemm): the "
                        f"kernel fails correctness {where}. {exact_paths(kind, precision)}"}
    if "tf32x3" in kinds:
        return {"breaks": False, "short": "tf32x3 products, within the tolerance",
                "text": f"{_named('tf32x3', kinds['tf32x3'])}: within this task's {dtype} tolerance "
                        f"(rel_l2 <= {fmt.exact(limits['rel_l2'])})"}
    if dots.get("ieee") and not allowed("tf32", precision):
        alt = ("; tl.dot(..., input_precision=\"tf32x3\") would use the tensor cores within it"
               if triton and allowed("tf32x3", precision) else "")
        return {"breaks": False, "short": "exact float32 products from tl.dot at ieee, as the tolerance needs",
                "text": f"tl.dot at input_precision \"ieee\": exact float32 products on FFMA, as this task's {dtype} "
                        f"tolerance needs (TF32 would break rel_l2 <= {fmt.exact(limits['rel_l2'])}){alt}"}
    return None


def exact_paths(kind: str, precision: dict[str, Any]) -> str:
    """What to do instead of `kind` products, naming only what the tolerance allows."""
    x3 = allowed("tf32x3", precision)
    if precision["dsl"] != "triton":
        return ("Multiply in float32 (FFMA)" + (", or split each operand into a TF32 part and a TF32 remainder and add "
                "the three products (3xTF32)" if x3 else "") + ".")
    keep = "keep the operands float32 (no cast before tl.dot) and " if kind in ("bf16", "f16", "fp8") else ""
    return (f"To fix it: {keep}pass input_precision=\"ieee\" to tl.dot (exact float32 products on FFMA)"
            + (", or \"tf32x3\" (three TF32 products: about float32's accuracy, on the tensor cores)" if x3 else "")
            + ".")


PRODUCTS = re.compile(r"@|\b(?:matmul|mm|bmm|addmm|baddbmm|einsum|tensordot|linear|Linear|conv\w*|Conv\w*|"
                      r"scaled_dot_product_attention|MultiheadAttention)\b")
"""What in a reference's source means matrix products (a matmul, a linear or convolution layer, attention)."""


def contract_note(task: Any, reference_source: str | None = None) -> str | None:
    """For the task's contract: what tl.dot's precision does to this task's float32 data, before a kernel exists.
    With the reference's source, only where it computes matrix products (PRODUCTS)."""
    precision = task_precision(task)
    if precision is None or (reference_source is not None and not PRODUCTS.search(reference_source)):
        return None
    dtype, limits = precision["dtype"], precision["limits"]
    triton = precision["dsl"] == "triton"
    what = ("tl.dot's default input_precision (\"tf32\" on an NVIDIA GPU, and in this harness's CPU interpreter)"
            if triton else "TF32 tensor-core math (mma/wgmma .tf32)")
    if allowed("tf32", precision):
        return (f"float32 data and matrix products: {what} rounds each operand to TF32 (rel_l2 about "
                f"{TYPICAL['tf32'][0]:.0e} on a gemm), within the {dtype} tolerance.")
    broken = ", ".join(broken_limits("tf32", limits))
    fix = exact_paths("tf32", precision).removeprefix("To fix it: ")
    return (f"float32 data and matrix products: {what} rounds each operand to TF32 (rel_l2 about "
            f"{TYPICAL['tf32'][0]:.0e} on a gemm), which breaks the {dtype} tolerance ({broken}), as do bf16 or fp16 "
            f"casts. {fix[0].upper() + fix[1:]}")


def matrix_advice(task: Any) -> str:
    """The 'what to do now' clause on matrix instructions, within what the tolerance allows."""
    precision = task_precision(task)
    if precision is None or allowed("tf32", precision):
        return "matrix instructions for the products (tl.dot; the dumps rung counts them)"
    if precision["dsl"] == "triton":
        x3 = allowed("tf32x3", precision)
        return ("matrix products within the float32 tolerance (tl.dot with input_precision=\"ieee\""
                + (", or \"tf32x3\" for the tensor cores at about float32's accuracy" if x3 else "")
                + "; the default TF32 breaks it, and the dumps rung says which a kernel uses)")
    return "float32 products (TF32 tensor-core math breaks this task's tolerance; the dumps rung says which a kernel uses)"
