"""MaxPool2d (written by make_pool.py): each program covers BLOCK outputs, counted over every (image, channel) volume
(a 2-D pool is a 3-D one of unit depth), and walks the window's taps.
Padding counts as -inf.
One pass over the input; float32 arithmetic."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def pool_kernel(out_ptr, x_ptr, TOTAL, ID, IH, IW, OD, OH, OW, SD, SH, SW, PD, PH, PW, DD, DH, DW,
                KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, MAX: tl.constexpr, BLOCK: tl.constexpr):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # over every output of every plane
    ok = flat < TOTAL
    plane = flat // (OD * OH * OW)  # image * channels + channel
    j = (flat % (OD * OH * OW)).to(tl.int32)
    ow = j % OW
    oh = (j // OW) % OH
    od = j // (OW * OH)
    src = x_ptr + plane * ID * IH * IW
    if MAX:
        acc = tl.full([BLOCK], float("-inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for kd in tl.static_range(KD):
        id_ = od * SD - PD + kd * DD
        for kh in tl.static_range(KH):
            ih = oh * SH - PH + kh * DH
            for kw in tl.static_range(KW):
                iw = ow * SW - PW + kw * DW
                inside = ok & (id_ >= 0) & (id_ < ID) & (ih >= 0) & (ih < IH) & (iw >= 0) & (iw < IW)
                if MAX:
                    v = tl.load(src + (id_ * IH + ih) * IW + iw, mask=inside, other=float("-inf"))
                    acc = tl.maximum(acc, v.to(tl.float32))
                else:
                    acc += tl.load(src + (id_ * IH + ih) * IW + iw, mask=inside, other=0.0).to(tl.float32)
    if not MAX:
        acc = acc / (KD * KH * KW)
    tl.store(out_ptr + flat, acc.to(out_ptr.dtype.element_ty), mask=ok)


def _three(value, dims: int, fill: int) -> tuple[int, int, int]:
    """An int or a tuple of `dims` as 3 values, `fill` in front for a 2-D pool."""
    values = (value,) * dims if isinstance(value, int) else tuple(value)
    return (fill,) * (3 - dims) + values


def pool(x: torch.Tensor, m: nn.Module) -> torch.Tensor:
    """m(x) for an nn.MaxPool2d/3d or nn.AvgPool2d/3d `m` (floor mode, no indices), by the kernel above."""
    is_max = isinstance(m, (nn.MaxPool2d, nn.MaxPool3d))
    x = x.contiguous()
    dims = x.dim() - 2
    k = _three(m.kernel_size, dims, 1)
    s = _three(m.stride if m.stride is not None else m.kernel_size, dims, 1)
    p = _three(m.padding, dims, 0)
    d = _three(m.dilation if is_max else 1, dims, 1)
    size = (1,) * (3 - dims) + tuple(x.shape[2:])
    osize = tuple((i + 2 * pa - di * (kk - 1) - 1) // st + 1 for i, st, pa, di, kk in zip(size, s, p, d, k))
    out = torch.empty((*x.shape[:2], *osize[3 - dims:]), dtype=x.dtype, device=x.device)
    if out.numel():
        pool_kernel[(triton.cdiv(out.numel(), BLOCK),)](
            out, x, out.numel(), *size, *osize, *s, *p, *d, KD=k[0], KH=k[1], KW=k[2], MAX=is_max, BLOCK=BLOCK)
    return out


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.maxpool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return pool(x, self.maxpool)
