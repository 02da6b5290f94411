"""bf16 through Triton's CPU interpreter, with and without rungs.backends.triton_interp.install().

The checks run in child processes (this file run as a script) so they get TRITON_INTERPRET=1 before any kernel is
decorated and an interpreter that no other test has patched; a child runs every case of one mode (patched or not:
INSTALLED, BARE; the guard, which patches and unpatches, alone), each from seed 0, and prints their measurements as one
JSON line, which the tests here judge (one child a mode per test process, not one a case: each child's start is torch's
and Triton's import). Run cases by hand with: TRITON_INTERPRET=1 python tests/test_interp_bf16.py gemm,attention
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    os.environ["TRITON_INTERPRET"] = "1"  # read when @triton.jit runs, so before the kernels below

import numpy as np
import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parent.parent


INSTALLED = ("add_mul", "gemm", "attention", "rowwise", "fp32_fp16", "fp32_dot")  # one child, patched
BARE = ("add_mul", "gemm", "fp32_dot")  # one child, unpatched


@functools.lru_cache(maxsize=None)
def run_cases(cases: tuple[str, ...], install: bool) -> dict:
    # PYTHONPATH first: another checkout of this project may be installed in site-packages.
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    args = [sys.executable, __file__, ",".join(cases)] + ([] if install else ["--no-install"])
    proc = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=480)
    assert proc.returncode == 0, f"cases {cases} failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_case(case: str, install: bool = True) -> dict:
    group = INSTALLED if install else BARE
    return run_cases(group if case in group else (case,), install)[case]


# ---------------------------------------------------------------------------------------------------- the tests


def test_without_install_bf16_is_garbage():
    add = run_case("add_mul", install=False)
    gemm = run_case("gemm", install=False)
    assert add["add_mismatches"] > 0.5 * add["n"]
    assert not gemm["fp32_out_rel_l2"] < 1e-2  # also true when it is NaN


def test_add_mul_bit_exact_against_torch():
    r = run_case("add_mul")
    assert r["add_mismatches"] == 0 and r["mul_mismatches"] == 0, r


def test_gemm_fp32_accumulation():
    r = run_case("gemm")
    assert r["fp32_out_rel_l2"] < 1e-5 and r["fp32_out_max_rel"] < 1e-5, r
    # fp32 accumulation rounded once to bf16: at most one bf16 ulp from the rounded exact product.
    assert r["bf16_out_max_ulps"] <= 1, r


def test_flash_attention_piece():
    r = run_case("attention")
    assert r["rel_l2"] < 1e-2, r
    assert r["rel_l2"] > 0, r  # p.to(bf16) and the bf16 output must round


def test_reductions_casts_and_math():
    r = run_case("rowwise")
    exact = ["where_cmp", "maximum_zeros", "cast_rne", "cast_rtz", "full_mul_add_const", "minus_row_max",
             "row_max", "bitcast_int16"]
    assert {k: r[k] for k in exact} == {k: 0 for k in exact}, r
    # Transcendentals: numpy's and torch's float32 libm may differ in the last float32 bit, so allow one bf16 ulp.
    assert max(r["exp"], r["exp2"], r["log_abs_plus_1"], r["row_sum"]) <= 1, r


def test_other_dtypes_unaffected_by_install():
    r = run_case("fp32_fp16")
    assert r["fp32_add_mismatches"] == 0 and r["fp16_gemm_rel_l2"] < 1e-5, r


def test_fp32_dot_rounds_to_tf32_as_the_gpu_does():
    """tl.dot on float32 data: the default (tf32) and "tf32" round each operand to TF32 as the H200's tensor cores do,
    landing in the band rungs/ladder/metrics.py names as TF32; "tf32x3" and "ieee" stay about float32-exact. Without the
    patch the interpreter computed every precision exactly, so a TF32 kernel passed here and failed on the GPU."""
    from rungs.ladder.metrics import TF32_BAND

    r = run_case("fp32_dot")
    assert TF32_BAND[0] < r["default"] < TF32_BAND[1] and r["tf32"] == r["default"], r
    assert 2e-4 < r["default"] < 5e-4, r  # rounded to nearest (7e-4 truncated)
    assert r["tf32x3"] < 1e-6 and r["ieee"] < 1e-6, r
    assert r["default_vs_emulation"] < 1e-6, r  # the same numbers as rungs.backends.triton_interp.tf32_dot, blocked over K
    before = run_case("fp32_dot", install=False)
    assert max(before[p] for p in ("default", "tf32", "tf32x3", "ieee")) < 1e-6, before


def test_install_is_idempotent_and_refuses_unexpected_interpreter():
    r = run_case("guard", install=False)
    assert "stores bf16 as float32, not uint16 bits" in r["changed_storage"]
    assert "InterpreterBuilder.create_fabs is missing" in r["missing_method"]
    assert r["untouched_after_refusal"] and r["same_patch_after_second_install"], r
    assert r["add_mismatches_after_double_install"] == 0, r


# ---------------------------------------------------------------------------------------------------- kernels


@triton.jit
def add_mul_kernel(x_ptr, y_ptr, sum_ptr, prod_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(sum_ptr + offs, x + y, mask=mask)
    tl.store(prod_ptr + offs, x * y, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + k[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_precision_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rn = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK):
        k = k0 + tl.arange(0, BLOCK)
        a = tl.load(a_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        if PRECISION == "default":
            acc += tl.dot(a, b)
        else:
            acc += tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S_Q, S_K, sm_scale, stride_q, stride_k, stride_v, stride_o,
                     D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * stride_q + rd[None, :], mask=rm[:, None] < S_Q, other=0.0)
    m_i = tl.full((BLOCK_M, ), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M, ), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) == exp2(x * log2(e))
    for n0 in range(0, S_K, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + rn[:, None] * stride_k + rd[None, :], mask=rn[:, None] < S_K, other=0.0)
        v = tl.load(v_ptr + rn[:, None] * stride_v + rd[None, :], mask=rn[:, None] < S_K, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(rn[None, :] < S_K, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * stride_o + rd[None, :], (acc / l_i[:, None]).to(tl.bfloat16),
             mask=rm[:, None] < S_Q)


ROWWISE_OUTPUTS = ["exp", "exp2", "log_abs_plus_1", "where_cmp", "maximum_zeros", "cast_rne", "cast_rtz",
                   "full_mul_add_const", "minus_row_max"]


@triton.jit
def rowwise_kernel(x_ptr, out_ptr, stats_ptr, bits_ptr, R, C, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    mask = cols < C
    x = tl.load(x_ptr + row * C + cols, mask=mask, other=0.0)
    row_max = tl.max(tl.where(mask, x, float("-inf")), axis=0)
    row_sum = tl.sum(x, axis=0)
    out = out_ptr + row * C + cols
    plane = R * C  # one [R, C] plane per entry of ROWWISE_OUTPUTS, in that order
    # Triton's math functions take fp32/fp64 only, so bf16 goes through them upcast; the stores round back.
    tl.store(out + 0 * plane, tl.exp(x.to(tl.float32)), mask=mask)
    tl.store(out + 1 * plane, tl.exp2(x.to(tl.float32)).to(tl.bfloat16), mask=mask)
    tl.store(out + 2 * plane, tl.log(tl.abs(x).to(tl.float32) + 1.0), mask=mask)
    tl.store(out + 3 * plane, tl.where(x > 0, x, x * 0.5), mask=mask)
    tl.store(out + 4 * plane, tl.maximum(x, tl.zeros((BLOCK_C, ), tl.bfloat16)), mask=mask)
    tl.store(out + 5 * plane, (x.to(tl.float32) * 3.0).to(tl.bfloat16), mask=mask)
    tl.store(out + 6 * plane, (x.to(tl.float32) / 3.0).to(tl.bfloat16, fp_downcast_rounding="rtz"), mask=mask)
    tl.store(out + 7 * plane, x * tl.full((BLOCK_C, ), 1.5, tl.bfloat16) + 1.0, mask=mask)
    tl.store(out + 8 * plane, x - row_max, mask=mask)
    tl.store(stats_ptr + row * 2, row_max)
    tl.store(stats_ptr + row * 2 + 1, row_sum)
    tl.store(bits_ptr + row * C + cols, x.to(tl.int16, bitcast=True), mask=mask)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


# ---------------------------------------------------------------------------------------------------- child cases


def bits(t: torch.Tensor) -> np.ndarray:
    return t.contiguous().view(torch.int16).numpy().astype(np.int32)


def ulps(got: torch.Tensor, want: torch.Tensor) -> int:
    """Largest distance in bf16 ulps between same-signed values (the bit patterns are then ordered)."""
    assert got.dtype == want.dtype == torch.bfloat16
    return int(np.abs(bits(got) - bits(want)).max())


def mismatches(got: torch.Tensor, want: torch.Tensor) -> int:
    return int((bits(got) != bits(want)).sum())


def rel_l2(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.double() - want).norm() / want.norm())


def case_add_mul() -> dict:
    n = 1000
    x, y = torch.randn(n).bfloat16(), torch.randn(n).bfloat16() * 100
    s, p = torch.empty_like(x), torch.empty_like(x)
    add_mul_kernel[(triton.cdiv(n, 128), )](x, y, s, p, n, BLOCK=128)
    return {"n": n, "add_mismatches": mismatches(s, x + y), "mul_mismatches": mismatches(p, x * y)}


def launch_matmul(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty(M, N, dtype=out_dtype)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    matmul_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return c


def case_gemm() -> dict:
    a, b = torch.randn(33, 65).bfloat16(), torch.randn(65, 47).bfloat16()
    ref = a.double() @ b.double()
    c32 = launch_matmul(a, b, torch.float32)
    c16 = launch_matmul(a, b, torch.bfloat16)
    return {"fp32_out_rel_l2": rel_l2(c32, ref),
            "fp32_out_max_rel": float((c32.double() - ref).abs().max() / ref.abs().max()),
            "bf16_out_max_ulps": ulps(c16, ref.bfloat16())}


def case_attention() -> dict:
    s_q, s_k, d = 77, 93, 64
    q, k, v = (torch.randn(s, d).bfloat16() for s in (s_q, s_k, s_k))
    o = torch.empty(s_q, d, dtype=torch.bfloat16)
    scale = d ** -0.5
    attention_kernel[(triton.cdiv(s_q, 32), )](q, k, v, o, s_q, s_k, scale, q.stride(0), k.stride(0), v.stride(0),
                                               o.stride(0), D=d, BLOCK_M=32, BLOCK_N=16)
    ref = torch.softmax(q.double() @ k.double().T * scale, dim=-1) @ v.double()
    return {"rel_l2": rel_l2(o, ref)}


def case_rowwise() -> dict:
    r, c = 6, 37
    x = (torch.randn(r, c) * 2).bfloat16()
    x[0, 3] = 0.0
    out = torch.empty(len(ROWWISE_OUTPUTS), r, c, dtype=torch.bfloat16)
    stats = torch.empty(r, 2, dtype=torch.bfloat16)
    bits16 = torch.empty(r, c, dtype=torch.int16)
    rowwise_kernel[(r, )](x, out, stats, bits16, r, c, BLOCK_C=64)
    f = x.float()
    rtz = torch.from_numpy(((f / 3.0).numpy().view(np.uint32) & 0xFFFF0000).view(np.float32)).bfloat16()
    want = {
        "exp": torch.exp(f).bfloat16(), "exp2": torch.exp2(f).bfloat16(),
        "log_abs_plus_1": torch.log(x.abs().float() + 1.0).bfloat16(),
        "where_cmp": torch.where(x > 0, x, x * 0.5), "maximum_zeros": torch.maximum(x, torch.zeros_like(x)),
        "cast_rne": (f * 3.0).bfloat16(), "cast_rtz": rtz, "full_mul_add_const": x * 1.5 + 1.0,
        "minus_row_max": x - x.max(dim=1, keepdim=True).values,
    }
    res = {}
    for i, name in enumerate(ROWWISE_OUTPUTS):
        res[name] = ulps(out[i], want[name]) if name in ("exp", "exp2", "log_abs_plus_1") else mismatches(
            out[i], want[name])
    res["row_max"] = mismatches(stats[:, 0], x.max(dim=1).values)
    res["row_sum"] = ulps(stats[:, 1].abs(), x.double().sum(dim=1).bfloat16().abs())
    res["bitcast_int16"] = int((bits16 != x.view(torch.int16)).sum())
    return res


def case_fp32_fp16() -> dict:
    n = 1000
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 128), )](x, y, out, n, BLOCK=128)
    a, b = torch.randn(33, 65).half(), torch.randn(65, 47).half()
    return {"fp32_add_mismatches": int((out != x + y).sum()),
            "fp16_gemm_rel_l2": rel_l2(launch_matmul(a, b, torch.float32), a.double() @ b.double())}


def case_fp32_dot() -> dict:
    M, N, K, block = 47, 63, 79, 32
    a, b = torch.randn(M, K), torch.randn(K, N)
    ref = a.double() @ b.double()
    res = {}
    for precision in ("default", "tf32", "tf32x3", "ieee"):
        c = torch.empty(M, N)
        matmul_precision_kernel[(triton.cdiv(M, block), triton.cdiv(N, block))](a, b, c, M, N, K, BLOCK=block,
                                                                                PRECISION=precision)
        res[precision] = rel_l2(c, ref)
        if precision == "default":
            default = c
    from rungs.backends.triton_interp import tf32_dot

    emulated = torch.from_numpy(tf32_dot(a.numpy(), b.numpy(), np.zeros((M, N), np.float32), "tf32"))
    res["default_vs_emulation"] = rel_l2(default, emulated.double())
    return res


def case_guard() -> dict:
    from triton.runtime import interpreter as interp

    from rungs.backends.triton_interp import Bf16PatchError, install

    res = {}
    post_init = interp.TensorHandle.__post_init__
    get_np_dtype = interp._get_np_dtype
    interp._get_np_dtype = lambda t: np.dtype(np.float32) if t == tl.bfloat16 else get_np_dtype(t)
    try:
        install()
    except Bf16PatchError as e:
        res["changed_storage"] = str(e)
    interp._get_np_dtype = get_np_dtype
    fabs = interp.InterpreterBuilder.create_fabs
    del interp.InterpreterBuilder.create_fabs
    try:
        install()
    except Bf16PatchError as e:
        res["missing_method"] = str(e)
    interp.InterpreterBuilder.create_fabs = fabs
    res["untouched_after_refusal"] = interp.TensorHandle.__post_init__ is post_init
    install()
    patched = interp.TensorHandle.__post_init__
    install()
    res["same_patch_after_second_install"] = interp.TensorHandle.__post_init__ is patched is not post_init
    res.update({f"{k}_after_double_install": v for k, v in case_add_mul().items() if k == "add_mismatches"})
    return res


CASES = {"add_mul": case_add_mul, "gemm": case_gemm, "attention": case_attention, "rowwise": case_rowwise,
         "fp32_fp16": case_fp32_fp16, "fp32_dot": case_fp32_dot, "guard": case_guard}

if __name__ == "__main__":
    if "--no-install" not in sys.argv:
        from rungs.backends.triton_interp import install

        install()
    results = {}
    for name in sys.argv[1].split(","):
        torch.manual_seed(0)  # each case's inputs as when it ran alone
        results[name] = CASES[name]()
    print(json.dumps(results))
