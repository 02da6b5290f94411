"""`harness eval` (harness/eval.py, harness/eval_cli.py): problem discovery, the suite's scores, failing solutions
named by reason, and resuming a killed eval."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from rungs.core.errors import BadInput
from harness.eval import ProblemResult, fast_lines, find_problems, summarize

KB = ROOT / "tests" / "kernelbench_format"


def env(tmp_path: Path, own_tmp: bool = False) -> dict[str, str]:
    """`own_tmp`: the eval's temporary folder in tmp_path, for evals a test ends by a signal (a SIGKILL leaves what
    the eval's processes had in it, and a test's leftovers belong in its own folder, not /tmp)."""
    if own_tmp:
        (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "KERNEL_HARNESS_CACHE": str(tmp_path / "cache"),
            **({"TMPDIR": str(tmp_path / "tmp")} if own_tmp else {})}


def test_find_problems_from_folder_glob_and_list_file(tmp_path):
    found = find_problems([str(KB)])
    names = [p.stem for p in found]
    assert len(names) >= 10 and not any(p.parent.name.startswith("solutions") for p in found)
    assert names[:3] == ["1_matmul", "2_relu", "3_softmax"]  # natural order, level folder first
    assert [p.stem for p in find_problems([str(KB / "level2" / "*.py")])] == ["8_gemm_bias_relu", "9_gemm_scale_tanh",
                                                                          "10_residual_rmsnorm"]
    listing = tmp_path / "list.txt"
    listing.write_text(f"# two of them\n{KB / 'level1' / '2_relu.py'}\n{KB / 'level3' / '11_tiny_mlp.py'}\n")
    assert [p.stem for p in find_problems([str(listing)])] == ["2_relu", "11_tiny_mlp"]
    twin = tmp_path / "x" / "2_relu.py"
    twin.parent.mkdir()
    twin.write_text((KB / "level1" / "2_relu.py").read_text())
    with pytest.raises(BadInput, match="two problems are named 2_relu"):
        find_problems([str(KB / "level1"), str(twin)])
    with pytest.raises(BadInput, match="no such problem file, folder, glob or list file"):
        find_problems([str(tmp_path / "nothing*.py")])


def result(name: str, verdict: str, x_eager: float | None = None, x_compile: float | None = None) -> ProblemResult:
    timed = x_eager is not None
    return ProblemResult(problem=name, path=name, level="level1", verdict=verdict, runtime_us=10.0 if timed else None,
                         speedup_eager=x_eager, speedup_compile=x_compile)


def test_fast_p_counts_all_problems_and_says_not_measured_without_timings():
    cpu = summarize([result("a", "pass"), result("b", "fail")], total=4)
    assert cpu["fast_0"] == 0.25 and cpu["fast_1"] is None and cpu["fast_2"] is None
    assert cpu["fast_p"]["compile"] == {"fast_0": 0.25, "fast_1": None, "fast_1.5": None, "fast_2": None}
    assert fast_lines(cpu) == ["fast_0: 0.250 (correct at the shrunk CPU test shapes; the real sizes run only on a GPU)",
                               "fast_1: not measured (no GPU timing)",
                               "fast_1.5: not measured (no GPU timing)", "fast_2: not measured (no GPU timing)"]
    gpu = summarize([result("a", "pass", 3.0, 1.5), result("b", "pass", 0.5, 0.25), result("c", "fail", None)], total=4)
    assert (gpu["fast_0"], gpu["fast_1"], gpu["fast_1.5"], gpu["fast_2"]) == (0.5, 0.25, 0.25, 0.25)
    # against torch.compile: 1.5x is not more than 1.5 times faster
    assert gpu["fast_p"]["compile"] == {"fast_0": 0.5, "fast_1": 0.25, "fast_1.5": 0.0, "fast_2": 0.0}
    assert gpu["geomean_speedup_eager"] == pytest.approx(1.225, abs=1e-3)
    assert gpu["geomean_speedup_compile"] == pytest.approx(0.612, abs=1e-3)
    assert "fast_1.5: 0.250 over eager, 0.000 over torch.compile" in fast_lines(gpu)
    assert fast_lines(gpu)[0] == "fast_0: 0.500 (correct)"


def test_fast_p_per_level_counts_that_levels_problems():
    a, b = result("a", "pass", 3.0, 2.5), result("b", "pass", 0.5, 0.25)
    b.level = "level2"
    summary = summarize([a, b], total=5, levels={"level1": 2, "level2": 3})
    one, two = summary["levels"]["level1"], summary["levels"]["level2"]
    assert (one["problems"], one["finished"], one["correct"]) == (2, 1, 1)
    assert one["fast_p"]["compile"] == {"fast_0": 0.5, "fast_1": 0.5, "fast_1.5": 0.5, "fast_2": 0.5}
    assert two["fast_p"]["eager"] == {"fast_0": 0.3333, "fast_1": 0.0, "fast_1.5": 0.0, "fast_2": 0.0}


TORCH_FREE = """import atexit, runpy, sys
atexit.register(lambda: "torch" in sys.modules and print("the eval command imported torch", file=sys.stderr))
sys.argv[0] = "harness"
runpy.run_module("harness.cli", run_name="__main__")
"""
"""`python -m harness.cli` that says so when it imported torch: the eval command judges its problems in processes of
their own, which import it; importing it too cost each eval 2.4 s of this 2-core machine's start-up."""


PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


size = 64


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
"""
DOUBLE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double(o, x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        double[(triton.cdiv(x.numel(), 32),)](out, x, x.numel(), BLOCK=32)
        return out
"""


def test_bad_problems_and_solutions_fail_in_one_line_naming_the_file_and_the_eval_goes_on(tmp_path):
    """A problem file without Model, a get_inputs that raises, a solution without ModelNew and one whose import
    fails, problem code that calls sys.exit() or os._exit() or raises KeyboardInterrupt: each its own problem's
    one-line fail naming the file (and the line where known); the good problem after them is still checked, and the
    eval exits 0. In the same eval (each costs a pool process's start), wrong solutions of real problems fail each with
    its reason named, the reports say so, and the eval command itself never imports torch."""
    problems, solutions = tmp_path / "level1", tmp_path / "solutions"
    problems.mkdir()
    solutions.mkdir()
    files = {"1_no_model": PROBLEM.replace("class Model(", "class Other("),
             "2_inputs_raise": PROBLEM.replace("    return [torch.randn(size)]", "    raise ValueError('no inputs')"),
             "3_no_model_new": PROBLEM, "4_import_fails": PROBLEM,
             # the problem's code ending its process (red team, 2026-12-05: exit 1, exit 0 or "interrupted", no word)
             "5_inputs_exit": PROBLEM.replace("    return [torch.randn(size)]", "    import sys\n    sys.exit(3)"),
             "6_inputs_os_exit": PROBLEM.replace("    return [torch.randn(size)]", "    import os\n    os._exit(0)"),
             "7_forward_interrupts": PROBLEM.replace("        return x * 2", "        raise KeyboardInterrupt"),
             # code that never ends: a loop at import hung the eval for good (red team, 2026-12-05); a sleep too
             "8_import_loops": PROBLEM.replace("size = 64\n", "size = 64\nwhile size:\n    pass\n"),
             "9_inputs_sleep": PROBLEM.replace("    return [torch.randn(size)]", "    import time\n    time.sleep(3600)"),
             "10_good": PROBLEM}
    for name, text in files.items():
        (problems / f"{name}.py").write_text(text)
        (solutions / f"{name}.py").write_text(DOUBLE)
    (solutions / "3_no_model_new.py").write_text(DOUBLE.replace("class ModelNew(", "class Model("))
    (solutions / "4_import_fails.py").write_text(DOUBLE.replace("import triton\n", "import triton\nimport torch.not_here\n",
                                                                1))
    wrong = ("2_relu", "3_softmax", "7_tiny_scale")  # real problems, each solution wrong its own way
    for name in wrong:
        shutil.copy(KB / "level1" / f"{name}.py", problems / f"{name}.py")
        shutil.copy(KB / "solutions_bad" / f"{name}.py", solutions / f"{name}.py")
    paths = [str(problems / f"{name}.py") for name in [*files, *wrong]]  # named one by one: a folder skips 1_no_model
    proc = subprocess.run([sys.executable, "-c", TORCH_FREE, "eval", *paths, "--solutions", str(solutions),
                           "--evals-dir", str(tmp_path / "evals")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**env(tmp_path), "KERNEL_HARNESS_LOAD_S": "4"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the eval command imported torch" not in proc.stderr
    (folder,) = (tmp_path / "evals").iterdir()
    data = json.loads((folder / "summary.json").read_text())
    by = {r["problem"]: r for r in data["results"]}
    assert list(by) == [*files, *wrong]
    assert all("\n" not in r["reason"] for r in by.values())
    assert by["1_no_model"]["failed_rung"] == "task"
    assert by["1_no_model"]["reason"] == (f"{problems / '1_no_model.py'}: not a KernelBench problem file: "
                                          "it defines no Model")
    assert by["2_inputs_raise"]["failed_rung"] == "task"
    assert by["2_inputs_raise"]["reason"] == (f"{problems / '2_inputs_raise.py'}:14: get_inputs() raised "
                                              "ValueError: no inputs")
    assert by["3_no_model_new"]["failed_rung"] == "precheck"
    assert by["3_no_model_new"]["reason"].startswith(f"{solutions / '3_no_model_new.py'}: the file defines no "
                                                     "top-level 'ModelNew'")
    assert by["4_import_fails"]["failed_rung"] == "compile"
    assert by["4_import_fails"]["reason"] == (f"{solutions / '4_import_fails.py'}:4: ModuleNotFoundError: "
                                              "No module named 'torch.not_here'")
    assert by["5_inputs_exit"]["failed_rung"] == "task"
    assert "raised SystemExit (exit code 3)" in by["5_inputs_exit"]["reason"], by["5_inputs_exit"]
    assert by["6_inputs_os_exit"]["failed_rung"] == "task"
    assert by["6_inputs_os_exit"]["reason"].startswith(f"{problems / '6_inputs_os_exit.py'}: its process ended "
                                                       "without a result")
    assert by["7_forward_interrupts"]["failed_rung"] == "task"
    assert "raised KeyboardInterrupt" in by["7_forward_interrupts"]["reason"], by["7_forward_interrupts"]
    for name, line in (("8_import_loops", 11), ("9_inputs_sleep", 15)):
        assert by[name]["failed_rung"] == "task", by[name]
        assert by[name]["reason"].startswith(f"{problems / name}.py:{line}: loading it (importing it, sizing its test "
                                             "shapes and running its Model once) passed its 4 s limit"), by[name]
        assert by[name]["seconds"] < 60, by[name]  # once, not again after the process's untimed first load
    assert by["10_good"]["verdict"] == "pass"
    assert "fast_0: 0.077" in proc.stdout  # 1 of 13

    assert all(by[name]["verdict"] == "fail" for name in wrong)
    assert by["2_relu"]["failed_rung"] == "correctness" and "worst element" in by["2_relu"]["reason"]
    assert by["7_tiny_scale"]["failed_rung"] == "correctness" and "rel_l2" in by["7_tiny_scale"]["reason"]
    assert any("tiny in magnitude" in n for n in by["7_tiny_scale"]["notes"])  # and the guard flags the problem
    assert by["3_softmax"]["failed_rung"] in ("precheck", "run", "correctness")
    assert "torch" in by["3_softmax"]["reason"]
    assert data["summary"]["fast_1"] is None and "fast_1: not measured" in proc.stdout
    assert data["summary"]["fast_p"]["compile"]["fast_1.5"] is None
    html = (folder / "report.html").read_text()
    assert "<table>" in html and "2_relu" in html and "http" not in html.replace("http-equiv", "")  # self-contained
    report = (folder / "report.md").read_text()
    assert "| 7_tiny_scale | level1 | fail | correctness |" in report
    # the command's pace: every problem it judged, over its wall time (issue 36: problems an hour)
    pace = re.search(r"This command judged (\d+) problems in ([0-9.]+) s of wall time \(-j \d+\): (\d+) per hour", report)
    assert pace and int(pace[1]) == len(by) and abs(int(pace[3]) - 3600 * len(by) / float(pace[2])) <= 1, report[:600]
    assert "| fast_1.5 | not measured (no GPU timing) | not measured (no GPU timing) |" in report
    assert "<th>fast_2</th><td class=\"num\">not measured (no GPU timing)</td>" in html


def test_an_unknown_precision_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "eval", str(KB / "level1" / "2_relu.py"),
                           "--solutions", str(KB / "solutions"), "--precision", "fp8", "--evals-dir",
                           str(tmp_path / "evals")], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --precision fp8: unknown precision (known: fp32, bf16, fp16)"
    assert not (tmp_path / "evals").exists()


def test_an_eval_with_nothing_left_to_judge_still_writes_its_reports(tmp_path):
    """Run again on a finished eval folder, a command judges nothing: its reports are rebuilt, without a pace (the
    templates are strict: a missing key once raised there)."""
    from harness.eval import ProblemResult, write_reports

    meta = {"problems": ["p/1_x.py"], "solutions": "s", "model": "", "dsl": "triton", "precision": "fp32",
            "folder": str(tmp_path)}
    done = [ProblemResult(problem="1_x", path="p/1_x.py", level="p", verdict="pass", seconds=3.0)]
    write_reports(tmp_path, done, 1, meta)
    report = (tmp_path / "report.md").read_text()
    assert "| 1_x | p | pass |" in report and "This command judged" not in report
    write_reports(tmp_path, done, 1, {**meta, "pace": {"problems": 1, "wall_s": 3.0, "jobs": 1}})
    assert "This command judged 1 problem in 3.0 s of wall time (-j 1): 1200 per hour." in \
        (tmp_path / "report.md").read_text()
    assert "1200 per hour" in (tmp_path / "report.html").read_text()


def test_a_killed_eval_resumes_where_it_stopped_and_an_edited_solution_is_judged_again(tmp_path):
    """The same command resumes a killed eval: a finished problem is not judged again. A result stands only while
    what it was judged on does (the problem file, the solution file, the harness's code): an edited solution kept its
    old verdict before. One eval serves both (each judging costs a process and two workers)."""
    import shutil

    solutions = tmp_path / "solutions"
    solutions.mkdir()
    for name in ("2_relu.py", "6_add_mul.py"):
        shutil.copy(KB / "solutions" / name, solutions / name)
    args = [sys.executable, "-m", "harness.cli", "eval", str(KB / "level1" / "2_relu.py"),
            str(KB / "level1" / "6_add_mul.py"), "--solutions", str(solutions), "--evals-dir",
            str(tmp_path / "evals")]
    first = subprocess.Popen(args, cwd=ROOT, env=env(tmp_path, own_tmp=True), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    lines: list[str] = []
    while time.monotonic() < deadline and not lines:
        time.sleep(0.5)
        found = list((tmp_path / "evals").glob("*/results.jsonl"))
        lines = found[0].read_text().splitlines() if found else []
        assert first.poll() is None or lines, "the eval ended before finishing a problem"
    os.killpg(first.pid, signal.SIGKILL)  # its own session: the eval and its workers
    first.wait()
    assert len(lines) == 1 and json.loads(lines[0])["problem"] == "2_relu"
    again = subprocess.run(args, cwd=ROOT, env=env(tmp_path), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 of 2 problems done" in again.stderr
    results = [json.loads(x) for x in found[0].read_text().splitlines()]
    assert [r["problem"] for r in results] == ["2_relu", "6_add_mul"]  # the first was not checked again
    assert all(r["verdict"] == "pass" for r in results)
    assert "fast_0: 1.000" in again.stdout
    assert {"compile", "correctness", "other"} <= set(results[1]["rung_seconds"])  # where each problem's time went
    assert sum(results[1]["rung_seconds"].values()) == pytest.approx(results[1]["seconds"], abs=0.1)

    with open(solutions / "2_relu.py", "a") as f:
        f.write("\n# edited\n")
    proc = subprocess.run(args, cwd=ROOT, env=env(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    judged = [json.loads(x) for x in found[0].read_text().splitlines()]
    assert [r["problem"] for r in judged] == ["2_relu", "6_add_mul", "2_relu"], judged
    assert judged[0]["judged"] != judged[2]["judged"], judged
    assert judged[2]["verdict"] == "pass" and "2_relu: pass (" in proc.stderr  # judged by this command
    assert "6_add_mul:" not in proc.stderr  # unchanged, so not judged again


@pytest.mark.parametrize("jobs", ["2", "1"])
def test_ctrl_c_stops_a_parallel_eval_at_once(tmp_path, jobs):
    """Ctrl-C (SIGINT to the terminal's process group: the eval and its `-j` processes) ends `eval -j 2` in seconds
    with exit 130; it used to say "interrupted" and then go on with every problem not yet started. `-j 1` runs its
    problems in a process of its own too, and stops the same way. The second problem's solution sleeps ten minutes
    in its sandbox (solutions_slow/6_add_mul.py: the sandbox is a session of its own, so the Ctrl-C does not reach
    it), so it is still running when the first result comes: an eval that waited for its running problems (a plain
    pool shutdown) would not stop in time."""
    from rungs.core.errors import EXIT_INTERRUPTED

    # the level's problems, the quick one first: the first result, which the Ctrl-C waits for, comes sooner (the
    # folder's order starts with 1_matmul, three times 2_relu's time on the CPU); solutions_slow has no solution for
    # the rest, which fail at once
    quick = ("2_relu", "6_add_mul", "7_tiny_scale")
    level = [KB / "level1" / f"{n}.py" for n in quick] + [p for p in find_problems([str(KB / "level1")])
                                                           if p.stem not in quick]
    args = [sys.executable, "-m", "harness.cli", "eval", *map(str, level), "--solutions", str(KB / "solutions_slow"),
            "-j", jobs, "--evals-dir", str(tmp_path / "evals")]
    # SIGINT as a terminal's foreground command has it: a suite started in the background (`pytest ... &` from a
    # script) runs with SIGINT ignored, which every child inherits, and then no Ctrl-C could reach the eval
    proc = subprocess.Popen(args, cwd=ROOT, env=env(tmp_path, own_tmp=True), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600
    lines: list[str] = []
    while time.monotonic() < deadline and not lines and proc.poll() is None:
        time.sleep(0.2)
        found = list((tmp_path / "evals").glob("*/results.jsonl"))
        lines = found[0].read_text().splitlines() if found else []
    assert lines and proc.poll() is None, "the eval ended before it could be interrupted"
    time.sleep(1.0)  # the slow problem has started (-j 1 starts it right after the first result)
    os.killpg(proc.pid, signal.SIGINT)
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert time.monotonic() - t0 < 30 and proc.returncode == EXIT_INTERRUPTED, (proc.returncode, err[-2000:])
    assert "interrupted" in err and "Traceback" not in err
    assert len(found[0].read_text().splitlines()) < len(level)  # it stopped, and kept what was done
    # the processes it ended (SIGTERM: nothing of theirs ran at exit) left no worker's home or problem's folder
    assert not [p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith(("harness-eval-", "harness-worker-"))]


def test_model_mode_runs_the_loop_in_bf16_then_checks_its_best_kernel(tmp_path):
    """`eval --model`: the loop climbs the model's kernel, then its best is checked, the run folder kept with the eval.
    With --precision bf16: the problem's inputs and weights in bfloat16 (LayerNorm has both: an elementwise problem
    would show the inputs' cast alone), the solution passes within bf16's tolerance, and the precision is in the
    result, the eval folder's name and the report (one eval for both: each costs a pool process's start)."""
    transcript = tmp_path / "layernorm.jsonl"
    transcript.write_text(json.dumps({"text": "One program per row.",
                                      "code_file": str(KB / "solutions" / "5_layernorm.py")}) + "\n")
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "eval", str(KB / "level1" / "5_layernorm.py"),
                           "--model", f"replay:{transcript}", "--precision", "bf16", "--evals-dir",
                           str(tmp_path / "evals")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, env=env(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder,) = (tmp_path / "evals").iterdir()
    assert "-bf16-" in folder.name
    results = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert [(r["problem"], r["precision"], r["verdict"]) for r in results] == [("5_layernorm", "bf16", "pass")]
    assert list((folder / "runs").glob("*/events.jsonl"))  # the loop's own run folder is kept with the eval
    assert "DSL triton, precision bf16." in (folder / "report.md").read_text()
    assert "precision bf16" in (folder / "report.html").read_text()


def test_a_solution_carrying_get_inputs_is_not_a_problem_and_a_latin1_problem_loads(tmp_path):
    """A red team (2026-12-06): a folder holding a solution (`class ModelNew` with its own get_inputs, as written ones
    often are) counted it as a second problem of the same name (`class Model` matched `class ModelNew`), so the eval
    was refused; and a problem file in latin-1 (a coding line: Python imports it) was an internal UnicodeDecodeError."""
    from harness.eval import is_problem_source
    from harness.kernelbench import load_problem

    problem = (KB / "level1" / "2_relu.py").read_text()
    solution = (KB / "solutions" / "2_relu.py").read_text()
    assert is_problem_source(problem)
    assert not is_problem_source(solution + "\n" + problem[problem.index("def get_inputs"):])
    (tmp_path / "solutions").mkdir()
    (tmp_path / "2_relu.py").write_text(problem)
    (tmp_path / "solutions" / "2_relu.py").write_text(solution + "\n" + problem[problem.index("def get_inputs"):])
    assert find_problems([str(tmp_path)]) == [tmp_path / "2_relu.py"]
    latin = tmp_path / "latin" / "2_relu.py"
    latin.parent.mkdir()
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + problem.encode())
    task = load_problem(latin)
    assert task.where("shapes") == f"{latin}: key 'shapes'"
