"""Writes InstanceNorm (34) and GroupNorm (35) from the LayerNorm solution (level1/40_LayerNorm.py): the same row
statistics kernel (atomic partial sums of x and x^2 per row) and normalizing pass, with a row that is an
(image, channel) plane, or an (image, group of channels) block whose weight and bias are per channel. Run it again
after changing 40_LayerNorm.py.

    python3 benchmarks/kernelbench_solutions/make_norm.py
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent / "level1"
TEMPLATE = HERE / "40_LayerNorm.py"

LAYERNORM_DOC = '''"""LayerNorm over the trailing normalized_shape dimensions (all but the first here): a first kernel sums each row's
elements and squares in float32, many programs a row, adding their partial sums into the row's two accumulators
(atomic add); a second normalizes every element with its row's mean and 1/sqrt(var + eps) and applies the elementwise
weight and bias (nn.LayerNorm's, copied from the reference's `ln` by name). The variance is E[x^2] - mean^2 in
float32, clamped at zero."""'''
NORMALIZE_DEF = "def normalize_kernel(out_ptr, x_ptr, w_ptr, b_ptr, stats_ptr, n, eps, BLOCK: tl.constexpr):"
AFFINE_LOADS = '''    w = tl.load(w_ptr + offs, mask=ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=ok, other=0.0).to(tl.float32)'''
AFFINE_STORE = '''    tl.store(out_ptr + base + offs, ((x - mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=ok)'''
LAYERNORM_MODEL = '''class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = math.prod(self.ln.normalized_shape)
        rows = x.numel() // n if n else 0
        w, b = self.ln.weight.contiguous(), self.ln.bias.contiguous()
'''
LAYERNORM_LAUNCH = ("        normalize_kernel[(rows, triton.cdiv(n, BLOCK))](out, x, w, b, stats, n, float(self.ln.eps), "
                    "BLOCK=BLOCK)")

# stem: [(the LayerNorm's text, what it becomes)]
VARIANTS = {
    "34_InstanceNorm": [
        (LAYERNORM_DOC, '''"""InstanceNorm2d (no affine, no running statistics): each (image, channel) plane is a row of H*W elements. A first
kernel sums each row's elements and squares in float32, many programs a row, adding their partial sums into the row's
two accumulators (atomic add); a second normalizes every element with its row's mean and 1/sqrt(var + eps). The
variance is E[x^2] - mean^2 in float32, clamped at zero."""'''),
        (NORMALIZE_DEF, "def normalize_kernel(out_ptr, x_ptr, stats_ptr, n, eps, BLOCK: tl.constexpr):"),
        (AFFINE_LOADS + "\n" + AFFINE_STORE,
         "    tl.store(out_ptr + base + offs, ((x - mean) * rstd).to(out_ptr.dtype.element_ty), mask=ok)"),
        (LAYERNORM_MODEL, '''class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = math.prod(x.shape[2:])
        rows = x.numel() // n if n else 0
'''),
        (LAYERNORM_LAUNCH, "        normalize_kernel[(rows, triton.cdiv(n, BLOCK))](out, x, stats, n, float(self.inorm.eps), "
                           "BLOCK=BLOCK)"),
    ],
    "35_GroupNorm_": [
        (LAYERNORM_DOC, '''"""GroupNorm: each (image, group of channels) is a row of (C/G)*H*W contiguous elements. A first kernel sums each
row's elements and squares in float32, many programs a row, adding their partial sums into the row's two accumulators
(atomic add); a second normalizes every element with its row's mean and 1/sqrt(var + eps) and applies its channel's
weight and bias (nn.GroupNorm's, copied from the reference's `gn` by name). The variance is E[x^2] - mean^2 in
float32, clamped at zero."""'''),
        (NORMALIZE_DEF, '''def normalize_kernel(out_ptr, x_ptr, w_ptr, b_ptr, stats_ptr, n, plane, groups, per_group, eps,
                     BLOCK: tl.constexpr):'''),
        (AFFINE_LOADS, '''    channel = (row % groups) * per_group + offs // plane
    w = tl.load(w_ptr + channel, mask=ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + channel, mask=ok, other=0.0).to(tl.float32)'''),
        (LAYERNORM_MODEL, '''class ModelNew(nn.Module):
    def __init__(self, num_features: int, num_groups: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        groups = self.gn.num_groups
        per_group = x.shape[1] // groups
        plane = math.prod(x.shape[2:])
        n = per_group * plane
        rows = x.numel() // n if n else 0
        w, b = self.gn.weight.contiguous(), self.gn.bias.contiguous()
'''),
        (LAYERNORM_LAUNCH, '''        normalize_kernel[(rows, triton.cdiv(n, BLOCK))](out, x, w, b, stats, n, plane, groups, per_group,
                                                        float(self.gn.eps), BLOCK=BLOCK)'''),
    ],
}


def main() -> None:
    template = TEMPLATE.read_text()
    for stem, edits in VARIANTS.items():
        text = template
        for old, new in edits:
            if old not in text:
                raise SystemExit(f"{TEMPLATE.name} changed where {stem} differs from it: update make_norm.py")
            text = text.replace(old, new)
        (HERE / f"{stem}.py").write_text(text)
        print(f"wrote {stem}.py")


if __name__ == "__main__":
    main()
