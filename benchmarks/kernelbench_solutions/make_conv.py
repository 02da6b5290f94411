"""Writes the convolution solutions of level 1 (50, 54-86 but 87) from one pair of kernels: an implicit-GEMM
convolution that takes any 1-D, 2-D or 3-D problem (standard or transposed, stride, padding, dilation, groups,
output padding) as a 3-D one, and a direct depthwise kernel (one input and one output channel per group, where a
matmul tile would be mostly empty). Each file's ModelNew builds the same modules under the same names as the
problem's Model (the harness copies the reference's weights by name) and passes them to `conv`, which reads the
module's geometry and launches the kernels; it never calls the module. Run it again after changing the kernels.
On a CPU, Triton's interpreter takes minutes over the test shapes of 50, 58 and 72 (which shrink the least): check
them with `harness check ... --timeout-s 1200`. (A block size of its own for the interpreter would be quicker, and
is refused: the harness fails a kernel launched differently in its build and in the run it is judged in.)

    python3 benchmarks/kernelbench_solutions/make_conv.py
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent / "level1"

KERNELS = '''"""{title} (written by make_conv.py). An implicit-GEMM convolution: the output positions (image, depth, row,
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


'''

# The modules of the problem's Model, built the same way under the same names: (title, __init__'s parameters, its
# body, forward's body). `std` and `tr` write the common forms.


def std(nd: int, kernel: str, keys: str = "stride, padding, dilation, groups, bias", attr: str = "") -> str:
    attr = attr or f"conv{nd}d"
    kw = ", ".join(f"{key}={key}" for key in keys.split(", "))
    return f"self.{attr} = nn.Conv{nd}d(in_channels, out_channels, {kernel}, {kw})"


def tr(nd: int, kernel: str, keys: str = "stride, padding, output_padding, groups, bias", attr: str = "") -> str:
    attr = attr or f"conv_transpose{nd}d"
    kw = ", ".join(f"{key}={key}" for key in keys.split(", "))
    return f"self.{attr} = nn.ConvTranspose{nd}d(in_channels, out_channels, {kernel}, {kw})"


SQUARE = ("in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, "
          "dilation: int = 1, groups: int = 1, bias: bool = False")
TUPLE_KERNEL = ("in_channels: int, out_channels: int, kernel_size: tuple, stride: int = 1, padding: int = 0, "
                "dilation: int = 1, groups: int = 1, bias: bool = False")
TR_SQUARE = ("in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, "
             "output_padding: int = 0, groups: int = 1, bias: bool = False")
TR_TUPLE = ("in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1, 1), "
            "padding: tuple = (0, 0, 0), output_padding: tuple = (0, 0, 0), groups: int = 1, bias: bool = False")
DILATED = ("in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, "
           "dilation: int = 1, bias: bool = False")
K2, K3 = "(kernel_size, kernel_size)", "(kernel_size, kernel_size, kernel_size)"

PROBLEMS: dict[str, tuple[str, str, list[str], str]] = {
    "50_conv_standard_2D__square_input__square_kernel": (
        "Conv2d 3 -> 96, 11x11, stride 4, padding 2", "num_classes=1000",
        ["self.conv1 = nn.Conv2d(in_channels=3, out_channels=96, kernel_size=11, stride=4, padding=2)"],
        "conv(x, self.conv1)"),
    "54_conv_standard_3D__square_input__square_kernel": ("Conv3d, cubic kernel", SQUARE, [std(3, K3)], ""),
    "55_conv_standard_2D__asymmetric_input__square_kernel": ("Conv2d, square kernel", SQUARE, [std(2, K2)], ""),
    "56_conv_standard_2D__asymmetric_input__asymmetric_kernel": (
        "Conv2d, rectangular kernel",
        "in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1), padding: tuple = (0, 0), "
        "dilation: tuple = (1, 1), groups: int = 1, bias: bool = False", [std(2, "kernel_size")], ""),
    "57_conv_transposed_2D__square_input__square_kernel": ("ConvTranspose2d", TR_SQUARE, [tr(2, "kernel_size")], ""),
    "58_conv_transposed_3D__asymmetric_input__asymmetric_kernel": (
        "ConvTranspose3d, asymmetric kernel", TR_TUPLE, [tr(3, "kernel_size")], ""),
    "59_conv_standard_3D__asymmetric_input__square_kernel": (
        "Conv3d, a (k, k, 1) kernel", SQUARE, [std(3, "(kernel_size, kernel_size, 1)")], ""),
    "60_conv_standard_3D__square_input__asymmetric_kernel": ("Conv3d, asymmetric kernel", TUPLE_KERNEL,
                                                             [std(3, "kernel_size")], ""),
    "61_conv_transposed_3D__square_input__square_kernel": ("ConvTranspose3d, cubic kernel", TR_SQUARE, [tr(3, K3)], ""),
    "62_conv_standard_2D__square_input__asymmetric_kernel": ("Conv2d, rectangular kernel", TUPLE_KERNEL,
                                                             [std(2, "kernel_size")], ""),
    "63_conv_standard_2D__square_input__square_kernel": ("Conv2d, square kernel", SQUARE, [std(2, K2)], ""),
    "64_conv_transposed_1D": ("ConvTranspose1d", TR_SQUARE, [tr(1, "kernel_size", attr="conv1d_transpose")], ""),
    "65_conv_transposed_2D__square_input__asymmetric_kernel": (
        "ConvTranspose2d, rectangular kernel", TR_SQUARE.replace("kernel_size: int", "kernel_size: tuple"),
        [tr(2, "kernel_size")], ""),
    "66_conv_standard_3D__asymmetric_input__asymmetric_kernel": (
        "Conv3d, asymmetric kernel",
        "in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1, 1), "
        "padding: tuple = (0, 0, 0), dilation: tuple = (1, 1, 1), groups: int = 1, bias: bool = False",
        [std(3, "kernel_size")], ""),
    "67_conv_standard_1D": ("Conv1d", SQUARE, [std(1, "kernel_size")], ""),
    "68_conv_transposed_3D__square_input__asymmetric_kernel": (
        "ConvTranspose3d, asymmetric kernel", TR_TUPLE, [tr(3, "kernel_size")], ""),
    "69_conv_transposed_2D__asymmetric_input__asymmetric_kernel": (
        "ConvTranspose2d, rectangular kernel",
        "in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1), padding: tuple = (0, 0), "
        "output_padding: tuple = (0, 0), dilation: tuple = (1, 1), groups: int = 1, bias: bool = False",
        [tr(2, "kernel_size", "stride, padding, output_padding, dilation, groups, bias")], ""),
    "70_conv_transposed_3D__asymmetric_input__square_kernel": (
        "ConvTranspose3d, cubic kernel", TR_SQUARE.replace("groups: int = 1", "dilation: int = 1, groups: int = 1"),
        [tr(3, K3, "stride, padding, output_padding, dilation, groups, bias")], ""),
    "71_conv_transposed_2D__asymmetric_input__square_kernel": ("ConvTranspose2d", TR_SQUARE, [tr(2, "kernel_size")], ""),
    "72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_": (
        "ConvTranspose3d, strided, padded, grouped, output padding", TR_TUPLE, [tr(3, "kernel_size")], ""),
    "73_conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped": (
        "ConvTranspose3d, strided, padded, grouped", TR_SQUARE,
        [tr(3, K3, "stride, padding, groups, bias")], ""),
    "74_conv_transposed_1D_dilated": ("ConvTranspose1d, dilated", DILATED,
                                      [tr(1, "kernel_size", "stride, padding, dilation, bias", "conv1d_transpose")], ""),
    "75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__": (
        "ConvTranspose2d, strided, grouped, padded, dilated",
        "in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1), padding: tuple = (0, 0), "
        "dilation: tuple = (1, 1), groups: int = 1, bias: bool = False",
        [tr(2, "kernel_size", "stride, padding, dilation, groups, bias")], ""),
    "76_conv_standard_1D_dilated_strided__": (
        "Conv1d, dilated and strided",
        "in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, dilation: int = 1, bias: bool = False",
        [std(1, "kernel_size", "stride, dilation, bias")], ""),
    "77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__": (
        "ConvTranspose3d, padded, dilated, strided", DILATED, [tr(3, K3, "stride, padding, dilation, bias")], ""),
    "78_conv_transposed_2D_asymmetric_input_asymmetric_kernel___padded__": (
        "ConvTranspose2d, padded",
        "in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1), padding: tuple = (0, 0), "
        "bias: bool = False", [tr(2, "kernel_size", "stride, padding, bias")], ""),
    "79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__": (
        "ConvTranspose1d, padded, strided, dilated", DILATED,
        [tr(1, "kernel_size", "stride, padding, dilation, bias", "conv1d_transpose")], ""),
    "80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__": (
        "Conv2d, dilated and padded",
        "in_channels: int, out_channels: int, kernel_size: tuple, stride: int = 1, padding: tuple = (0, 0), "
        "dilation: tuple = (1, 1), bias: bool = False", [std(2, "kernel_size", "stride, padding, dilation, bias")], ""),
    "81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__": (
        "ConvTranspose2d, dilated, padded, strided", DILATED, [tr(2, "kernel_size", "stride, padding, dilation, bias")],
        ""),
    "82_conv_depthwise_2D_square_input_square_kernel": (
        "depthwise Conv2d", "in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False",
        ["self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding, "
         "groups=in_channels, bias=bias)"], ""),
    "83_conv_depthwise_2D_square_input_asymmetric_kernel": (
        "depthwise Conv2d, a (k, 1) kernel",
        "in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, bias: bool = False",
        ["self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size=(kernel_size, 1), stride=stride, "
         "padding=padding, dilation=dilation, groups=in_channels, bias=bias)"], ""),
    "84_conv_depthwise_2D_asymmetric_input_square_kernel": (
        "depthwise Conv2d",
        "in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False",
        ["self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size=(kernel_size, kernel_size), stride=stride, "
         "padding=padding, groups=in_channels, bias=bias)"], ""),
    "85_conv_depthwise_2D_asymmetric_input_asymmetric_kernel": (
        "depthwise Conv2d, rectangular kernel",
        "in_channels: int, out_channels: int, kernel_size_h: int, kernel_size_w: int, stride_h: int = 1, "
        "stride_w: int = 1, padding_h: int = 0, padding_w: int = 0, dilation_h: int = 1, dilation_w: int = 1, "
        "groups: int = 1, bias: bool = False",
        ["self.conv2d = nn.Conv2d(in_channels, in_channels, (kernel_size_h, kernel_size_w), stride=(stride_h, stride_w), "
         "padding=(padding_h, padding_w), dilation=(dilation_h, dilation_w), groups=in_channels, bias=bias)"], ""),
    "86_conv_depthwise_separable_2D": (
        "depthwise-separable Conv2d (a depthwise then a pointwise convolution)", DILATED,
        ["self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding, "
         "dilation=dilation, groups=in_channels, bias=bias)",
         "self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)"],
        "conv(conv(x, self.depthwise), self.pointwise)"),
}

MODEL = '''class ModelNew(nn.Module):
    def __init__(self, {params}):
        super().__init__()
{body}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {forward}
'''


def source(stem: str) -> str:
    title, params, body, forward = PROBLEMS[stem]
    if not forward:  # the one module
        forward = f"conv(x, self.{body[0].split(' = ')[0].removeprefix('self.')})"
    lines = "\n".join(f"        {line}" for line in body)
    return KERNELS.replace("{title}", title) + MODEL.format(params=params, body=lines, forward=forward)


def main() -> None:
    for stem in PROBLEMS:
        (HERE / f"{stem}.py").write_text(source(stem))
        print(f"wrote {stem}.py")


if __name__ == "__main__":
    main()
