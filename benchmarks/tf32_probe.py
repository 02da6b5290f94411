"""What the H200 computes for tl.dot on float32 operands, against the CPU interpreter's emulation (not a test).

For each input precision (the default, "tf32", "tf32x3", "ieee") and two tilings (wgmma: 64x64x32 on 4 warps;
mma.sync: 16x16x16 on 1 warp), one float32 gemm on the GPU, then: its rel_l2 and max_abs_scaled against a float64
reference, and its distance (max |gpu - emu| over the output's RMS) from each CPU emulation in
rungs/backends/triton_interp.py (TF32 read by truncation, TF32 rounded to nearest: the interpreter's, tf32x3, exact).
The same kernel then runs through Triton's interpreter with rungs.backends.triton_interp.install() in a child process
(TRITON_INTERPRET=1), and its distance from the GPU's output is printed too.

    python3 benchmarks/tf32_probe.py            # on the GPU machine; prints one JSON line per row, then a table
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CHILD = len(sys.argv) > 1 and sys.argv[1] == "--interpret"
if CHILD:
    os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# K a constexpr: triton 3.6's interpreter cannot range() over an int argument (seen on the H200)
@triton.jit
def mm(c, a, b, M, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, P: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        x = tl.load(a + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(b + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        if P == "default":
            acc += tl.dot(x, w)
        else:
            acc += tl.dot(x, w, input_precision=P)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


SHAPES = [(128, 256, 512), (47, 63, 79)]
TILES = {"wgmma": (64, 64, 32, 4), "mma.sync": (16, 16, 16, 1)}  # tl.dot needs K >= 16
PRECISIONS = ["default", "tf32", "tf32x3", "ieee"]


def inputs(shape: tuple[int, int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    M, N, K = shape
    g = torch.Generator().manual_seed(M * 7 + N * 3 + K)
    return torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)


def launch(a: torch.Tensor, b: torch.Tensor, tile: str, precision: str) -> torch.Tensor:
    (M, K), N = a.shape, b.shape[1]
    BM, BN, BK, W = TILES[tile]
    c = torch.empty(M, N, device=a.device)
    mm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](c, a, b, M, N, K, BM=BM, BN=BN, BK=BK, P=precision, num_warps=W)
    return c


def tf32_truncate(x: np.ndarray) -> np.ndarray:
    """The other reading a TF32 instruction could make of float32 data: the low 13 mantissa bits cleared."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    return np.where(special, bits, bits & np.uint32(0xFFFFE000)).view(np.float32)


def child() -> None:
    from rungs.backends.triton_interp import install

    install()
    out = {}
    for shape in SHAPES:
        a, b = inputs(shape)
        for tile in TILES:
            for p in PRECISIONS:
                out[f"{shape}|{tile}|{p}"] = launch(a, b, tile, p).numpy().tolist()
    print(json.dumps(out))


def main() -> None:
    from rungs.backends.triton_interp import tf32_dot

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, __file__, "--interpret"], env=env, capture_output=True, text=True,
                          timeout=900)
    interp = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    if proc.returncode != 0:
        print("interpreter child failed:", proc.stderr[-3000:])
    rows = []
    for shape in SHAPES:
        a, b = inputs(shape)
        an, bn = a.numpy(), b.numpy()
        ref = an.astype(np.float64) @ bn.astype(np.float64)
        rms = float(np.sqrt((ref ** 2).mean()))
        zero = np.zeros(ref.shape, np.float32)
        emus = {"trunc": np.matmul(tf32_truncate(an), tf32_truncate(bn)), "rna": tf32_dot(an, bn, zero, "tf32"),
                "x3": tf32_dot(an, bn, zero, "tf32x3"), "ieee": tf32_dot(an, bn, zero, "ieee")}
        for tile in TILES:
            for p in PRECISIONS:
                got = launch(a.cuda(), b.cuda(), tile, p).cpu().numpy().astype(np.float64)
                row = {"shape": shape, "tile": tile, "precision": p,
                       "rel_l2": float(np.linalg.norm(got - ref) / np.linalg.norm(ref)),
                       "max_abs_scaled": float(np.abs(got - ref).max() / rms)}
                row.update({f"to_{k}": float(np.abs(got - v).max() / rms) for k, v in emus.items()})
                key = f"{shape}|{tile}|{p}"
                if key in interp:
                    row["to_interpreter"] = float(np.abs(got - np.array(interp[key])).max() / rms)
                rows.append(row)
                print(json.dumps(row))
    print(f"\ntriton {triton.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'shape':>16} {'tile':>8} {'precision':>9} {'rel_l2':>9} {'max_abs_sc':>10} {'to_trunc':>9} {'to_rna':>9} "
          f"{'to_x3':>9} {'to_ieee':>9} {'to_interp':>9}")
    for r in rows:
        print(f"{str(r['shape']):>16} {r['tile']:>8} {r['precision']:>9} {r['rel_l2']:9.2e} {r['max_abs_scaled']:10.2e} "
              f"{r['to_trunc']:9.2e} {r['to_rna']:9.2e} {r['to_x3']:9.2e} {r['to_ieee']:9.2e} "
              f"{r.get('to_interpreter', float('nan')):9.2e}")


if __name__ == "__main__":
    child() if CHILD else main()
