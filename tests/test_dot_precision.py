"""tl.dot's precision on float32 data (issue 39 item 2): the CPU interpreter computes TF32 as the GPU does, so a
float32 gemm with the default tl.dot fails a float32 tolerance here too, naming TF32; the dumps read the same from
the sm_90a SASS and the TTIR and judge it against the task's tolerance; the prompts never advise what it forbids."""
from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest

from rungs.ladder import dot_precision as dp
from rungs.core.spec import load_task
from rungs.ladder.ladder import check

from conftest import KERNELS, TASKS

FP32_GEMM = """\
name: gemm_fp32
description: C = A @ B in float32 (a test copy of the gemm task).
dsl: triton
entry: kernel
signature: "kernel(a: Tensor[M, K] float32, b: Tensor[K, N] float32) -> Tensor[M, N] float32"
reference: gemm_ref.py:reference
inputs: gemm_ref.py:make_inputs
dtypes: [{dtype}]
distributions: [normal]
seeds: 1
shapes:
  test:
    - {{M: 47, N: 63, K: 79}}
    - {{M: 64, N: 128, K: 96}}
  bench:
    - {{M: 1024, N: 1024, K: 1024}}
roofline: {{flops: "2*M*N*K", bytes: "4*(M*K + K*N + M*N)", target: 0.9, unit: fp32}}
budgets: {{iterations: 4, minutes: 10}}
"""


def fp32_task(tmp, dtype="float32"):
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(TASKS / "gemm_ref.py", tmp / "gemm_ref.py")
    (tmp / "gemm_fp32.yaml").write_text(FP32_GEMM.format(dtype=dtype))
    return load_task(tmp / "gemm_fp32.yaml")


def kernel_file(tmp, precision=None):
    text = (KERNELS / "gemm_fp32_tf32.py").read_text()
    if precision:
        text = text.replace("PRECISION = None", f"PRECISION = {precision!r}")
    path = tmp / "kernel.py"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def tf32_climb(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tf32")
    verdict = check(fp32_task(tmp / "task"), kernel_file(tmp), tmp / "work", dump_dir=tmp / "dumps", seeds=1)
    return verdict, tmp / "dumps"


def test_default_dot_fails_a_float32_task_on_the_cpu_naming_tf32(tf32_climb):
    verdict, _ = tf32_climb
    assert verdict.verdict == "fail" and verdict.failed_rung == "correctness", verdict.summary
    message = verdict.rung("correctness").message
    assert "rel_l2" in message and "TF32" in message and 'input_precision="ieee"' in message, message


def test_dumps_of_the_default_dot_carry_the_precision_finding(tf32_climb):
    verdict, dumps = tf32_climb
    rung = verdict.rung("dumps")
    assert rung.status == "ok" and rung.metrics["precision_breaks"] >= 1
    # the rung's one line (which the prompt shows after a failure too) and each build's block
    assert "precision: tf32 products break the float32 tolerance (rel_l2 <= 1e-05)" in rung.message, rung.message
    summary = (dumps / "summary.txt").read_text()
    assert "HGMMA.64x64x8.F32.TF32" in summary
    assert ("precision: TF32 products (HGMMA.64x64x8.F32.TF32: 10-bit mantissas) on float32 data break this task's "
            "float32 tolerance (rel_l2 <= 1e-05") in summary, summary
    assert "precision: the same as gemm_kernel.1's" in summary  # the test-shape build: said once
    assert "fails correctness on the GPU and in the CPU interpreter" in summary
    assert 'pass input_precision="ieee" to tl.dot' in summary and '"tf32x3"' in summary
    assert "=> precision: tf32 products break the float32 tolerance" in summary


def test_ieee_dot_passes_and_dumps_call_it_exact(tmp_path):
    verdict = check(fp32_task(tmp_path / "task"), kernel_file(tmp_path, "ieee"), tmp_path / "work",
                    dump_dir=tmp_path / "dumps", seeds=1)
    assert verdict.verdict == "pass", verdict.summary
    summaries = json.loads((tmp_path / "dumps" / "summary.json").read_text())
    assert all(not s["matrix"] for s in summaries)
    timed = summaries[0]
    assert timed["role"] == "timed" and not timed["precision"]["breaks"]
    assert timed["verdict"].startswith("no matrix instructions: arithmetic on plain FFMA (exact float32 products "
                                       "from tl.dot at ieee, as the tolerance needs)"), timed["verdict"]
    assert 'tl.dot(..., input_precision="tf32x3") would use the tensor cores within it' in timed["precision"]["text"]


def test_a_task_that_lists_tf32_allows_it():
    tf32 = SimpleNamespace(dtypes=["tf32"], tolerances={}, dsl="triton")
    ctx = dp.task_precision(tf32)
    assert dp.allowed("tf32", ctx) and not dp.allowed("bf16", ctx)
    found = dp.kernel_precision({"HGMMA.64x64x8.F32.TF32": 4}, None, ctx)
    assert not found["breaks"] and "within this task's tf32 tolerance (rel_l2 <= 0.002" in found["text"]
    assert "within the tf32 tolerance" in dp.contract_note(tf32)
    assert dp.matrix_advice(tf32) == "matrix instructions for the products (tl.dot; the dumps rung counts them)"


def test_float32_tolerance_forbids_tf32_and_advice_names_only_what_it_allows():
    f32 = SimpleNamespace(dtypes=["float32"], tolerances={}, dsl="triton")
    ctx = dp.task_precision(f32)
    assert dp.broken_limits("tf32", ctx["limits"]) == ["rel_l2 <= 1e-05", "max_abs_scaled <= 0.0001", "psnr_db >= 90"]
    assert dp.allowed("tf32x3", ctx)
    advice = dp.matrix_advice(f32)
    assert 'input_precision="ieee"' in advice and '"tf32x3"' in advice and "the default TF32 breaks it" in advice
    note = dp.contract_note(f32)
    assert "which breaks the float32 tolerance (rel_l2 <= 1e-05, max_abs_scaled <= 0.0001" in note, note
    # A tolerance too tight for tf32x3 too: it is not offered.
    tight = SimpleNamespace(dtypes=["float32"], tolerances={"float32": SimpleNamespace(
        model_dump=lambda: {"rel_l2": 1e-7, "max_abs_scaled": None, "psnr_db": None, "cosine": None})}, dsl="triton")
    assert "tf32x3" not in dp.matrix_advice(tight) and "tf32x3" not in dp.contract_note(tight)
    # bf16 products of float32 data: named, and the cast is the fix
    found = dp.kernel_precision({"HGMMA.64x128x16.F32.BF16": 8}, None, ctx)
    assert found["breaks"] and "keep the operands float32 (no cast before tl.dot)" in found["text"]
    # a bf16 task's BF16 instructions are not a finding; no float32 data, nothing to say
    assert dp.kernel_precision({"HGMMA.64x128x16.F32.BF16": 8}, None, None) is None
    mixed = dp.task_precision(SimpleNamespace(dtypes=["float32", "bfloat16"], tolerances={}, dsl="triton"))
    assert dp.kernel_precision({"HGMMA.64x128x16.F32.BF16": 8}, None, mixed) is None


@pytest.mark.parametrize("op, kind", [("HGMMA.64x64x8.F32.TF32", "tf32"), ("HMMA.1688.F32.TF32", "tf32"),
                                      ("HGMMA.64x256x16.F32.BF16", "bf16"), ("HMMA.16816.F32", "f16"),
                                      ("QGMMA.64x128x32.F32.E4M3.E4M3", "fp8"), ("IMMA.16832.S8.S8", None)])
def test_matrix_kind_reads_the_sass_input_type(op, kind):
    assert dp.matrix_kind(op) == kind


def test_ttir_tells_tf32x3_from_tf32():
    ttir = ("%acc = tt.dot %a, %b, %c, inputPrecision = tf32x3 : tensor<64x32xf32> * tensor<32x64xf32> -> t\n"
            "%d = tt.dot %x, %y, %z : tensor<64x32xf32> * tensor<32x64xf32> -> t\n"
            "%e = tt.dot %p, %q, %r : tensor<64x32xbf16> * tensor<32x64xbf16> -> t\n")
    assert dp.ttir_dots(ttir) == {"tf32x3": 1, "ieee": 1}
    ctx = dp.task_precision(SimpleNamespace(dtypes=["float32"], tolerances={}, dsl="triton"))
    found = dp.kernel_precision({"HGMMA.64x64x8.F32.TF32": 12}, ttir, ctx)
    assert not found["breaks"] and found["short"] == "tf32x3 products, within the tolerance"


# ---- the prompts ----------------------------------------------------------------------------------------------
def cpu_pass_prompt(task):
    from harness import feedback
    from harness.prompts import render_iteration
    from rungs.core.result import RungResult, Verdict

    cpu = feedback.Environment(dsl="triton", dsl_version="3.9.0", torch_version="2.13.0+cpu", gpu=None)
    verdict = Verdict(verdict="pass", failed_rung=None,
                      rungs=[RungResult(name="correctness", status="ok", message="2 cases pass")])
    it = SimpleNamespace(iteration=1, source="model", notes="", verdict=verdict)
    return render_iteration(task=task, history=[it], last=it, last_code="pass\n", best=it, best_code="pass\n",
                            base_code=None, hints=[], iteration=2, budget=task.budgets, env=cpu)


def test_what_to_do_now_never_advises_tf32_on_a_float32_task(tmp_path):
    text = cpu_pass_prompt(fp32_task(tmp_path))
    now = text.split("## What to do now")[1]
    assert "matrix instructions for the products" not in now
    assert ('matrix products within the float32 tolerance (tl.dot with input_precision="ieee", or "tf32x3" for the '
            "tensor cores at about float32's accuracy; the default TF32 breaks it") in now, now
    # a task that lists tf32, and a bf16 task: matrix instructions, as before
    for t in (fp32_task(tmp_path / "tf32", dtype="tf32"), load_task(TASKS / "gemm.yaml")):
        assert "matrix instructions for the products (tl.dot; the dumps rung counts them)" in cpu_pass_prompt(t)


def test_the_contract_says_what_tf32_does_to_float32_data(tmp_path):
    from harness.prompts import render_task

    contract = render_task(fp32_task(tmp_path))
    assert ("float32 data and matrix products: tl.dot's default input_precision (\"tf32\" on an NVIDIA GPU, and in "
            "this harness's CPU interpreter) rounds each operand to TF32 (rel_l2 about 3e-04 on a gemm), which breaks "
            "the float32 tolerance (rel_l2 <= 1e-05, max_abs_scaled <= 0.0001, psnr_db >= 90)") in contract, contract
    assert 'Pass input_precision="ieee" to tl.dot (exact float32 products on FFMA), or "tf32x3"' in contract
    assert "within the tf32 tolerance" in render_task(fp32_task(tmp_path / "tf32", dtype="tf32"))
    # float32 data without matrix products (softmax), and bf16 data: nothing said
    assert "float32 data and matrix products" not in render_task(load_task(TASKS / "softmax.yaml"))
    assert "float32 data and matrix products" not in render_task(load_task(TASKS / "gemm.yaml"))


def test_tf32_noise_is_not_called_a_scale_bug():
    """A TF32 gemm's error (rel_l2 3e-4 at cosine 1 - 4e-8) lies across the reference, not along it: the failure
    view said 'a scale bug (a factor missing or applied twice)'; a true scale error (cosine 1) still reads as one."""
    from harness import feedback

    tf32 = [feedback.CaseRow("c000", {"M": 47}, "float32", 1, "normal", 2.9e-4, 1 - 4.2e-8, False)]
    assert feedback.scale_note(tf32, 1e-5) is None
    doubled = [feedback.CaseRow("c000", {"M": 47}, "float32", 1, "normal", 1.0, 1.0, False)]
    assert "scale bug" in feedback.scale_note(doubled, 1e-5)
