"""KernelBench problem files as tasks (harness/kernelbench.py, rungs/core/kernelbench_problem.py): the adapter's shapes,
roofline and notes; the reference's weights reaching ModelNew; one problem with weights through `harness check`."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT
import warm
from rungs.worker.job import Job
from rungs.core.errors import BadInput
from harness.kernelbench import (ELEMENT_BUDGET, LEADING_LONG, LONG_ELEMENTS, LONG_WEIGHTS, LONG_WEIGHTS_GROWN,
                                 SHRINK_FLOOR, _leads, _meta_counts, _meta_run, _tensors, load_problem)
from harness.spec import load_task
from rungs.ladder.cases import degenerate_warnings, make_cases
from rungs.core.imports import import_file
from rungs.core.kernelbench_problem import INIT_FILE, SEMANTICS, ModuleEntry, upstream_mode
from rungs.ladder import gpu_memory
from rungs.ladder.ladder import check

KB = ROOT / "tests" / "kernelbench_format"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))


def test_matmul_problem_is_a_task_with_small_test_shapes_and_its_own_bench_shape():
    task = load_task(KB / "level1" / "1_matmul.py")
    assert task.entry == "ModelNew" and task.dtypes == ["float32"]
    assert task.shapes.bench == [{"M": 1024, "K": 2048, "N": 1536}]
    small, odd = task.shapes.test
    assert 2 * (small["M"] * small["K"] + small["K"] * small["N"]) <= 2 * ELEMENT_BUDGET
    assert odd == {k: v + 1 for k, v in small.items()}  # sizes no block divides
    flops, nbytes = task.floor_terms(task.shapes.bench[0])
    assert flops == 2 * 1024 * 2048 * 1536
    assert nbytes == 4 * (1024 * 2048 + 2048 * 1536 + 1024 * 1536)


def test_test_shapes_have_distinct_sizes_and_sizes_no_block_divides_within_the_budget():
    """Halving the largest size first made every dimension equal (64 64 64): a kernel that swaps two of them
    passed. Each dimension (a size global above the floor) now differs from the others in every test shape, in the
    order the file gives them where the halving made them equal, and some shape holds a size that is not a multiple
    of 16 in every dimension; every shape stays within the CPU budget."""
    gemm = load_task(KB / "level2" / "9_gemm_scale_tanh.py")
    assert gemm.shapes.test[0] == {"batch_size": 48, "in_features": 64, "out_features": 80}  # 256 < 512 < 1024
    assert gemm.shapes.test[1] == {"batch_size": 47, "in_features": 63, "out_features": 79}  # +1 is over the budget
    assert gemm.shapes.bench == [{"batch_size": 256, "in_features": 512, "out_features": 1024}]
    for path in sorted(KB.glob("level*/*.py")):
        task = load_task(path)
        dims = [k for k, v in task._problem.defaults.items() if v > SHRINK_FLOOR]
        assert len(task.shapes.test) == 2, path.name
        for shape in task.shapes.test:
            assert len({shape[k] for k in dims}) == len(dims), (path.name, shape)
            assert _meta_run(task._problem, shape)[0] <= ELEMENT_BUDGET, (path.name, shape)
        for k in dims:
            assert any(shape[k] % 16 for shape in task.shapes.test), (path.name, k, task.shapes.test)


def test_shrinking_keeps_what_the_files_sizes_test():
    """A red team (2026-12-05) passed two wrong kernels at the shrunk sizes: GroupNorm's 64 channels were halved onto
    its 8 groups (one channel a group, where InstanceNorm is GroupNorm) and an 11-wide pool with stride 11 over 12 and
    13 columns had one window (a kernel that ignored the stride passed). Every test shape now keeps two or more
    channels a group and two or more windows a row and a column, as the file's sizes have."""
    gn = load_task(KB / "shrink" / "groupnorm.py")
    assert gn.shapes.test, gn.shapes
    for shape in gn.shapes.test:  # its groups (8 in the file) may be halved with the channels: 2 or more a group
        groups = shape.get("num_groups", 8)
        assert shape["features"] >= 2 * groups and shape["features"] % groups == 0 and groups >= 2, shape
    pool = load_task(KB / "shrink" / "avgpool_stride.py")
    assert pool.shapes.test, pool.shapes
    for shape in pool.shapes.test:
        out = _meta_run(pool._problem, {**pool._problem.defaults, **shape})[1][0]
        assert out.shape[2] >= 2 and out.shape[3] >= 2, (shape, out.shape)
    # A depthwise convolution's channels in and out must stay equal, which kept every layout of its equal shrunk
    # sizes from running: it was tested at batch = channels = height = width = 8 alone, where a kernel that swapped
    # height with width and batch with channels passed. They are spread one by one now, channels in and out together.
    dw = load_task(KB / "shrink" / "depthwise.py")
    for shape in dw.shapes.test:
        assert shape["in_channels"] == shape["out_channels"], shape
        sizes = [shape[k] for k in ("batch_size", "in_channels", "height_in", "width_in")]
        assert len(set(sizes)) == 4, shape


def test_long_shapes_run_each_dimension_past_its_blocks_within_their_budget():
    """At the shrunk sizes one block covers every dimension: a red team (2026-12-06) passed a matmul with no loop
    over K, a softmax and a cumsum that never went past their first block, on the CPU. Each dimension the shrink made
    short gets a long shape (one seed), long along it and small along the others, within LONG_ELEMENTS; a dimension
    that leads every input it sizes (rows: the grid, one interpreted program each) stops at LEADING_LONG; sizes the
    model is built with equal stay equal, and one the shrink kept (a pool's kernel) stays."""
    for path in sorted(KB.glob("level*/*.py")) + sorted(KB.glob("shrink/*.py")):
        task = load_task(path)
        problem, main = task._problem, task.shapes.test[0]
        dims = [k for k, v in problem.defaults.items() if v > SHRINK_FLOOR and k in main]
        assert task.shapes.long, path.name
        for shape in task.shapes.long:
            io, weights, _ = _meta_counts(problem, {**problem.defaults, **shape})
            longer = [k for k in dims if shape[k] > main[k]]
            assert longer, (path.name, shape)
            assert io <= LONG_ELEMENTS, (path.name, shape)
            assert weights <= max(LONG_WEIGHTS * len(longer), LONG_WEIGHTS_GROWN), (path.name, shape)
            for k in longer:
                assert shape[k] <= (LEADING_LONG if _leads(problem, main, k) else 2561), (path.name, k, shape)
    softmax = load_task(KB / "level1" / "3_softmax.py")
    assert {"batch_size": 4, "dim": 2561} in softmax.shapes.long  # three blocks of 1024 and a part
    mm = load_task(KB / "level1" / "1_matmul.py")
    assert max(s["K"] for s in mm.shapes.long) >= 1281 and max(s["M"] for s in mm.shapes.long) == LEADING_LONG
    for shape in load_task(KB / "shrink" / "depthwise.py").shapes.long:
        assert shape["in_channels"] == shape["out_channels"], shape
    assert all(s["kernel_size"] == 11 for s in load_task(KB / "shrink" / "avgpool_stride.py").shapes.long)
    # in_features = out_features in the file: long together, their weight apart from the budget, past a 256 block
    square = load_task(KB / "shrink" / "linear_square.py").shapes.long
    assert {"batch_size": 32, "in_features": 321, "out_features": 321} in square, square
    # a bias shaped (out_features,) by the file pins out_features: in_features goes long alone, the weight with it
    pinned = load_task(KB / "shrink" / "linear_bias_shape.py").shapes.long
    assert any(s["in_features"] >= 321 and s["out_features"] == 8192 for s in pinned), pinned
    # three equal sizes, three weights growing as their square: the budget is per size gone long (207 with one)
    mlp3 = load_task(KB / "shrink" / "mlp3_equal.py").shapes.long
    assert any(s["input_size"] == s["hidden_size"] == s["output_size"] == 321 for s in mlp3), mlp3
    # a size only the constructor reads (the MLP's output) goes long too, the others changed so that its inputs
    # differ from every other shape's (the worker keeps one ModelNew a distinct input signature)
    mlp = load_task(KB / "level3" / "11_tiny_mlp.py")
    assert any(s["output_size"] > mlp.shapes.test[0]["output_size"] * 3 for s in mlp.shapes.long), mlp.shapes.long
    cases = make_cases(softmax, softmax.shapes.checked(), 3, with_reference=False)
    assert len(cases) == 3 * len(softmax.shapes.test) + len(softmax.shapes.long)


def test_a_softmax_that_never_loops_past_its_first_block_fails_at_a_long_shape(tmp_path):
    task = load_task(KB / "level1" / "3_softmax.py")
    v = check(task, KB / "solutions_long" / "3_softmax.py", tmp_path / "w", seeds=1)
    assert v.failed_rung == "correctness", v.summary
    msg = v.rung("correctness").message
    assert "(batch_size=4 dim=2561 float32" in msg and "NaN/Inf" in msg, msg
    # every test shape passed: the long one alone caught it
    assert "batch_size=16 dim=256" not in v.rung("correctness").details.split("\n\n")[0], v.rung("correctness").details


def test_a_linear_that_never_loops_over_k_fails_at_the_long_shape_of_its_equal_features(tmp_path):
    """in_features = out_features = 8192 go long together; counted with the weight, they stopped at 177, and a
    kernel with one K block of 256 passed every shape on the CPU."""
    task = load_task(KB / "shrink" / "linear_square.py")
    # one test shape and the long shape of the features alone (that the task holds it is
    # test_long_shapes_run_each_dimension_past_its_blocks_within_their_budget's), no bench-shape build: each build of
    # its unrolled fp32 dot is seconds of ptxas
    shapes = task.shapes.model_copy(update={"test": task.shapes.test[:1], "long": [
        s for s in task.shapes.long if s["in_features"] == s["out_features"] == 321]})
    assert len(shapes.long) == 1
    v = check(task.model_copy(update={"shapes": shapes}), KB / "solutions_long" / "linear_square.py", tmp_path / "w",
              seeds=1, bench_dumps=False)
    assert v.failed_rung == "correctness", v.summary
    assert "in_features=321 out_features=321" in v.rung("correctness").message, v.rung("correctness").message


def test_a_kernel_that_masks_columns_with_m_instead_of_n_fails_naming_the_columns(tmp_path):
    """The planted bug of issue 39: it passed at 64 64 64; at batch 48 and 80 columns, columns 48-79 are never
    written, and the message says where the first wrong element is and which columns are wrong. At a long shape
    (8 rows, 512 features) its writes past the output crash the interpreter: the run rung says which case it died
    in and what the cases it finished show."""
    task = load_task(KB / "level2" / "9_gemm_scale_tanh.py")
    v = check(task, KB / "solutions_bad" / "9_gemm_scale_tanh.py", tmp_path / "w", seeds=1)
    assert v.failed_rung in ("run", "correctness"), v.summary
    msg = v.rung(v.failed_rung).message
    if v.failed_rung == "run":
        assert "in case c0" in msg and "case(s) it finished: case c000" in msg, msg
    assert "(batch_size=48 in_features=64 out_features=80 float32" in msg, msg
    assert "1536 of 3840 elements are NaN/Inf where the reference is not" in msg, msg
    assert "first at [0, 48]: got nan" in msg and "1536 never written" in msg, msg
    assert "dim 0 (size 48): all; dim 1 (size 80): 48-79" in msg, msg
    assert "dim 1 (size 79): 47-78" in v.rung(v.failed_rung).details  # the one-off shape: from its M=47 on


def test_a_kernel_that_ignores_the_norms_initial_weight_and_bias_fails(tmp_path):
    """Upstream's norm problems keep nn's initial weight (ones) and bias (zeros), so a kernel that never applies them
    matched the reference exactly (as would one reading the weight by the wrong channel). The reference's constant
    parameters now get values of their own (the candidate's ModelNew receives the same, by name): the honest kernel
    passes, the one that skips them fails at correctness."""
    problem = tmp_path / "level1" / "5_plain_layernorm.py"
    problem.parent.mkdir()
    source = (KB / "level1" / "5_layernorm.py").read_text()
    plain = source.replace("""        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.5)
            self.ln.bias.normal_(0.0, 0.5)
""", "")
    assert plain != source
    problem.write_text(plain)
    task = load_task(problem)
    honest = check(task, KB / "solutions" / "5_layernorm.py", tmp_path / "honest", seeds=1)
    assert honest.verdict == "pass", honest.summary
    skipping = tmp_path / "5_skips_weights.py"
    skipping.write_text((KB / "solutions" / "5_layernorm.py").read_text().replace(
        "(x - mean) * rstd * w + b, mask=mask)", "(x - mean) * rstd, mask=mask)"))
    v = check(task, skipping, tmp_path / "skipping", seeds=1)
    assert v.failed_rung == "correctness", v.summary


def test_reference_runs_in_float64_on_the_shrunk_sizes():
    task = load_task(KB / "level1" / "5_layernorm.py")
    case = make_cases(task, task.shapes.test[:1], 1, with_reference=True, base_seed=3)[0]
    (x,) = case.inputs
    assert x.dtype == torch.float32 and x.shape == (task.shapes.test[0]["batch_size"], task.shapes.test[0]["features"])
    assert case.reference[0].dtype == torch.float64
    ln = torch.nn.functional.layer_norm
    model = task._problem.model(case.shape)
    expected = ln(x.double(), x.shape[-1:], model.ln.weight.double(), model.ln.bias.double())
    torch.testing.assert_close(case.reference[0], expected)
    assert not torch.allclose(model.ln.weight, torch.ones_like(model.ln.weight))  # random weights: copying matters


BATCHNORM_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(features)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(x))


batch_size = 6
features = 4
dim1 = 40
dim2 = 24


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2) * 3 + 5]


def get_init_inputs():
    return [features]
'''


def test_batchnorm_uses_the_batchs_statistics_and_dropout_is_the_identity_as_upstream_runs_them(tmp_path):
    """Upstream KernelBench never calls eval(): a BatchNorm normalizes with the batch's own mean and variance. The
    harness had put reference and ModelNew in eval mode, where 33_BatchNorm is an affine map of the running
    statistics (zeros and ones): a kernel written for upstream's semantics failed and one that skipped the
    statistics passed. Both sides now run in training mode, with Dropout alone off (its random mask cannot be
    compared element by element)."""
    path = tmp_path / "level1" / "13_batchnorm_dropout.py"
    path.parent.mkdir()
    path.write_text(BATCHNORM_PROBLEM)
    task = load_problem(path)
    case = make_cases(task, task.shapes.test[:1], 1, with_reference=True, base_seed=5)[0]
    (x,) = case.inputs
    bn = task._problem.model(case.shape).bn
    mean = x.double().mean(dim=(0, 2, 3), keepdim=True)
    var = x.double().var(dim=(0, 2, 3), unbiased=False, keepdim=True)
    expected = (x.double() - mean) / torch.sqrt(var + bn.eps) * bn.weight.double().view(1, -1, 1, 1) \
        + bn.bias.double().view(1, -1, 1, 1)
    torch.testing.assert_close(case.reference[0], expected)  # twice: the running statistics moved, the output not
    torch.testing.assert_close(task._problem.reference(*case.inputs).double(), expected, rtol=1e-6, atol=1e-6)

    task.write_module_init(Job(bench=[]), tmp_path, [case])
    solution = ROOT / "benchmarks" / "kernelbench_solutions" / "level1" / "33_BatchNorm.py"
    entry = ModuleEntry(import_file(solution).ModelNew, tmp_path / INIT_FILE, "cpu")
    (instance,) = entry.instances.values()
    assert instance.training and instance.bn.training
    nn = torch.nn
    plain = upstream_mode(nn.Sequential(nn.Dropout(0.5), nn.BatchNorm1d(3), nn.RReLU(), nn.MultiheadAttention(4, 2, 0.1),
                                        nn.LSTM(4, 4, num_layers=2, dropout=0.5)).eval())
    assert [m.training for m in list(plain.modules())[:4]] == [True, False, True, False]  # RReLU draws its slopes
    assert plain[3].dropout == 0.0 and plain[4].dropout == 0.0  # their own dropout, not a Dropout module
    # the caches of references and baselines computed in eval mode are not this mode's: the shim names it
    assert SEMANTICS in task._problem.path.with_name("task.py").read_text()


def test_a_forward_that_makes_tensors_of_the_default_dtype_runs_in_float64(tmp_path):
    """A forward that makes a tensor without a dtype (torch.ones, torch.randn) made a float32 one beside the float64
    reference and stopped it (level 3's 35_LSTM: `mat1 and mat2 must have the same dtype`); the reference's forward
    now runs with float64 as torch's default, which it leaves as it was."""
    path = tmp_path / "level2" / "16_ones.py"
    path.parent.mkdir()
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                    "        return x @ torch.full((x.shape[1], 4), 0.1)\n\n"
                    "n = 32\n\ndef get_inputs():\n    return [torch.randn(64, n)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    task = load_problem(path)
    case = make_cases(task, task.shapes.test[:1], 1, with_reference=True, base_seed=2)[0]
    (x,) = case.inputs
    torch.testing.assert_close(case.reference[0], x.double() @ torch.full((x.shape[1], 4), 0.1, dtype=torch.float64))
    assert torch.get_default_dtype() == torch.float32


def test_a_random_reference_is_one_line_before_any_work(tmp_path):
    """A forward that draws (F.dropout(training=self.training), torch.rand_like) has no reference a kernel can match:
    every candidate failed, each somewhere else. The adapter runs the reference twice and says so in one line."""
    path = tmp_path / "level2" / "15_own_dropout.py"
    path.parent.mkdir()
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
                    "class Model(nn.Module):\n    def forward(self, x):\n"
                    "        return F.dropout(x, 0.5, training=self.training)\n\n"
                    "n = 32\n\ndef get_inputs():\n    return [torch.randn(64, n)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    with pytest.raises(BadInput, match=r"15_own_dropout.py: the reference is random"):
        load_problem(path)


def test_a_random_init_argument_is_the_same_for_the_reference_and_modelnew(tmp_path):
    """get_init_inputs() ran under whatever torch's generator held: a problem that draws an init argument (a scale
    vector) gave the reference one value and ModelNew (init_entry draws again) another. It runs at a seed of its own
    now, as upstream seeds before it, and leaves the generator as it was."""
    path = tmp_path / "level2" / "14_random_scale.py"
    path.parent.mkdir()
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    "    def __init__(self, scale):\n        super().__init__()\n        self.scale = scale\n\n"
                    "    def forward(self, x):\n        return x * self.scale\n\n"
                    "n = 32\n\ndef get_inputs():\n    return [torch.randn(64, n)]\n\n"
                    "def get_init_inputs():\n    return [torch.randn(n)]\n")
    problem = load_problem(path)._problem
    state = torch.get_rng_state()
    first, second = problem.init_inputs({"n": 32}), problem.init_inputs({"n": 32})
    assert torch.equal(first[0], second[0]) and torch.equal(torch.get_rng_state(), state)


def test_a_model_whose_forward_closes_over_its_own_layers_runs_in_float64(tmp_path):
    """Level 3's 44_MiniGPTBlock keeps `self.mlpf = lambda x: m.c_proj(...)` over its own ModuleDict: the float64
    reference was a deep copy of the model, whose lambda still called the float32 original (`mat1 and mat2 must
    have the same dtype`), and the problem was refused. The reference is now built anew in its dtype."""
    path = tmp_path / "level3" / "44_closure.py"
    path.parent.mkdir()
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    "    def __init__(self, n):\n        super().__init__()\n        self.lin = nn.Linear(n, n)\n"
                    "        m = self.lin\n        self.f = lambda x: m(x)\n\n"
                    "    def forward(self, x):\n        return torch.relu(self.f(x))\n\n"
                    "batch = 16\nn = 24\n\ndef get_inputs():\n    return [torch.randn(batch, n)]\n\n"
                    "def get_init_inputs():\n    return [n]\n")
    task = load_problem(path)
    case = make_cases(task, task.shapes.test[:1], 1, with_reference=True, base_seed=1)[0]
    lin = task._problem.model(case.shape).lin
    expected = torch.relu(case.inputs[0].double() @ lin.weight.double().T + lin.bias.double())
    torch.testing.assert_close(case.reference[0], expected)


def test_module_entry_copies_the_references_weights_where_names_match(tmp_path):
    task = load_task(KB / "level2" / "8_gemm_bias_relu.py")
    cases = make_cases(task, task.shapes.test, 1, with_reference=True, base_seed=0)
    name = task.write_module_init(Job(bench=[]), tmp_path, cases)
    assert name == INIT_FILE

    class ModelNew(torch.nn.Module):  # the same parameter names, and one of its own the reference lacks
        def __init__(self, in_features: int, out_features: int) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(in_features, out_features)
            self.extra = torch.nn.Parameter(torch.full((3,), 7.0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.linear(x))

    entry = ModuleEntry(ModelNew, tmp_path / INIT_FILE, "cpu")
    assert len(entry.instances) == len(task.shapes.test)
    for case in cases:
        out = entry(*case.inputs)
        torch.testing.assert_close(out.double(), case.reference[0], rtol=1e-5, atol=1e-5)
    assert all(names == ["linear.bias", "linear.weight"] for names in entry.copied.values())
    with pytest.raises(LookupError, match="built for inputs"):
        entry(torch.zeros(2, 2))


def test_a_modelnew_that_keeps_the_references_weights_under_other_names_gets_them_from_the_seed(tmp_path):
    """Upstream seeds both constructors alike, so a ModelNew that draws its layers in the reference's order but keeps
    their tensors under names of its own holds the reference's weights there; the copy by name cannot reach them, and
    the worker built ModelNew from whatever torch's generator held: such a solution passed upstream and failed here."""
    task = load_task(KB / "level2" / "8_gemm_bias_relu.py")
    cases = make_cases(task, task.shapes.test[:1], 1, with_reference=True, base_seed=0)
    task.write_module_init(Job(bench=[]), tmp_path, cases)

    class ModelNew(torch.nn.Module):
        def __init__(self, in_features: int, out_features: int) -> None:
            super().__init__()
            linear = torch.nn.Linear(in_features, out_features)
            self.w, self.b = linear.weight, linear.bias  # not linear.weight / linear.bias: no name matches

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x @ self.w.T + self.b)

    torch.manual_seed(7)
    state = torch.get_rng_state()
    entry = ModuleEntry(ModelNew, tmp_path / INIT_FILE, "cpu")
    assert entry.copied[next(iter(entry.copied))] == []
    torch.testing.assert_close(entry(*cases[0].inputs).double(), cases[0].reference[0], rtol=1e-5, atol=1e-5)
    assert torch.equal(torch.get_rng_state(), state)  # the worker's generator as it was


def test_notes_say_no_roofline_and_cannot_shrink(tmp_path):
    """A pool is a window reduction and hardswish an elementwise op torch does not tag as one: problems with them
    (22 of upstream's levels 2 and 3) have a roofline now; an op the roofline cannot price (a sort) is named."""
    conv = load_problem(KB / "level3" / "12_conv_relu_block.py")  # conv, ReLU, max_pool2d
    assert conv.has_roofline and int(conv.roofline.flops) > 0 and not any("roofline" in n for n in conv.notes)
    sort = tmp_path / "sort_hardswish.py"
    sort.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.sort(nn.functional.hardswish(x), dim=1)[0]\n\n"
                    "rows = 256\n\ndef get_inputs():\n    return [torch.randn(rows, 512)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    unpriced = load_problem(sort)
    assert "no roofline: sort is not a matmul, convolution, elementwise op, reduction or pool" in unpriced.notes
    # its tensors still count when it asks for GPU memory beside other problems (gpu_memory.admitted)
    assert gpu_memory.bench_bytes(unpriced) == (4.0 * 2 * 256 * 512, {"rows": 256})
    fixed = tmp_path / "fixed_sizes.py"
    fixed.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                     "    def forward(self, x):\n        return x * 2\n\n"
                     "def get_inputs():\n    return [torch.randn(64, 512)]\n\n"
                     "def get_init_inputs():\n    return []\n")
    task = load_problem(fixed)
    assert task.notes == ["cannot be shrunk: no size global makes it smaller (65536 elements); tested at its own sizes"]
    assert task.shapes.test == [{}] and task.shapes.bench == [{}]


def test_a_model_whose_init_reads_a_value_it_computed_has_a_roofline_and_shrinks(tmp_path):
    """Level 3's Swin models take `x.item()` of a torch.linspace in __init__, which a meta tensor cannot give: they
    had no roofline and were tested at their own sizes. Built on the CPU with each parameter moved to meta as it is
    registered, they run on meta tensors like the rest (and torch.roll, their shifted windows, is data movement)."""
    path = tmp_path / "item_in_init.py"
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    "    def __init__(self, dim):\n        super().__init__()\n"
                    "        self.rates = [x.item() for x in torch.linspace(0, 0.5, 2)]\n"
                    "        self.proj = nn.Linear(dim, dim)\n"
                    "    def forward(self, x):\n        return torch.roll(self.proj(x), 1, dims=1) * self.rates[1]\n\n"
                    "rows = 4096\ndim = 256\n\ndef get_inputs():\n    return [torch.randn(rows, dim)]\n\n"
                    "def get_init_inputs():\n    return [dim]\n")
    task = load_problem(path)
    assert not any("roofline" in n or "meta" in n for n in task.notes), task.notes
    assert int(task.roofline.flops) == 2 * 4096 * 256 * 256
    assert task.shapes.bench == [{"rows": 4096, "dim": 256}]
    assert all(s["rows"] * s["dim"] < 4096 * 256 for s in task.shapes.test), task.shapes.test


def test_tiny_output_problem_is_flagged_by_the_degenerate_guard():
    task = load_task(KB / "level1" / "7_tiny_scale.py")
    assert any("tiny in magnitude" in w for w in degenerate_warnings(task))
    assert any(n.startswith("outputs are tiny next to the tolerance") for n in task.notes)
    assert not load_task(KB / "level1" / "2_relu.py").notes


def test_not_a_problem_file_is_one_line_bad_input(tmp_path):
    other = tmp_path / "helper.py"
    other.write_text("x = 1\n")
    with pytest.raises(BadInput, match="not a KernelBench problem file: it defines no Model"):
        load_task(other)
    broken = tmp_path / "broken.py"
    broken.write_text("import nothing_here\n")
    with pytest.raises(BadInput, match=r"broken.py:1: importing it raised ModuleNotFoundError"):
        load_task(broken)


def test_check_a_problem_with_weights_passes_through_the_cli(tmp_path):
    proc = warm.run([sys.executable, "-m", "harness.cli", "check", "--json",
                           str(KB / "level1" / "5_layernorm.py"), str(KB / "solutions" / "5_layernorm.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "KERNEL_HARNESS_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert '"verdict":"pass"' in proc.stdout.replace(" ", "")


def test_reference_of_a_slice_of_rows_uses_the_shape_it_was_cut_from():
    """The bench-shape reference is computed in slices along dimension 0 where float64 does not fit at once."""
    task = load_task(KB / "level3" / "11_tiny_mlp.py")
    problem = task._problem
    small = task.shapes.test[0]
    (x,) = problem.make_inputs(small, torch.float32, 5, "normal")
    whole = problem.reference(x.double())
    top = problem.reference(x[:7].double())  # a signature make_inputs never made
    torch.testing.assert_close(top, whole[:7])


def test_the_sandboxed_worker_can_make_a_problems_bench_inputs(tmp_path):
    """On the GPU the worker draws the bench inputs itself, importing the problem's shim from the harness cache as
    the sandbox's uid: the cached files must be readable to it (they were 0600, and every bench shape failed with
    PermissionError on the H200). Small sizes here: what is checked is the import, not the size."""
    import json

    from rungs.sandbox import bwrap
    from rungs.ladder.benchmark import bench_entries
    from rungs.sandbox.pool import job_readable, scrubbed_env

    if bwrap.probe():
        pytest.skip(bwrap.probe())
    task = load_task(KB / "level1" / "1_matmul.py")
    entry = {**bench_entries(task)[0], "shape": task.shapes.test[0]}
    code = ("import json, sys; from rungs.timing.inputs import make_bench_inputs; "
            "x, _ = make_bench_inputs(json.loads(sys.argv[1]), 'cpu'); print('made', len(x))")
    argv = bwrap.command([sys.executable, "-c", code, json.dumps(entry)],
                         bwrap.Policy(readable=[Path(p) for p in job_readable(Job(bench=[entry]))]))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd="/",
                          env=scrubbed_env(Path("/tmp"), interpret=False))
    assert proc.stdout.split() == ["made", "2"], proc.stderr[-800:]


HUGE = """import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"Softmax over rows as upstream's 23_Softmax has it today: 4096 x 393216 float32, 6.4 GB per tensor.\"\"\"

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
"""


class _Handed(Exception):
    """What the fake pool raises once it holds the job the compile rung hands to the GPU worker."""


class _KeepJob:
    """A pool that takes the job and runs nothing: the job is what the parent writes for the worker."""

    def run(self, job_dir, job, timeout_s, interpret, session=None):
        self.job_dir, self.job = job_dir, job
        raise _Handed

    def prestart(self, *args, **kw):
        pass

    def session(self, dsl):
        return None

    def pinned_env(self):
        return None


SLOW_SIZES = """import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


batch_size = 1024
dim = 64


def get_inputs():
    rows = batch_size
    time.sleep(0.01)  # another thread's shape, set or restored here, would show in the next read
    return [torch.rand(rows, dim)]


def get_init_inputs():
    return []
"""


def test_problems_drawn_from_threads_side_by_side_each_get_their_own_sizes(tmp_path):
    """`harness run --parallel P` prepares P candidates' cases in threads of one process, and a problem's sizes are
    its module's globals: one thread's shape was set or restored under another's get_inputs (a level-2 problem's
    honest kernel failed with `the output has shape [1024, 64], expected [1024, 8192]`). Each draw now holds the
    problem's sizes and torch's generator alone."""
    import threading

    from rungs.core.kernelbench_problem import Problem

    path = tmp_path / "slow_sizes.py"
    path.write_text(SLOW_SIZES)
    problem = Problem(path)
    shapes = [{"batch_size": 3, "dim": 5}, {"batch_size": 7, "dim": 11}, {"batch_size": 2, "dim": 13}]
    wrong: list[tuple[dict, tuple]] = []
    same_seed: dict[str, list[torch.Tensor]] = {}

    def draw(shape: dict) -> None:
        for _ in range(8):
            (x,) = problem.make_inputs(shape, torch.float32, 5, "normal")
            if tuple(x.shape) != (shape["batch_size"], shape["dim"]):
                wrong.append((shape, tuple(x.shape)))
            same_seed.setdefault(str(shape), []).append(x)

    threads = [threading.Thread(target=draw, args=(sh,)) for sh in shapes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, wrong[:3]
    for draws in same_seed.values():  # the seed's values every time: no other thread drew in between
        assert all(torch.equal(d, draws[0]) for d in draws), "a draw was interleaved with another thread's"
    assert problem.module.batch_size == 1024 and problem.module.dim == 64  # the file's own sizes after


SLOW_WEIGHTS = SLOW_SIZES.replace("""class Model(nn.Module):
    def forward(self, x):
        return x * 2
""", """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(dim, dim)
        time.sleep(0.01)  # another thread drawing from torch's generator here would change the second layer
        self.b = nn.Linear(dim, dim)

    def forward(self, x):
        return self.b(self.a(x))
""")


def test_weights_built_beside_another_threads_draws_are_the_seeds(tmp_path):
    """The reference's weights (sent to the worker for ModelNew, and rebuilt from the same seed by the bench-shape
    reference) come from torch's global generator: built while another climb's thread draws its inputs, they were
    another seed's, and an honest kernel would fail at the bench shape. Built under the same lock as the draws, they
    are the weights a lone build makes."""
    import threading

    from rungs.core.kernelbench_problem import Problem

    path = tmp_path / "slow_weights.py"
    path.write_text(SLOW_WEIGHTS)
    shape = {"batch_size": 3, "dim": 5}
    alone = Problem(path).model(shape).state_dict()
    for _ in range(3):
        problem = Problem(path)
        stop = threading.Event()

        def draw() -> None:
            while not stop.is_set():
                problem.make_inputs({"batch_size": 4, "dim": 6}, torch.float32, 1, "normal")

        drawer = threading.Thread(target=draw)
        drawer.start()
        try:
            built = problem.model(shape).state_dict()
        finally:
            stop.set()
            drawer.join()
        assert all(torch.equal(built[k], alone[k]) for k in alone), "the weights are not the seed's"


HINGE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 1 << 20
input_shape = (1 << 20,)  # targets broadcast along it only while batch_size equals it
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
"""

UNSHRINKABLE = HINGE.replace("predictions * targets", "predictions * targets.view(1 << 20, 1)").replace(
    "*input_shape", "1 << 20")  # its targets fit the view at the file's batch_size only


def test_sizes_the_model_needs_equal_shrink_together_a_tuple_element_among_them(tmp_path):
    """KernelBench's 100_HingeLoss (32768 x 32768 predictions, targets broadcast along the last dimension) runs only
    while batch_size equals input_shape[0], a tuple's element: neither could be halved alone, so it was tested at its
    own sizes, and on the GPU its 4 GB test cases filled the job folder (killed at compile, 2026-12-06). The tuple's
    large elements are sizes now (`input_shape[0]`), halved together with the equal size the model needs beside
    them; the file's tuple is set and given back as a tuple."""
    path = tmp_path / "100_hinge_like.py"
    path.write_text(HINGE)
    task = load_problem(path)
    test, odd = task.shapes.test  # the one-off shape keeps the two equal, as the model needs
    assert test == {"batch_size": 64, "input_shape[0]": 64} and odd == {"batch_size": 65, "input_shape[0]": 65}, \
        task.shapes.test
    assert task.shapes.bench == [{"batch_size": 1 << 20, "input_shape[0]": 1 << 20}]
    problem = task._problem
    predictions, targets = problem.make_inputs(test, torch.float32, 0, "normal")
    assert predictions.shape == (64, 64) and targets.shape == (64,)
    assert problem.module.input_shape == (1 << 20,) and problem.module.batch_size == 1 << 20 and problem.module.dim == 1


def test_a_problem_too_large_for_this_host_and_unshrinkable_is_one_line_before_any_allocation(tmp_path):
    """KernelBench's 100_HingeLoss cannot be shrunk (its targets broadcast against the predictions only at its own
    batch_size), so it is tested at its own sizes: its float64 reference on a 24 GB CPU machine got the harness killed
    for memory (exit 137, no verdict). Counted on meta tensors first, it is now a one-line BadInput naming the file
    and what it needs, with nothing of that size allocated."""
    import resource

    path = tmp_path / "100_hinge_like.py"
    path.write_text(UNSHRINKABLE)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    with pytest.raises(BadInput) as err:
        load_problem(path)
    message = str(err.value)
    assert message.startswith(f"{path}: cannot be tested on this machine: no size global makes it smaller") \
        and "GB of host memory" in message and "\n" not in message, message
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 1 << 20  # under 1 GiB more


def test_only_an_inputs_literal_tuple_gives_sizes(tmp_path):
    """Which tuple elements are sizes: one of a tuple written in numbers that get_inputs reads. Not cross entropy's
    `input_shape = (num_classes,)` (halved alone, its targets ran past the classes: `Target 2935 is out of bounds`,
    seen on upstream's 95 while this was written), nor a kernel size the model is built with (halving (5, 9)'s 9
    tests a different convolution)."""
    from rungs.core.kernelbench_problem import size_globals
    from rungs.core.imports import import_file

    path = tmp_path / "tuples.py"
    path.write_text("import torch\nnum_classes = 4096\nbatch_size = 64\ninput_shape = (num_classes,)\n"
                    "kernel_size = (5, 9)\nrow = (8192 * 2, 3)\n"
                    "def get_inputs():\n    return [torch.rand(batch_size, *input_shape), torch.rand(*row)]\n"
                    "def get_init_inputs():\n    return [kernel_size]\n")
    assert size_globals(import_file(path)) == {"num_classes": 4096, "batch_size": 64, "row[0]": 16384}


def test_shapes_that_run_only_on_meta_tensors_are_chosen_again_without_the_tuples(tmp_path):
    """A red team's cross entropy written `input_shape = (4096,)` beside `randint(0, num_classes, ...)`: meta tensors
    check shapes, not values, so the shrink halved input_shape[0] alone and the first real run drew targets past the
    classes (`Target 2935 is out of bounds`, a correct file refused). Each shape now runs once on real tensors; this
    one is chosen again without the tuple's element, as before tuples counted. And the export names the element as C
    can (`input_shape_0`)."""
    from harness.export.plan import int_sizes

    path = tmp_path / "ce_literal.py"
    path.write_text("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                    "    def forward(self, predictions, targets):\n"
                    "        return torch.nn.functional.cross_entropy(predictions, targets)\n"
                    "batch_size = 32768\nnum_classes = 1000\ninput_shape = (1000,)\n"
                    "def get_inputs():\n"
                    "    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]\n"
                    "def get_init_inputs():\n    return []\n")
    task = load_problem(path)
    assert all("input_shape[0]" not in shape for shape in task.shapes.test), task.shapes.test
    assert task.shapes.test[0]["batch_size"] < 100 and task.shapes.bench == [{"batch_size": 32768, "num_classes": 1000}]
    assert int_sizes({"batch_size": 8, "input_shape[0]": 64, "causal": True}) == {"batch_size": 8, "input_shape_0": 64}


def test_an_unshrinkable_problem_whose_test_cases_overfill_the_job_folder_is_one_line(tmp_path, monkeypatch):
    """On a host with memory enough for its float64 reference (the H100's, 128 GB), an unshrinkable problem's test
    cases at its own sizes went to the sandbox as files and the worker was killed as "writing without bound", the
    harness's own inputs blamed on the candidate. Now refused at load, in one line, before anything is allocated."""
    from harness import kernelbench

    monkeypatch.setattr(kernelbench, "_available_bytes", lambda: 1 << 60)  # the host check passes
    path = tmp_path / "100_hinge_like.py"
    path.write_text(UNSHRINKABLE)
    with pytest.raises(BadInput) as err:
        load_problem(path)
    message = str(err.value)
    assert message.startswith(f"{path}: cannot be tested: no size global makes it small enough") \
        and "of files in the sandbox's job folder, over half its" in message and "\n" not in message, message


def test_bench_tensors_of_gigabytes_travel_as_seeds_and_sampled_rows_not_files(tmp_path):
    """Issue 36: a problem whose bench tensors are 6.4 GB each goes through the same path as a small one, and nothing
    of bench size is written: the job the compile rung hands the GPU worker carries each bench shape as its input
    maker and seed (the worker draws the inputs itself, and every timed call's fresh values from job.fresh_seed), the
    job folder holds only the small test cases and ModelNew's arguments, and the first timed call's outputs, over
    job.first_full_bytes, come back as a sample of rows whose contract the parent takes from its own reference's
    shape. Checked on the path taken (the job, the files, the contracts), on a CPU, allocating nothing large."""
    from rungs.ladder import compile as compile_rung
    from rungs.ladder.bench_reference import _sample_contract, _whole_contract
    from rungs.ladder.climb import Climb
    from rungs.sandbox.pool import job_readable
    from rungs.worker.job import sample_rows
    from rungs.worker.timed_calls import TimedCalls

    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    path = tmp_path / "23_Softmax.py"
    path.write_text(HUGE)
    task = load_problem(path)
    (bench,) = task.shapes.bench
    assert bench == {"batch_size": 4096, "dim": 393216}
    tensor_bytes = 4096 * 393216 * 4
    assert tensor_bytes > 6e9
    assert sum(v for v in task.shapes.test[0].values()) < 1000  # the CPU cases are small

    pool = _KeepJob()
    climb = Climb(task=task, kernel=KB / "solutions" / "3_softmax.py", work_dir=tmp_path / "w", device="cuda",
                  pool=pool)
    with pytest.raises(_Handed):
        compile_rung.rung(climb)
    job = pool.job
    assert job.phases[-1] == "bench"
    (entry,) = job.bench
    assert entry["shape"] == bench and entry["dtype"] == "float32" and isinstance(entry["seed"], int)
    assert entry["inputs"].endswith("task.py:make_inputs")  # the shim's input maker, which the worker imports...
    assert str(Path(entry["inputs"].rpartition(":")[0]).parent) in job_readable(job)  # ...from a folder it may read
    assert isinstance(job.fresh_seed, int) and job.prefetch is False  # get_inputs draws from torch's global generator
    files = {f.name: f.stat().st_size for f in pool.job_dir.iterdir()}
    assert max(files.values()) < 1 << 20, files  # no file per bench tensor: cases and ModelNew's arguments only
    assert all(name.startswith("inputs-") for name in files), files
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 1 << 20  # under 1 GiB more: nothing of 6.4 GB

    # the first timed call's outputs: over first_full_bytes, the worker saves a sample of rows...
    assert tensor_bytes > job.first_full_bytes
    meta = [((4096, 393216), torch.float64)]
    whole = _whole_contract(meta, torch.float32)
    assert whole[0].nbytes == tensor_bytes
    sampled = _sample_contract(meta, torch.float32)  # ...which is all the parent will read back
    rows = sample_rows((4096, 393216))  # 16384 random elements of each (job.SAMPLE_WIDTH), their offsets beside
    assert [e.shape for e in sampled] == [(rows, 16384), (rows,), (rows, 16384), (64,)] and rows == 128
    assert sum(e.nbytes for e in sampled) < 25 << 20

    # ...as TimedCalls does it, shown on a small output with first_full_bytes set below its size
    small = Job(device="cpu", first_full_bytes=1024)
    calls = TimedCalls(small, "b00", tmp_path)
    out = torch.rand(1024, 512)  # 2 MiB, and more elements than one sample holds
    before = out.clone()  # after() poisons the call's outputs once sampled
    calls.after(out, [torch.rand(1024, 512)], 0)
    saved = torch.load(tmp_path / calls.report["first"], weights_only=True)
    n = sample_rows((1024, 512))
    assert [tuple(t.shape) for t in saved] == [(n, 512), (n,), (0,), (64,)] and n == 512
    assert torch.equal(saved[0], before.index_select(0, saved[1]))  # the rows named, as the call returned them


DRAW_PROBE = HUGE.replace("""def get_inputs():
    return [torch.rand(batch_size, dim)]""", """import threading

DRAWN = []


def get_inputs():
    DRAWN.append((torch.empty(0).device.type, threading.current_thread().name))
    return [torch.rand(batch_size, dim)]""")


def test_bench_tensors_are_drawn_on_the_device_by_each_process_never_on_the_host(tmp_path):
    """Issue 36: a problem's bench inputs (6.4 GB a tensor here) are drawn where they are used, by get_inputs() itself
    under that device (on a GPU, milliseconds), in the thread that asks, by the worker and the baseline process
    (make_bench_inputs) and by the bench reference (bench_inputs, which keeps no copy in its cache for them); never
    on the host first. Shown with the meta device, which holds no values: drawn on the host, this would take 6.4 GB
    and tens of seconds before moving anywhere. The task's own input makers (a CPU generator of their own) keep the
    host draw."""
    import resource

    from rungs.ladder.bench_reference import bench_inputs
    from rungs.ladder.benchmark import bench_entries
    from rungs.timing.inputs import draws_on_device, make_bench_inputs, prefetch_inputs, load_function

    path = tmp_path / "23_Softmax.py"
    path.write_text(DRAW_PROBE)
    task = load_problem(path)
    (entry,) = bench_entries(task)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    assert draws_on_device(entry)
    drawn = load_function(entry["inputs"]).__globals__["problem"].module.DRAWN
    drawn.clear()  # the adapter's own calls (sizes and shapes, on the meta device)
    prefetch_inputs([entry])  # no background draw for it
    (x,), _ = make_bench_inputs(entry, "meta")
    (alt,) = bench_inputs({**entry, "seed": entry["seed"] + 1}, tmp_path / "refs", "meta")
    assert x.device.type == alt.device.type == "meta" and tuple(x.shape) == (4096, 393216)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 1 << 20  # under 1 GiB more
    assert drawn == [("meta", "MainThread"), ("meta", "MainThread")]
    assert not (tmp_path / "refs").exists()  # nothing kept: drawing again is the fast way
    softmax = {**entry, "inputs": f"{ROOT / 'tasks' / 'softmax_ref.py'}:make_inputs", "shape": {"M": 4, "N": 8}}
    assert not draws_on_device(softmax) and make_bench_inputs(softmax, "cpu")[0][0].shape == (4, 8)


def test_a_precision_casts_inputs_and_weights_for_reference_and_solution_alike(tmp_path):
    """`--precision bf16` (upstream's precision option): the task's dtype is bfloat16, its tolerance adds upstream's
    allclose figure (1e-2), the inputs and the weights are cast to it, and the float64 reference computes with the
    very weights ModelNew is given (rounded to bf16), so the two differ only by the candidate's own rounding."""
    from harness.kernelbench import KERNELBENCH_TOLERANCE

    task = load_problem(KB / "level1" / "5_layernorm.py", precision="bf16")
    assert task.dtypes == ["bfloat16"]
    assert (task.tolerances["bfloat16"].atol, task.tolerances["bfloat16"].rtol) == (1e-2, 1e-2)
    assert KERNELBENCH_TOLERANCE == {"fp32": 1e-4, "bf16": 1e-2, "fp16": 1e-2}
    assert load_problem(KB / "level1" / "5_layernorm.py").tolerances["float32"].atol == 1e-4
    case = make_cases(task, task.shapes.test[:1], 1, with_reference=True, base_seed=3)[0]
    (x,) = case.inputs
    assert x.dtype == torch.bfloat16 and case.reference[0].dtype == torch.float64
    model = task._problem.model(case.shape)
    assert model.ln.weight.dtype == torch.bfloat16
    expected = torch.nn.functional.layer_norm(x.double(), x.shape[-1:], model.ln.weight.double(),
                                              model.ln.bias.double())
    torch.testing.assert_close(case.reference[0], expected)
    name = task.write_module_init(Job(bench=[]), tmp_path, [case])

    class ModelNew(torch.nn.Module):  # LayerNorm's own parameters, as a solution declares them
        def __init__(self, features: int) -> None:
            super().__init__()
            self.ln = torch.nn.LayerNorm(features)

    entry = ModuleEntry(ModelNew, tmp_path / name, "cpu")
    (instance,) = entry.instances.values()
    assert instance.ln.weight.dtype == torch.bfloat16 and torch.equal(instance.ln.weight, model.ln.weight)
    with pytest.raises(BadInput, match="precision fp8: unknown"):
        load_problem(KB / "level1" / "5_layernorm.py", precision="fp8")


def test_heads_keep_a_head_dimension_of_two_and_a_width_tied_to_in_features_moves_with_it(tmp_path):
    """A red team (2026-12-06) passed two wrong kernels at shrunk sizes. 16 heads over a 1024 embedding were halved
    with it to 16 and 16: a head dimension of one, where 1/sqrt(d) is 1 and attention without its scale passed. And
    nn.Linear(4096, 1024) over inputs `input_shape = (4096,)` wide stayed at 64, 64 and 64 (the width can move only
    with in_features), where a linear that took the row stride from in_features for out_features passed. Now a size
    the model needs a multiple of another's (heads, groups) holds it twice or more, the two halved together, and a
    size moves with the later sizes the file gives its value where it cannot move alone."""
    attention = tmp_path / "heads.py"
    attention.write_text(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self, embed_dim, num_heads):\n"
        "        super().__init__()\n        self.h = num_heads\n    def forward(self, q, k, v):\n"
        "        b, s, e = q.shape\n        d = e // self.h\n"
        "        q, k, v = (t.view(b, s, self.h, d).transpose(1, 2) for t in (q, k, v))\n"
        "        att = ((q @ k.transpose(-1, -2)) / d ** 0.5).softmax(-1)\n"
        "        return (att @ v).transpose(1, 2).reshape(b, s, e)\n\n"
        "batch_size = 16\nseq_len = 512\nembed_dim = 1024\nnum_heads = 16\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, seq_len, embed_dim) for _ in range(3)]\n\n"
        "def get_init_inputs():\n    return [embed_dim, num_heads]\n")
    for shape in load_problem(attention).shapes.test:
        assert shape["embed_dim"] % shape["num_heads"] == 0 and shape["embed_dim"] // shape["num_heads"] >= 2, shape
    linear = tmp_path / "linear.py"
    linear.write_text(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self, in_features, out_features):\n"
        "        super().__init__()\n        self.fc = nn.Linear(in_features, out_features)\n"
        "    def forward(self, x):\n        return self.fc(x)\n\n"
        "batch_size = 128\ninput_shape = (4096,)\nin_features = 4096\nout_features = 1024\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, *input_shape)]\n\n"
        "def get_init_inputs():\n    return [in_features, out_features]\n")
    for shape in load_problem(linear).shapes.test:
        assert shape["in_features"] == shape["input_shape[0]"] != shape["out_features"], shape
        assert len({shape["batch_size"], shape["in_features"], shape["out_features"]}) == 3, shape


LISTED = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """A list of two tensors in; their sum over the size global `dim` (read in forward) and a mask out."""
    def __init__(self):
        super().__init__()
    def forward(self, xs):
        return (xs[0] + xs[1]) / dim, xs[0] > xs[1]

batch_size = 256
dim = 4096

def get_inputs():
    return [[torch.randn(batch_size, dim), torch.randn(batch_size, dim)]]

def get_init_inputs():
    return []
'''

LISTED_SOLUTION = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_and_mask(a_ptr, b_ptr, out_ptr, mask_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(a_ptr + offs, mask=inside)
    b = tl.load(b_ptr + offs, mask=inside)
    tl.store(out_ptr + offs, (a + b) / cols, mask=inside)
    tl.store(mask_ptr + offs, a > b, mask=inside)


class ModelNew(nn.Module):
    def forward(self, xs):
        a, b = xs[0].contiguous(), xs[1].contiguous()
        out = torch.empty_like(a)
        mask = torch.empty(a.shape, dtype=torch.bool, device=a.device)
        sum_and_mask[(triton.cdiv(a.numel(), 1024),)](a, b, out, mask, a.numel(), a.shape[1], BLOCK=1024)
        return out, mask
'''


def test_a_list_input_a_mask_output_and_a_forward_that_reads_a_size_global(tmp_path):
    """Three a red team (2026-12-06) failed with right kernels: a list of tensors as an input (the harness took their
    repr inside the guarded call: "the entry read tensor values on the host"), a bool output (an internal error: no
    abs for Bool at load), and `/ dim` in forward with `dim` the file's 4096 while the test inputs were 128 wide."""
    problem, solution = tmp_path / "listed.py", tmp_path / "solution" / "listed.py"
    problem.write_text(LISTED)
    solution.parent.mkdir()
    solution.write_text(LISTED_SOLUTION)
    task = load_problem(problem)
    assert task.shapes.test[0]["dim"] < 4096
    v = check(task, solution, tmp_path / "w", seeds=1)
    assert v.verdict == "pass", v.summary
    wrong = tmp_path / "wrong" / "listed.py"  # dividing by the file's width: right only at the file's sizes
    wrong.parent.mkdir()
    wrong.write_text(LISTED_SOLUTION.replace("(a + b) / cols", "(a + b) / 4096"))
    v = check(task, wrong, tmp_path / "w2", seeds=1)
    assert v.failed_rung == "correctness", v.summary


def test_a_constructor_that_reads_size_globals_shrinks_and_a_number_output_is_one_line(tmp_path):
    """A red team (2026-12-06): a Model whose __init__ draws `torch.randn(in_features, out_features)` from the size
    globals themselves was counted at the file's sizes on meta tensors (its weight never shrank: 8.4M elements in
    the interpreter); and a forward returning `(y, 3)` loaded, then failed at its first case naming the harness's
    own copy of the file. The first now shrinks below the budget, the second is one line at load naming the file."""
    weights = tmp_path / "weights.py"
    weights.write_text(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.weight = nn.Parameter(torch.randn(in_features, out_features))\n"
        "    def forward(self, x):\n        return x @ self.weight\n\n"
        "batch_size = 128\nin_features = 2048\nout_features = 4096\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, in_features)]\n\n"
        "def get_init_inputs():\n    return []\n")
    task = load_problem(weights)
    assert not task.notes, task.notes
    test = task.shapes.test[0]
    assert test["in_features"] < 2048 and test["out_features"] < 4096, test
    assert _meta_run(task._problem, {**task._problem.defaults, **test})[0] <= ELEMENT_BUDGET
    number = tmp_path / "number.py"
    number.write_text(weights.read_text().replace("return x @ self.weight", "return x @ self.weight, 3"))
    with pytest.raises(BadInput) as err:
        load_problem(number)
    assert str(err.value) == (f"{number}: Model.forward returns int as output 1: outputs must be tensors (a number "
                              "as a 0-d tensor: torch.tensor(x))")


def test_a_size_only_the_inputs_read_still_holds_the_models_groups_twice(tmp_path):
    """A second red team (2026-12-06): a channel shuffle over 4 groups (`groups = 4` read by get_init_inputs, the
    channels only by get_inputs) was tested at 4 channels, one a group, where the shuffle is the identity and one
    written backwards passed; the same for F.group_norm and a local attention's window. The rule that a size keeps
    holding a size the model is built with twice or more now covers sizes the model is not built with too."""
    path = tmp_path / "shuffle.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self, groups):\n"
        "        super().__init__()\n        self.groups = groups\n    def forward(self, x):\n"
        "        b, c, h, w = x.shape\n"
        "        x = x.view(b, self.groups, c // self.groups, h, w).transpose(1, 2).contiguous()\n"
        "        return x.view(b, c, h, w)\n\n"
        "batch_size = 16\nchannels = 64\nheight = 224\nwidth = 224\ngroups = 4\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, channels, height, width)]\n\n"
        "def get_init_inputs():\n    return [groups]\n")
    task = load_problem(path)
    for shape in task.shapes.test:
        groups = shape.get("groups", 4)
        assert shape["channels"] % groups == 0 and shape["channels"] // groups >= 2, shape


def test_tensors_are_found_in_nested_outputs():
    """A model may return `(out, (h, c))`: the element counts behind the shape budgets, the roofline's bytes and the
    leading-size check (harness/kernelbench.py's `_tensors`) see every tensor in it, in order, and nothing else."""
    out, h, c = torch.zeros(2, 3), torch.zeros(4), torch.zeros(1, 1, 5)
    assert [t.shape for t in _tensors([out, (h, [c]), 7, None])] == [out.shape, h.shape, c.shape]
    assert _tensors(out) == [out] and _tensors("not a tensor") == []
