"""The persistent CuTe DSL attention (tasks/demos/flash_attn_cute_7_persistent.py) on a GPU with its grid forced small,
so that each CTA walks several work units: across heads, past a lone causal middle block, at ragged sequence lengths.
The task's own test shapes have at most 132 units, so on a 132-SM GPU each CTA there runs one unit and only the bench
shapes (S 4096) exercise the walk; this script exercises it at small shapes (not a test; on the GPU machine):

    python3 benchmarks/cute_persistent_grid_check.py            # grids of 2 and 3 CTAs (one build per grid, shape, mask)
    python3 benchmarks/cute_persistent_grid_check.py --grids 2,7

Per grid, shape and mask: the largest error against torch's SDPA in float32 on the same bf16 inputs, and whether it is
within 2e-2 (bf16 outputs; at the bench shapes `_7`'s largest error against cuDNN was 0.002). `bash
benchmarks/gpu_session.sh frontier-cute7` runs it (after `park`); on an H100 (2026-12-06) 28 of 28 within 0.02.
Prints a table last; exit status 1 when any case is off or raises.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch.nn.functional import scaled_dot_product_attention as sdpa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rungs.core.imports import import_file  # noqa: E402

SHAPES = [(1, 5, 1), (1, 5, 37), (2, 3, 100), (1, 5, 129), (1, 5, 300), (2, 3, 640), (1, 3, 1024)]
"""B, H, S at head dim 128: one key; one block; ragged; one row past a block; three blocks (odd: a lone causal middle
block); five blocks; eight blocks (even)."""
TOLERANCE = 2e-2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", default="2,3", help="CTAs in the grid, comma-separated")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("cute_persistent_grid_check: no CUDA device")
        return 1
    demo = import_file(ROOT / "tasks/demos/flash_attn_cute_7_persistent.py")
    device = torch.device("cuda", torch.cuda.current_device())
    rows, bad = [], 0
    for grid in (int(g) for g in args.grids.split(",")):
        demo._sms[device] = grid  # the grid is min(units, this): each CTA walks ~units / grid of them
        for (B, H, S), causal in ((shape, causal) for shape in SHAPES for causal in (False, True)):
            gen = torch.Generator(device=device).manual_seed(S * 7 + H)
            q, k, v = (torch.randn(B, H, S, 128, device=device, dtype=torch.bfloat16, generator=gen) for _ in range(3))
            try:
                out = demo.kernel(q, k, v, causal).float()
                ref = sdpa(q.float(), k.float(), v.float(), is_causal=causal)
                err = (out - ref).abs().max().item()
                note = "ok" if err <= TOLERANCE else "OFF"
            except Exception as exc:  # noqa: BLE001 - one case's failure is this script's result
                err, note = float("nan"), f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
            bad += note != "ok"
            rows.append((grid, f"{B}x{H}x{S}x128", "causal" if causal else "full", err, note))
    print(f"{'grid':>4} {'shape':<14} {'mask':<7} {'max err':>8}  verdict")
    for grid, shape, mask, err, note in rows:
        print(f"{grid:>4} {shape:<14} {mask:<7} {err:>8.4f}  {note}")
    print(f"{len(rows) - bad} of {len(rows)} within {TOLERANCE}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
