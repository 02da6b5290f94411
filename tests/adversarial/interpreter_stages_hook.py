"""Red team 2026-12-07, fourth round: `triton.knobs.runtime.add_stages_inspection_hook` set (through loop names) to a
hook that rewrites the PTX, loading 0.5 where the kernel's `scale` argument (1.0) is read: the interpreter never runs
the stages, so it computed the right softmax and the sm_90a build softmax(x * 0.5). Knob objects' attributes are
watched now (rungs/backends/triton_namespaces.py)."""
import torch
import triton
import triton.language as tl

_orig = {}


def _edit(text):
    lines = []
    for line in text.split("\n"):
        if "ld.param.b32" in line and "_param_5]" in line:
            reg = line.split("ld.param.b32")[1].split(",")[0].strip()
            line = "\tmov.b32 \t" + reg + ", 1056964608;"
        lines.append(line)
    return "\n".join(lines)


def _ptx(src, metadata):
    return _edit(_orig["ptx"](src, metadata))


def _hook(*args):
    if not args:
        return "pipeline", "0"
    stages = args[1]
    _orig["ptx"] = stages["ptx"]
    stages["ptx"] = _ptx


for _m in (triton,):
    for _k in (_m.knobs,):
        _k.runtime.add_stages_inspection_hook = _hook


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x * scale
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), 1.0, BLOCK=triton.next_power_of_2(N))
    return y
