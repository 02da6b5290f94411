"""ConvTranspose1d, dilated (written by make_conv.py). An implicit-GEMM convolution: the output positions (image, depth, row,
column) are the rows of a matmul, a group's output channels its columns and (input channel, tap) its K; each
(BLOCK_M, BLOCK_K) tile of the input is gathered through the convolution's geometry (masked where a tap falls in
the padding, or, transposed, where it lands between strided inputs), one program per (tile of positions, tile of
channels, group). 1-D and 2-D problems are 3-D ones with unit leading sizes. A depthwise convolution (one input and
one output channel per group) has a direct kernel of its own: each program sums the taps of a (BLOCK_H, BLOCK_W) tile
of one (image, channel) plane. fp32 in, fp32 accumulate (IEEE, not TF32: the reference is float64). Weights are the
modules' own, copied from the reference's by name."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_kernel(out_ptr, x_ptr, w_ptr, b_ptr, M, CIN, COUT, CIN_G, COUT_G, ID, IH, IW, OD, OH, OW,
                SD, SH, SW, PD, PH, PW, DD, DH, DW, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    g = tl.program_id(2)
    m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    co = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = m < M
    co_ok = co < COUT_G
    ow = (m % OW).to(tl.int32)  # positions within one image fit in 32 bits; only the image's base needs 64
    t = m // OW
    oh = (t % OH).to(tl.int32)
    t = t // OH
    od = (t % OD).to(tl.int32)
    n = t // OD
    x_base = n * CIN * ID * IH * IW + g * CIN_G * ID * IH * IW
    KK: tl.constexpr = KD * KH * KW
    K = CIN_G * KK
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_ok = k < K
        kk = k % KK
        ci = k // KK
        kw = kk % KW
        kh = (kk // KW) % KH
        kd = kk // (KW * KH)
        if TRANSPOSED:  # output o takes input i where o = i * s - p + tap * d: i = (o + p - tap * d) / s, when whole
            td = od[:, None] + PD - kd[None, :] * DD
            th = oh[:, None] + PH - kh[None, :] * DH
            tw = ow[:, None] + PW - kw[None, :] * DW
            ok = (td >= 0) & (th >= 0) & (tw >= 0)
            td = tl.where(ok, td, 0)  # non-negative before / and %: C and Python round negatives differently
            th = tl.where(ok, th, 0)
            tw = tl.where(ok, tw, 0)
            ok = ok & (td % SD == 0) & (th % SH == 0) & (tw % SW == 0)
            id_ = td // SD
            ih = th // SH
            iw = tw // SW
        else:
            id_ = od[:, None] * SD - PD + kd[None, :] * DD
            ih = oh[:, None] * SH - PH + kh[None, :] * DH
            iw = ow[:, None] * SW - PW + kw[None, :] * DW
            ok = (id_ >= 0) & (ih >= 0) & (iw >= 0)
        ok = ok & (id_ < ID) & (ih < IH) & (iw < IW) & m_ok[:, None] & k_ok[None, :]
        a = tl.load(x_ptr + x_base[:, None] + (((ci[None, :] * ID + id_) * IH + ih) * IW + iw), mask=ok, other=0.0)
        if TRANSPOSED:  # weight (CIN, COUT_G, taps)
            w_off = ((g * CIN_G + ci[:, None]) * COUT_G + co[None, :]) * KK + kk[:, None]
        else:  # weight (COUT, CIN_G, taps)
            w_off = (g * COUT_G + co[None, :]) * K + k[:, None]
        b = tl.load(w_ptr + w_off, mask=k_ok[:, None] & co_ok[None, :], other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(b_ptr + g * COUT_G + co, mask=co_ok, other=0.0)[None, :]
    spatial = (od * OH + oh) * OW + ow
    out = (n * COUT + g * COUT_G)[:, None] * (OD * OH * OW) + (co[None, :] * (OD * OH * OW) + spatial[:, None])
    tl.store(out_ptr + out, acc, mask=m_ok[:, None] & co_ok[None, :])


@triton.jit
def depthwise_kernel(out_ptr, x_ptr, w_ptr, b_ptr, C, IH, IW, OH, OW, SH, SW, PH, PW, DH, DW,
                     KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr,
                     BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    plane = tl.program_id(2).to(tl.int64)  # image * C + channel
    c = plane % C
    oh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    acc = tl.zeros([BLOCK_H, BLOCK_W], tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh * DH
        for kw in tl.static_range(KW):
            iw = ow * SW - PW + kw * DW
            ok = ((ih >= 0) & (ih < IH))[:, None] & ((iw >= 0) & (iw < IW))[None, :]
            v = tl.load(x_ptr + plane * IH * IW + ih[:, None] * IW + iw[None, :], mask=ok, other=0.0)
            acc += v * tl.load(w_ptr + c * (KH * KW) + kh * KW + kw)
    if HAS_BIAS:
        acc += tl.load(b_ptr + c)
    ok = (oh < OH)[:, None] & (ow < OW)[None, :]
    tl.store(out_ptr + plane * OH * OW + oh[:, None] * OW + ow[None, :], acc, mask=ok)


def _three(values, fill: int) -> tuple[int, int, int]:
    """A 1-D or 2-D geometry as a 3-D one: unit sizes (or `fill`) in front."""
    values = tuple(values)
    return (fill,) * (3 - len(values)) + values


def conv(x: torch.Tensor, m: nn.Module) -> torch.Tensor:
    """m(x) for an nn.ConvNd or nn.ConvTransposeNd `m`, by the kernels above (m's weights and geometry only)."""
    transposed = isinstance(m, nn.modules.conv._ConvTransposeNd)
    x = x.contiguous()
    w = m.weight.contiguous()
    dims = x.dim() - 2
    n, cin = x.shape[:2]
    size = _three(x.shape[2:], 1)
    k = _three(m.kernel_size, 1)
    s, d = _three(m.stride, 1), _three(m.dilation, 1)
    p, op = _three(m.padding, 0), _three(m.output_padding, 0)
    g = m.groups
    cout = m.out_channels
    if transposed:
        osize = tuple((i - 1) * st - 2 * pa + di * (kk - 1) + o + 1 for i, st, pa, di, kk, o in zip(size, s, p, d, k, op))
    else:
        osize = tuple((i + 2 * pa - di * (kk - 1) - 1) // st + 1 for i, st, pa, di, kk in zip(size, s, p, d, k))
    out = torch.empty((n, cout, *osize[3 - dims:]), dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    bias = m.bias if m.bias is not None else w  # any pointer when there is none
    cin_g, cout_g = cin // g, cout // g
    if not transposed and cin_g == 1 and cout_g == 1 and k[0] == 1 and dims >= 2:
        grid = (triton.cdiv(osize[2], 64), triton.cdiv(osize[1], 16), n * cin)
        depthwise_kernel[grid](out, x, w, bias, cin, size[1], size[2], osize[1], osize[2], s[1], s[2], p[1], p[2],
                               d[1], d[2], KH=k[1], KW=k[2], HAS_BIAS=m.bias is not None, BLOCK_H=16, BLOCK_W=64)
        return out
    rows = n * osize[0] * osize[1] * osize[2]
    block_n = max(16, min(64, triton.next_power_of_2(cout_g)))
    block_k = 16 if cin_g * k[0] * k[1] * k[2] <= 16 else 32
    grid = (triton.cdiv(rows, 64), triton.cdiv(cout_g, block_n), g)
    conv_kernel[grid](out, x, w, bias, rows, cin, cout, cin_g, cout_g, *size, *osize, *s, *p, *d,
                      KD=k[0], KH=k[1], KW=k[2], TRANSPOSED=transposed, HAS_BIAS=m.bias is not None,
                      BLOCK_M=64, BLOCK_N=block_n, BLOCK_K=block_k)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, bias: bool = False):
        super().__init__()
        self.conv1d_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return conv(x, self.conv1d_transpose)
