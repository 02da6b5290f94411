"""The correctness rung: metrics against hand-computed cases, and wrong kernels that must fail by name."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from rungs.ladder import metrics as m
from rungs.ladder.correctness import error_picture
from rungs.ladder.ladder import check

from conftest import KERNELS, TASKS


def test_metrics_hand_computed():
    got = torch.tensor([1.0, 2.0, 3.0, 4.0])
    exp = torch.tensor([1.0, 2.0, 3.0, 5.0])
    x = m.metrics_of(got.double(), exp.double())
    assert x["max_abs_err"] == 1.0
    assert x["max_rel_err"] == pytest.approx(0.2)
    assert x["mae"] == pytest.approx(0.25)
    assert x["mse"] == pytest.approx(0.25)
    assert x["rmse"] == pytest.approx(0.5)
    assert x["rel_l2"] == pytest.approx(1 / math.sqrt(1 + 4 + 9 + 25))
    assert x["psnr_db"] == pytest.approx(10 * math.log10(25 / 0.25))  # peak 5, mse 0.25: 20 dB
    assert x["cosine"] == pytest.approx((1 + 4 + 9 + 20) / (math.sqrt(30) * math.sqrt(39)))
    assert x["max_abs_scaled"] == pytest.approx(1.0 / math.sqrt(39 / 4))


def test_zeros_fail_on_a_small_valued_task():
    """KernelBench issue 165: a fixed atol passes all-zero outputs when the outputs are tiny; relative metrics do not."""
    ref = torch.full((64,), 1e-6, dtype=torch.float64) * torch.linspace(1, 2, 64, dtype=torch.float64)
    metrics, _, _ = m.compare(torch.zeros(64), ref)
    assert m.violations(metrics, m.thresholds("float32"))
    assert metrics["cosine"] == 0.0 and metrics["rel_l2"] == 1.0


def test_the_elementwise_check_counts_elements_outside_atol_plus_rtol():
    """atol/rtol (a KernelBench task's): torch.allclose's rule, counted; a limit, never a metric of its own."""
    ref = torch.tensor([1.0, 2.0, 100.0, 0.0], dtype=torch.float64)
    got = torch.tensor([1.0001, 5.0, 100.005, 0.0])
    limits = m.thresholds("float32", {"atol": 1e-3, "rtol": 1e-4, "rel_l2": 1.0, "max_abs_scaled": 1.0,
                                      "psnr_db": 0.0, "cosine": 0.0})
    metrics, _, broken = m.assess(got, ref, "float32", limits)
    assert metrics["allclose_outside"] == 1.0  # 5 is 3 off; 100.005 is within 1e-3 + 1e-4 * 100
    assert broken == ["1 element(s) outside |out - ref| <= atol 0.001 + rtol 0.0001 x |ref| (KernelBench's allclose)"]
    assert "allclose_outside" not in m.assess(got, ref, "float32", m.thresholds("float32"))[0]  # unless a task sets it


def test_nonfinite_passes_only_where_the_reference_has_it():
    ref = torch.tensor([1.0, float("inf"), float("nan")], dtype=torch.float64)
    assert m.compare(torch.tensor([1.0, float("inf"), float("nan")]), ref)[2] is None
    problem = m.compare(torch.tensor([float("nan"), float("inf"), float("nan")]), ref)[2]
    assert problem and "NaN/Inf where the reference is not" in problem
    assert m.compare(torch.tensor([1.0, 5.0, float("nan")]), ref)[2]


def test_nan_origin_tells_computed_from_never_written():
    """The first run's fresh memory holds NaN, the re-run's 1234.5: a NaN in both runs was computed; a NaN that
    shows the pattern in the re-run was never written; with no re-run the two are not told apart."""
    nan = float("nan")
    ref = torch.tensor([1.0, 2.0, 3.0, 4.0, nan], dtype=torch.float64)
    out = torch.tensor([nan, nan, nan, 4.0, nan])
    again = torch.tensor([1234.5, nan, 7.0, 4.0, nan])
    origin = m.nan_origin(out, ref, again, 1234.5)
    assert origin["unwritten"].tolist() == [True, False, False, False, False]
    assert origin["computed"].tolist() == [False, True, False, False, False]  # the reference's own NaN is no fault
    assert origin["unstable"].tolist() == [False, False, True, False, False]
    words = m.describe_nan(origin)
    assert "1 never written" in words and "1 computed NaN" in words and "1 NaN in the first run only" in words
    assert "never written or computed" in m.describe_nan(m.nan_origin(out, ref, None, 1234.5))


def test_thresholds_override_and_direction():
    limits = m.thresholds("bfloat16", {"rel_l2": 0.5, "psnr_db": None})
    assert limits["rel_l2"] == 0.5 and limits["psnr_db"] == m.DEFAULT_TOLERANCES["bfloat16"]["psnr_db"]
    assert m.violations({"max_abs_scaled": 0, "rel_l2": 0.6, "psnr_db": 10, "cosine": 1}, limits) == [
        "rel_l2 0.6 > 0.5", "psnr_db 10 < 40"]


def test_error_picture_locates_a_bad_column():
    ref = torch.ones(4, 6, dtype=torch.float64)
    out = ref.clone()
    out[:, 5] = 2.0
    assert error_picture(out, ref, 1e-3) == "4 of 24 elements off (17%); dim 0 (size 4): all; dim 1 (size 6): 5"


@pytest.fixture(scope="module")
def softmax_wrong_task(softmax_task):
    """The softmax task at two of its small shapes (the 1000x1023 one holds 85% of its elements, interpreted: most of
    a climb's time; the wider ones are built and interpreted apart): every wrong kernel here is named as well there
    (a row block, the last column or row, bf16 rounding, a cached answer, a race), and the divisible-only one gets
    the one shape that names it (wrong_verdict)."""
    shapes = [s for s in softmax_task.shapes.test if s in ({"M": 4, "N": 7}, {"M": 33, "N": 1023})]
    assert len(shapes) == 2
    return softmax_task.model_copy(update={"shapes": softmax_task.shapes.model_copy(update={"test": shapes})})


@pytest.fixture(scope="module")
def wrong_verdict(softmax_wrong_task, tmp_path_factory):
    """A wrong kernel's verdict, climbed once per test process: the tests below read different facts of the same
    climb. No second build at the bench shapes (bench_dumps): these judge outputs (tests/test_dumps.py checks that
    build)."""
    climbed = {}

    def verdict(kernel: str):
        if kernel not in climbed:
            seeds = 2 if kernel == "wrong_first_seed_only.py" else 1  # one seed per shape names every other bug
            # Interpreted on a loaded 2-core machine the largest shapes take tens of seconds per call, and the probe
            # case runs twice: the default 120 s limit is for hangs, which none of these is.
            task = softmax_wrong_task.model_copy(update={"timeout_s": 360.0})
            if kernel == "wrong_divisible_only.py":  # its 64-wide chunk loop interprets slowly: the one shape that names it
                task = task.model_copy(update={"shapes": task.shapes.model_copy(update={"test": [{"M": 33, "N": 1023}]})})
            tmp = tmp_path_factory.mktemp(kernel.removesuffix(".py"))
            # one base seed for the tile bug: test_wrong_kernel_messages reads its message's seed
            climbed[kernel] = check(task, KERNELS / kernel, tmp / "w", dump_dir=tmp / "d", seeds=seeds,
                                    base_seed=7 if kernel == "wrong_one_tile.py" else None, bench_dumps=False)
        return climbed[kernel]

    return verdict


@pytest.mark.parametrize("kernel, rung, expect", [
    ("wrong_one_tile.py", "correctness", "dim 0 (size "),          # one row block: the picture names the row
    ("wrong_mask_off_by_one.py", "correctness", "never written (NaN, the poison"),  # the last column keeps it
    ("wrong_computed_nan.py", "correctness", "computed NaN (NaN in both runs"),  # 0/0: written, not poison
    ("wrong_low_precision.py", "correctness", "rel_l2"),           # bf16 rounding breaks fp32 tolerances
    ("wrong_last_row.py", "correctness", "never written"),
    # the cached answer is served without a launch: caught at run, before the stale values are compared
    ("wrong_first_seed_only.py", "run", "no Triton kernel was launched for this case"),
    ("wrong_divisible_only.py", "correctness", "never written (still NaN): dim 0 (size 33): all; dim 1 (size 1023): 960-1022"),
    ("wrong_uninitialized.py", "correctness", "suspected race or read of uninitialized memory"),
])
def test_wrong_kernels_fail_by_name(wrong_verdict, kernel, rung, expect):
    v = wrong_verdict(kernel)
    assert v.failed_rung == rung, v.summary
    details = v.rung(rung).details
    assert expect in details, details[:2000]


def test_wrong_kernel_messages(wrong_verdict):
    # one seed: the bug is row 3's tile whatever the inputs (the message's shape, not the seed count, is checked)
    v = wrong_verdict("wrong_one_tile.py")
    msg = v.rung("correctness").message
    assert "dim 0 (size 33): 3;" in v.rung("correctness").details or "dim 0 (size 1000): 3;" in v.rung("correctness").details
    assert "worst element [3," in msg
    assert v.rung("correctness").metrics["base_seed"] == 7


def test_honest_kernel_passes_on_fresh_seeds(softmax_task, tmp_path):
    # two small shapes, one seed each: the base seed is what must change between climbs, not the task's sizes
    task = softmax_task.model_copy(update={"shapes": softmax_task.shapes.model_copy(
        update={"test": [{"M": 4, "N": 7}, {"M": 3, "N": 33}]})})
    seeds = set()
    for i in range(2):
        v = check(task, TASKS / "demos" / "softmax_3_rowwise.py", tmp_path / f"w{i}", seeds=1, bench_dumps=False)
        assert v.verdict == "pass", v.summary
        seeds.add(v.rung("correctness").metrics["base_seed"])
    assert len(seeds) == 2


def test_exact_answer_rounded_to_bf16_passes_and_one_bad_element_fails():
    g = torch.Generator().manual_seed(0)
    ref = (torch.randn(4096, generator=g, dtype=torch.float64) ** 5)  # heavy-tailed: a few values far above the RMS
    rounded = ref.to(torch.bfloat16)
    limits = m.thresholds("bfloat16")
    metrics, _, _ = m.compare(rounded, ref, m.ROUNDING["bfloat16"])
    assert not m.violations(metrics, limits), metrics
    broken = rounded.clone()
    broken[123] = broken[123] + 0.2 * ref.pow(2).mean().sqrt().item()
    metrics, _, _ = m.compare(broken, ref, m.ROUNDING["bfloat16"])
    assert any(v.startswith("max_abs_scaled") for v in m.violations(metrics, limits))


def test_wrong_mask_is_not_called_computed(wrong_verdict):
    v = wrong_verdict("wrong_mask_off_by_one.py")
    assert "computed NaN" not in v.rung("correctness").details


def test_honest_kernel_computing_the_references_nan_passes(tmp_path):
    """A row of -inf: the exact softmax is 0/0 there, and an honest kernel computes that same NaN."""
    from rungs.core.spec import load_task

    task = load_task(Path(__file__).resolve().parent / "data" / "nan_rows" / "nan_rows.yaml")
    v = check(task, TASKS / "demos" / "softmax_3_rowwise.py", tmp_path / "w", dump_dir=tmp_path / "d", bench_dumps=False)
    assert v.verdict == "pass", v.summary
    wrong = check(task, KERNELS / "wrong_computed_nan.py", tmp_path / "x", dump_dir=tmp_path / "d2", bench_dumps=False)
    assert wrong.failed_rung == "correctness" and "computed NaN" in wrong.rung("correctness").message


def test_bf16_rounding_allowance_is_the_same_after_timing(tmp_path):
    """The recheck after timing judges with the allowance the correctness rung gives: an output that is the exact
    answer rounded to bf16 passes both (without the allowance, the recheck failed it as 'no longer matches')."""
    from rungs.ladder import integrity
    from rungs.ladder.cases import Case

    g = torch.Generator().manual_seed(0)
    ref = torch.randn(64, 64, generator=g, dtype=torch.float64)
    ref[7, 7] = 50.12  # one large value: its bf16 rounding (to 50.0) is 0.09 of the RMS, over the 0.08 guard
    rounded = ref.to(torch.bfloat16)
    limits = m.thresholds("bfloat16")
    case = Case(id="r000", shape={"M": 64}, dtype="bfloat16", seed=0, dist="normal", first_of_shape=True,
                inputs=(), reference=[ref])
    torch.save([rounded], tmp_path / "out-r000-after-bench.pt")
    phase = {"recheck": {"id": "r000", "file": "out-r000-after-bench.pt"}}
    assert not m.assess(rounded, ref, "bfloat16", limits)[2]  # correctness passes it
    assert m.violations(m.compare(rounded, ref)[0], limits)  # and without the allowance it would fail
    assert integrity.after_bench(case, tmp_path, phase, limits) is None
    broken = rounded.clone()
    broken[5, 5] += 0.5 * float(ref.pow(2).mean().sqrt())
    torch.save([broken], tmp_path / "out-r000-after-bench.pt")
    assert "no longer matches the reference" in integrity.after_bench(case, tmp_path, phase, limits)


def _round_mantissa(x: torch.Tensor, bits: int) -> torch.Tensor:
    """float32 `x` rounded to `bits` explicit mantissa bits (10: TF32, 7: bf16), to nearest."""
    drop = 23 - bits
    i = x.float().contiguous().view(torch.int32)
    return ((i + (1 << (drop - 1))) & ~((1 << drop) - 1)).view(torch.float32)


def test_float32_miss_by_tf32_rounding_names_the_cause():
    """A float32 GEMM whose products took TF32 inputs (tl.dot's default on the GPU) misses the float64 reference by
    about 1e-4 in rel_l2: the message says why and what to do. An exact float32 answer, a plainly wrong one, and
    the same TF32 error on a task that allows tf32 get no hint."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(64, 256, generator=g)
    b = torch.randn(256, 48, generator=g)
    ref = a.double() @ b.double()
    tf32_out = (_round_mantissa(a, 10).double() @ _round_mantissa(b, 10).double()).float()
    assert _round_mantissa(torch.tensor([1 + 2**-12]), 10).item() == 1.0  # under TF32's last bit: rounded away
    limits = m.thresholds("float32")
    metrics, _, broken = m.assess(tf32_out, ref, "float32", limits)
    assert m.TF32_BAND[0] <= metrics["rel_l2"] <= m.TF32_BAND[1], metrics["rel_l2"]
    assert broken[-1] == m.TF32_HINT and len(broken) > 1  # after the limits it breaks
    assert 'looks like TF32 or bf16 math (tl.dot\'s default input_precision is tf32 on the GPU): pass ' \
           'input_precision="ieee" or allow tf32 in the task' in "; ".join(broken)
    bf16_out = (_round_mantissa(a, 7).double() @ _round_mantissa(b, 7).double()).float()
    assert m.assess(bf16_out, ref, "float32", limits)[2][-1] == m.TF32_HINT
    assert m.assess(ref.float(), ref, "float32", limits)[2] == []  # honest float32: passes, no hint
    wrong = ref.float() * 1.5
    assert m.assess(wrong, ref, "float32", limits)[2] and m.TF32_HINT not in m.assess(wrong, ref, "float32", limits)[2]
    assert m.assess(tf32_out, ref, "tf32", m.thresholds("tf32"))[2] == []  # a tf32 task: within its tolerance
    assert m.precision_hint("bfloat16", metrics) is None


def test_pin_precision_turns_tf32_off_unless_the_task_allows_it(monkeypatch):
    from rungs.core import precision

    # torch's flags are process-wide: put back what the test found
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
              torch.get_float32_matmul_precision())
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        assert not precision.tf32_off()
        assert precision.pin_precision(["float32", "tf32"]) is False and not precision.tf32_off()
        assert precision.pin_precision(["float32"]) is True and precision.tf32_off()
        assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False
        assert torch.get_float32_matmul_precision() == "highest"
        torch.backends.cudnn.allow_tf32 = True
        with precision.ieee_float32():
            assert precision.tf32_off()
        assert torch.backends.cudnn.allow_tf32 is True  # the reference's pin is undone after
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before[:2]
        torch.set_float32_matmul_precision(before[2])


def test_references_are_computed_with_tf32_off(tmp_path, monkeypatch):
    """rungs/ladder/cases.py computes the trusted references under precision.ieee_float32()."""
    from rungs.ladder import cases
    from rungs.core import precision
    from rungs.core.spec import load_task

    seen = []
    real = cases.task_call

    def spy(task, key, fn, shape, *args):
        if key == "reference":
            seen.append(precision.tf32_off())
        return real(task, key, fn, shape, *args)

    monkeypatch.setattr(cases, "task_call", spy)
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = True
    try:
        task = load_task(TASKS / "softmax.yaml")
        cases.make_cases(task, [{"M": 4, "N": 7}], 1, with_reference=True)
    finally:
        torch.backends.cudnn.allow_tf32 = before
    assert seen == [True]


TINY_SOFTMAX = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over rows, scaled down so that the outputs are about 1e-6 at the CPU test shape, as upstream's
    23_Softmax (4096 x 393216) is at its real size (2.5e-6), where each row's 393216 outputs share 1."""

    def forward(self, x):
        return torch.softmax(x, dim=1) / 16384.0


batch_size = 64
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''
CONSTANT = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill(out_ptr, value, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32) + value, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        fill[(triton.cdiv(x.numel(), 256),)](out, VALUE, x.numel(), BLOCK=256)
        return out
'''


@pytest.mark.parametrize("value", ["0.0", "1.0 / (x.shape[1] * 16384.0)"], ids=["zeros", "the mean"])
def test_a_constant_kernel_fails_where_every_output_is_near_zero_naming_the_check(tmp_path, monkeypatch, value):
    """Upstream's allclose (atol = rtol = 1e-4 in fp32) passes a kernel that writes zeros, or each row's mean, where
    the reference is about 1e-6 everywhere (KernelBench's 23_Softmax at its real size: 2.5e-6). The ladder fails both at
    correctness, and the message says which check caught it: the relative L2 error against the reference's own
    magnitude."""
    from harness.kernelbench import load_problem
    from rungs.ladder.cases import make_cases

    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    problem = tmp_path / "23_Softmax.py"
    problem.write_text(TINY_SOFTMAX)
    kernel = tmp_path / "constant.py"
    kernel.write_text(CONSTANT.replace("VALUE", value))
    task = load_problem(problem)
    case = make_cases(task, task.shapes.test[:1], 1, with_reference=True, base_seed=0)[0]
    (ref,) = case.reference
    assert ref.abs().max() < 1e-4  # tiny everywhere: below upstream's atol
    constant = torch.full_like(ref, eval(value, {"x": ref}))
    assert torch.allclose(constant, ref, atol=1e-4, rtol=1e-4)  # upstream's check passes it

    assert task.tolerances["float32"].atol == 1e-4  # the task carries upstream's check...
    v = check(task, kernel, tmp_path / "w", seeds=1)
    assert v.failed_rung == "correctness", v.summary
    msg = v.rung("correctness").message
    # ...which the output passes; the message says so, and which check caught it
    assert ": every element is within atol 0.0001 + rtol 0.0001 x |ref| (KernelBench's allclose passes it) of a " \
           "reference of RMS " in msg, msg
    assert "; caught by rel_l2 " in msg and " > 1e-05 (the error's L2 norm against the reference's own)" in msg, msg


@pytest.mark.parametrize("value", [0.0, 1.0 / (1024 * 16384.0)], ids=["zeros", "the mean"])
def test_the_bench_shape_sampled_comparison_fails_a_constant_where_the_reference_is_near_zero(tmp_path, value):
    """The same at the bench shape, where the parent judges a sample of rows (a first call too large to save whole,
    or a checked timed call): rungs.ladder.bench_reference.check_sample, on a CPU, with the reference at those rows
    only; and the whole first call's comparison (judge_outputs)."""
    from rungs.ladder.bench_reference import check_sample, judge_outputs
    from rungs.worker.job import sample_rows, shape_record

    def reference(x):
        return torch.softmax(x, dim=1) / 16384.0

    x = torch.randn(1024, 1024)
    n = sample_rows((1024, 1024))
    rows = torch.randperm(1024)[:n].clone()  # distinct, as the worker draws them where the sample is a quarter of the rows
    record = torch.tensor(shape_record((1024, 1024)))
    torch.save([torch.full((n, 1024), value), rows, torch.empty(0, dtype=torch.int64), record], tmp_path / "out-b00-first.pt")
    limits = m.thresholds("float32", {"atol": 1e-4, "rtol": 1e-4})  # as a KernelBench task's job carries them
    broken = check_sample({"dtype": "float32"}, "out-b00-first.pt", "the first timed call", tmp_path, reference, [0],
                          "cpu", limits, 0, [x], [x], [((1024, 1024), torch.float64)])
    assert broken is not None and "(KernelBench's allclose passes it)" in broken and "caught by rel_l2 " in broken
    whole = judge_outputs([torch.full((1024, 1024), value)], [reference(x.double())], "float32", limits, "cpu")
    assert whole and "(KernelBench's allclose passes it)" in whole[0] and "caught by rel_l2 " in whole[0], whole


def test_an_integer_output_is_expected_in_the_reference_s_own_dtype(softmax_task):
    """KernelBench's 51_Argmax / 52_Argmin give int64 whatever the input dtype: the early output check asked for the
    task's float32 and failed every honest argmax ("has dtype int64, expected float32"); a float where the reference
    gives integers still fails."""
    from rungs.ladder.cases import Case
    from rungs.ladder.correctness import check_outputs

    case = Case(id="c000", shape={"M": 4, "N": 7}, dtype="float32", seed=1, dist="normal", first_of_shape=True,
                inputs=(torch.zeros(4, 7),), reference=[torch.zeros(4, dtype=torch.int64), torch.zeros(4, 7)])
    tensor = {"kind": "tensor", "device": "cpu", "contiguous": True, "stride": [1]}

    def result(first: str) -> dict:
        return {"id": "c000", "outputs": [{**tensor, "dtype": first, "shape": [4]},
                                          {**tensor, "dtype": "float32", "shape": [4, 7]}],
                "inputs_changed": [], "launches": 1}
    assert check_outputs([case], [result("int64")], "cpu", softmax_task) == []
    assert check_outputs([case], [result("float32")], "cpu", softmax_task) == [
        "case c000 (M=4 N=7 float32 seed=1 normal): output 0 has dtype float32, expected int64"]
