"""What the Triton attention demo's usual next steps buy on this GPU: the demo (`tasks/demos/flash_attn_4_fa2.py`)
and variants of it, timed at the task's bench shapes (B4 H32 S4096 D128, non-causal and causal) beside cuDNN in one
process, each checked against SDPA on an awkward shape first (S = 300).

    python3 benchmarks/triton_attention_variants.py      # on the H200; prints one table

The variants: the demo's tile and stage choices; on-device TMA descriptors for every load and the store
(benchmarks/triton_attention/tma.py), with and without Triton's warp specialization of the key loop; the demo with
Q K^T of the next key block issued before this block's softmax, by hand (FlashAttention-3's intra-warpgroup overlap
as far as Triton lets one write it: the demo's source with its unmasked loop replaced, made here); 256-query blocks on
16 warps. Exploration only (triton.testing.do_bench, no L2 flush, no fresh inputs): the ladder's figures are
`harness check tasks/flash_attn.yaml KERNEL`'s.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch
import triton

from rungs.core.imports import import_file

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tasks" / "demos" / "flash_attn_4_fa2.py"

PIPELINED_LOOP = '''
@triton.jit
def _attn_blocks_pipe(acc, l_i, m_i, q, k_base, v_base, stride_ks, stride_vs, offs_m, offs_n, offs_d,
                      lo, hi, S, qk_scale, BLOCK_N: tl.constexpr):
    # unmasked blocks only (hi - lo: a positive multiple of BLOCK_N); S of block j+1 is issued before block j's softmax
    k = tl.load(k_base + (lo + offs_n)[:, None] * stride_ks + offs_d[None, :])
    qk = tl.dot(q, tl.trans(k))
    for start_n in range(lo, hi - BLOCK_N, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k_next = tl.load(k_base + (start_n + BLOCK_N + offs_n)[:, None] * stride_ks + offs_d[None, :])
        qk_next = tl.dot(q, tl.trans(k_next))
        m_ij = tl.maximum(m_i, tl.max(qk, axis=1) * qk_scale)
        p = tl.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + (start_n + offs_n)[:, None] * stride_vs + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        qk = qk_next
    m_ij = tl.maximum(m_i, tl.max(qk, axis=1) * qk_scale)
    p = tl.exp2(qk * qk_scale - m_ij[:, None])
    alpha = tl.exp2(m_i - m_ij)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    acc = acc * alpha[:, None]
    v = tl.load(v_base + (hi - BLOCK_N + offs_n)[:, None] * stride_vs + offs_d[None, :])
    acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, l_i, m_ij


'''
DEMO_STAGE_1 = """    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_base, v_base, stride_ks, stride_vs, offs_m, offs_n, offs_d,
                                 0, full_hi, S, qk_scale, False, CAUSAL, BLOCK_N)"""
PIPELINED_STAGE_1 = """    if full_hi > 0:
        acc, l_i, m_i = _attn_blocks_pipe(acc, l_i, m_i, q, k_base, v_base, stride_ks, stride_vs, offs_m, offs_n,
                                          offs_d, 0, full_hi, S, qk_scale, BLOCK_N)"""


def pipelined(folder: Path):
    """The demo with its unmasked stage replaced by PIPELINED_LOOP (the masked stage as it was)."""
    source = DEMO.read_text()
    if DEMO_STAGE_1 not in source:
        sys.exit(f"{DEMO}: its first stage's call changed; update DEMO_STAGE_1 here")
    source = source.replace(DEMO_STAGE_1, PIPELINED_STAGE_1)
    source = source.replace("@triton.jit\ndef attn_fwd_kernel", PIPELINED_LOOP.lstrip("\n") + "@triton.jit\ndef attn_fwd_kernel")
    path = folder / "flash_attn_pipelined.py"
    path.write_text(source)
    return import_file(path)


def variants(folder: Path) -> list[tuple[str, object, dict]]:
    demo, tma = import_file(DEMO), import_file(ROOT / "benchmarks" / "triton_attention" / "tma.py")
    pipe = pipelined(folder)
    out = [(f"demo BN{bn} s{st}", demo, dict(BLOCK_M=128, BLOCK_N=bn, num_warps=8, num_stages=st))
           for bn, st in ((64, 3), (128, 3))]
    out += [(f"tma{' ws' if ws else ''} BN{bn} s{st}", tma, dict(BLOCK_M=128, BLOCK_N=bn, num_warps=8, num_stages=st, WS=ws))
            for ws in (False, True) for bn, st in ((128, 2), (128, 3), (64, 3), (64, 4))]
    out += [(f"pipelined BN{bn} s{st}", pipe, dict(BLOCK_M=128, BLOCK_N=bn, num_warps=8, num_stages=st))
            for bn, st in ((64, 2), (64, 3), (128, 2))]
    out += [(f"demo BM256 w16 BN{bn} s{st}", demo, dict(BLOCK_M=256, BLOCK_N=bn, num_warps=16, num_stages=st))
            for bn, st in ((64, 2), (64, 3))]
    return out


def tflops(ms: float, causal: bool) -> float:
    return 4 * 4 * 32 * 4096 * 4096 * 128 * (0.5 if causal else 1) / ms / 1e9


def main() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sdpa = torch.nn.functional.scaled_dot_product_attention
    small = [torch.randn(2, 3, 300, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3)]
    big = [torch.randn(4, 32, 4096, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, module, cfg in variants(Path(tmp)):
            t0 = time.time()
            if hasattr(module, "CFG"):
                module.CFG = cfg
            else:
                module._config = lambda D, causal, cfg=cfg: dict(cfg)
            try:
                err = max((module.kernel(*small, c).float() - sdpa(*small, is_causal=c).float()).abs().max().item()
                          for c in (False, True))
                rates = [tflops(triton.testing.do_bench(lambda: module.kernel(*big, c), warmup=100, rep=400), c)
                         for c in (False, True)]
            except Exception as exc:  # noqa: BLE001 - a variant that does not fit (shared memory) is a row too
                print(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
                err, rates = float("nan"), [0.0, 0.0]
            rows.append((name, err, *rates, time.time() - t0))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        cudnn = [tflops(triton.testing.do_bench(lambda: sdpa(*big, is_causal=c), warmup=100, rep=400), c)
                 for c in (False, True)]
    print(f"{'variant':<24} {'max err':>8} {'TF/s':>7} {'causal':>7} {'s':>5}")
    for name, err, nc, c, s in rows:
        print(f"{name:<24} {err:8.4f} {nc:7.1f} {c:7.1f} {s:5.1f}")
    print(f"{'cuDNN (SDPA)':<24} {'':>8} {cudnn[0]:7.1f} {cudnn[1]:7.1f}")


if __name__ == "__main__":
    main()
