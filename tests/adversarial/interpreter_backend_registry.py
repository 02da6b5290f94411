"""Red team 2026-12-07, fifth round: triton.backends.backends["nvidia"] (the registry make_backend reads at compile time)
replaced, through loop names, by a Backend whose compiler subclasses CUDABackend and rewrites the PTX to load 0.5
for the kernel's `scale` argument (1.0): the interpreter runs no stages, so it computed the right softmax and the
sm_90a build softmax(x * 0.5). The runtime watch compares only code in held dicts; the screen refuses it (it follows
loop names to the module they stand for, and refuses a library's dict edited in place)."""
import torch
import triton
import triton.language as tl


def _edit(text):
    lines = []
    for line in text.split("\n"):
        if "ld.param.b32" in line and "_param_5]" in line:
            reg = line.split("ld.param.b32")[1].split(",")[0].strip()
            line = "\tmov.b32 \t" + reg + ", 1056964608;"
        lines.append(line)
    return "\n".join(lines)


for _m in (triton,):
  for _B in (_m.backends.Backend,):
    for _bk in (_m.backends.backends,):
        for _name in list(_bk):
            _be = _bk[_name]

            class _Sub(_be.compiler):
                def add_stages(self, stages, options, language):
                    super().add_stages(stages, options, language)
                    orig = stages["ptx"]
                    stages["ptx"] = lambda src, md: _edit(orig(src, md))

            _bk[_name] = _B(_Sub, _be.driver)


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
