"""The real ladder on real kernels, CPU only: demo kernels and faults."""
from __future__ import annotations

from pathlib import Path

import pytest

from rungs.ladder.ladder import check

from conftest import KERNELS, TASKS

DEMOS = TASKS / "demos"


def climb(task, kernel: Path, tmp_path: Path, **kw):
    return check(task, kernel, tmp_path / "work", dump_dir=tmp_path / "dumps", **kw)


def test_nocompile_demo_fails_at_compile(softmax_task, tmp_path):
    v = climb(softmax_task, DEMOS / "softmax_1_nocompile.py", tmp_path, seeds=1)
    assert (v.verdict, v.failed_rung) == ("fail", "compile")
    assert "constexpr" in v.rung("compile").message
    assert [r.status for r in v.rungs[2:]] == ["skip"] * 7  # run, correctness, benchmark, dumps, profile, sections, roofline


def test_wrong_demo_fails_correctness_with_worst_element(lean_softmax_task, tmp_path):
    v = climb(lean_softmax_task, DEMOS / "softmax_2_wrong.py", tmp_path, seeds=1)
    assert (v.verdict, v.failed_rung) == ("fail", "correctness")
    msg = v.rung("correctness").message
    assert "worst element" in msg and "expected" in msg and "rel_l2" in msg


def test_honest_demo_passes_every_case_and_dumps_sass(softmax_task, tmp_path):
    v = climb(softmax_task, DEMOS / "softmax_4_tuned.py", tmp_path)
    assert v.verdict == "pass", v.summary
    assert v.rung("correctness").metrics["cases"] == len(softmax_task.shapes.test) * softmax_task.seeds
    assert v.rung("benchmark").message == "no CUDA device"
    dumps = tmp_path / "dumps"
    for suffix in ("ttir", "ttgir", "ll", "ptx", "cubin", "sass"):
        assert list(dumps.glob(f"softmax_kernel*.{suffix}")), suffix
    assert "sm_90a" in next(dumps.glob("*.ptx")).read_text()
    assert "FFMA" in v.rung("dumps").details or "MUFU" in v.rung("dumps").details


@pytest.mark.parametrize("kernel, expect", [
    ("fault_raise.py", "ValueError: this kernel raises on purpose"),
    ("fault_kill.py", "killed by SIGKILL"),
    ("fault_segv.py", "killed by SIGSEGV"),
    ("fault_exit.py", "exited with code 0 before finishing"),
    ("fault_block.py", "timed out"),  # asleep; the spinning hang (fault_hang.py) is tests/test_blame.py's
])
def test_faults_fail_with_a_clear_reason(softmax_task, tmp_path, kernel, expect):
    # 5 s: the limit counts from when the worker takes the job, past its imports (rungs/sandbox.run_worker); the
    # hang sleeps through all of it
    task = softmax_task.model_copy(update={"timeout_s": 5.0})
    # The static screen refuses os.kill and ctypes; these faults stand for what gets past it (an illegal access in a
    # kernel, the OOM killer), so the screen is off to reach the sandbox.
    v = climb(task, KERNELS / kernel, tmp_path, seeds=1, static_checks=False)
    assert v.verdict == "fail"
    failed = v.rung(v.failed_rung)
    assert expect in failed.message, failed.message
    assert "\n" not in failed.message


def test_missing_kernel_file_fails_precheck(softmax_task, tmp_path):
    v = climb(softmax_task, tmp_path / "nope.py", tmp_path)
    assert v.failed_rung == "precheck" and "not found" in v.rung("precheck").message


@pytest.mark.parametrize("source, expect", [
    ("def kernel(x):\n    return x +\n", "syntax error at line 2"),
    ("import triton\n@triton.jit\ndef k(x):\n    pass\n", "defines no top-level 'kernel'"),
    ("def kernel(x):\n    return x\n", "never imports triton"),
    ("import triton\ndef kernel(x):\n    return x\n", "no Triton kernel found"),
])
def test_precheck_refuses(softmax_task, tmp_path, source, expect):
    path = tmp_path / "k.py"
    path.write_text(source)
    v = climb(softmax_task, path, tmp_path)
    assert v.failed_rung == "precheck" and expect in v.rung("precheck").message


def test_torch_only_kernel_is_refused(softmax_task, tmp_path):
    path = tmp_path / "k.py"
    path.write_text("import torch, triton\n@triton.jit\ndef unused(x):\n    pass\n"
                    "def kernel(x):\n    return torch.softmax(x, -1)\n")
    v = climb(softmax_task, path, tmp_path, seeds=1)
    assert v.failed_rung == "compile" and "launched no Triton kernel" in v.rung("compile").message


def test_headline_is_the_exceptions_own_line():
    """As the H200 reported an illegal address: torch's advice lines come after the reason and must not hide it."""
    from rungs.core.result import headline

    cuda = ("  fault_illegal_access.py:19 in kernel: y = x[0].item()\n"
            "AcceleratorError: CUDA error: an illegal memory access was encountered\n"
            "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/ for more information.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
    assert headline(cuda) == "AcceleratorError: CUDA error: an illegal memory access was encountered"
    triton_error = "CompilationError: at 3:8:\n    x = tl.load(p)\n        ^\nNameError('p is not defined')"
    assert headline(triton_error) == "NameError('p is not defined')"
    assert headline("") == "failed"


def test_a_climb_holds_its_gpu_for_every_rung_not_only_the_last(lean_softmax_task, tmp_path):
    """Issue 35: the climb's start time was overwritten before each rung, so the GPU-seconds budget counted the last."""
    import time
    from dataclasses import dataclass

    from rungs.ladder.ladder import Ladder
    from rungs.core.result import RungResult
    from rungs.sandbox.pool import WorkerPool

    @dataclass(frozen=True)
    class Sleep:
        name: str
        seconds: float
        needs: frozenset = frozenset()
        runs_after_failure: bool = False

        def __call__(self, climb) -> RungResult:
            time.sleep(self.seconds)
            return RungResult(name=self.name, status="ok")

    rungs = [Sleep("a", 0.4), Sleep("b", 0.4), Sleep("c", 0.2)]
    ladder = Ladder(task=lean_softmax_task, kernel=DEMOS / "softmax_3_rowwise.py", work_dir=tmp_path / "work",
                    rungs=rungs, pool=WorkerPool("cpu", 0, "cpu"), device="cpu")
    verdict = ladder.climb()
    assert [r.seconds >= s.seconds for r, s in zip(verdict.rungs, rungs)] == [True] * 3
    assert verdict.gpu is not None and verdict.gpu.index == 0
    assert 1.0 <= verdict.gpu.seconds < 1.0 + 5, verdict.gpu  # all three rungs, not the last one's 0.2 s


def test_a_pass_says_what_it_could_not_rule_out_here():
    """docs/threat-model.md, 'What a verdict rests on': a pass without the outside checks carries a warning."""
    from rungs.core.result import RungResult
    from rungs.ladder.ladder import integrity_warnings

    ok = lambda name, **m: RungResult(name=name, status="ok", metrics=m)  # noqa: E731
    skip = lambda name, why: RungResult(name=name, status="skip", message=why)  # noqa: E731
    cpu = integrity_warnings([ok("correctness"), skip("benchmark", "no CUDA device")])
    assert len(cpu) == 1 and "checked inside the candidate's process only" in cpu[0]
    interpreted = integrity_warnings([ok("correctness"), skip("benchmark", "no CUDA device")], interpreted=True)
    assert len(interpreted) == 2 and "Triton's interpreter" in interpreted[1] and "order a sum adds" in interpreted[1]
    unwitnessed = integrity_warnings([ok("benchmark"), skip("profile", "ncu (Nsight Compute) is not installed")])
    assert "no outside witness (ncu (Nsight Compute) is not installed)" in unwitnessed[0]
    witnessed = integrity_warnings([ok("benchmark"), ok("profile", kernels_checked=True)])
    assert len(witnessed) == 1 and "share uid 65534" in witnessed[0]
    unnamed = integrity_warnings([ok("benchmark"), ok("profile", kernels_checked=False)])
    assert len(unnamed) == 2 and "not checked for library compute" in unnamed[1]


def test_the_harness_and_its_workers_freeze_their_imports_once(lean_softmax_task, tmp_path):
    """The collector's walks skip what imports made (rungs/core/heap.py): after a climb the harness process has
    a frozen generation, and a second freeze adds nothing (freezing again would keep each climb's leftovers)."""
    import gc

    from rungs.core import heap

    check(lean_softmax_task, TASKS / "demos" / "softmax_3_rowwise.py", tmp_path / "work", dump_dir=tmp_path / "d")
    frozen = gc.get_freeze_count()
    assert frozen > 100_000, frozen  # torch alone
    garbage = [[] for _ in range(1000)]
    heap.freeze_imports()
    assert gc.get_freeze_count() == frozen
    del garbage
    # the worker froze its own before the candidate ran (the screen refuses `gc` in a candidate: off for this probe)
    source = (TASKS / "demos" / "softmax_3_rowwise.py").read_text()
    probe = tmp_path / "probe.py"
    probe.write_text(source + "\n\nimport gc as _gc\n_plain = kernel\n\n\ndef kernel(*args):\n"
                     "    assert _gc.get_freeze_count() > 100_000, _gc.get_freeze_count()\n    return _plain(*args)\n")
    v = check(lean_softmax_task, probe, tmp_path / "work2", dump_dir=tmp_path / "d2", static_checks=False)
    assert v.verdict == "pass", v.summary
