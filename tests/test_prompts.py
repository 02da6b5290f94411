"""What the model is told: one test per prompt section, on runs of the three demos recorded on a CPU
(tests/data/runs/<task>/: the journal and the kernels of `harness run tasks/<task>.yaml` with the replay model,
made with the prompt code before issue 19, so their recorded prompts are the 'before').

Rebuild a recorded run: `python -m harness.cli run tasks/T.yaml --model replay:tasks/T.demo.jsonl --runs-dir R`,
then copy run.json, events.jsonl and iter-*/kernel.py. Sizes before and after: benchmarks/prompt_sizes.py.
"""
from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest

from harness import feedback
from harness.agent import iteration_prompt
from harness.events import IterationFinished, PromptSent
from harness.models.base import Message
from harness.models.human import HumanModel
from harness.prompts import render_iteration, render_system, render_task
from rungs.core.spec import load_task
from harness.store import RunStore
from harness.tools import SUBMIT, TOOLS, Toolbox, on_gpu
from rungs.core.result import RungResult, Verdict

ROOT = Path(__file__).resolve().parent.parent
RUNS = Path(__file__).resolve().parent / "data" / "runs"
CPU = feedback.Environment(dsl="triton", dsl_version="3.9.0", torch_version="2.13.0+cpu", gpu=None)
H200 = feedback.Environment(dsl="triton", dsl_version="3.9.0", torch_version="2.13.0", gpu="NVIDIA H200")
TOOL_SPECS = [SUBMIT] + [spec for spec, _ in TOOLS.values()]


@pytest.fixture(autouse=True)
def datasheet_ceilings(tmp_path, monkeypatch):
    """Floors from the datasheet, whatever this machine has measured and cached."""
    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    feedback._ceilings.cache_clear()
    yield
    feedback._ceilings.cache_clear()


def task(name: str):
    return load_task(ROOT / "tasks" / f"{name}.yaml")


def recorded(name: str) -> RunStore:
    return RunStore.open(RUNS / name)


def prompt_after(name: str, k: int, env=CPU) -> str:
    """The prompt iteration k + 1 of a recorded run gets now (history: its first k iterations)."""
    store = recorded(name)
    t = task(name)
    history = [h for h in store.iterations() if h.iteration <= k]
    real = feedback.environment
    try:
        feedback.environment = lambda dsl="triton": env  # the machine the prompt describes
        return iteration_prompt(t, store, history, k + 1, t.budgets)
    finally:
        feedback.environment = real


def section(text: str, title: str) -> str:
    """The text of the `## title...` section, up to the next heading of the same or a higher level."""
    m = re.search(rf"^## {re.escape(title)}.*?(?=^#{{1,2}} |\Z)", text, re.DOTALL | re.MULTILINE)
    assert m, f"no section {title!r}"
    return m.group(0)


# ---- the system prompt -----------------------------------------------------------------------------------
def test_system_prompt_states_versions_machine_and_tools():
    t = task("flash_attn")
    cpu = render_system(t, TOOL_SPECS, CPU)
    assert "Triton 3.9.0, torch 2.13.0+cpu" in cpu
    assert "This run has no GPU" in cpu and "no timing is available" in cpu and "What is judged instead" in cpu
    for spec in TOOL_SPECS:
        assert f"- {spec.name}: " in cpu
    assert "before you use an API you are not sure of" in cpu
    gpu = render_system(t, TOOL_SPECS, H200)
    assert "This run has a GPU (NVIDIA H200)" in gpu and "no timing" not in gpu
    # read from this machine at run time, not written into the template
    import torch
    import triton

    env = feedback.environment("triton")
    assert (env.dsl_version, env.torch_version) == (triton.__version__, torch.__version__)
    live = render_system(t, TOOL_SPECS)
    assert f"Triton {triton.__version__}, torch {torch.__version__}" in live
    if "removed" in (getattr(__import__("triton.language").language, "make_block_ptr").__doc__ or "").lower():
        assert "make_tensor_descriptor" in live and "block pointers" in live


# ---- the task's contract ------------------------------------------------------------------------------------
def test_task_section_carries_the_contract():
    t = task("flash_attn")
    text = render_task(t, CPU)
    assert "keep = torch.ones(s_q, s_k, dtype=torch.bool" in text  # the reference's own source: the causal alignment
    assert 'elif dist == "heavy_tailed"' in text  # the input maker's: what each distribution is
    assert "input 0: bfloat16 tensor, contiguous" in text and "input 3: Python bool" in text
    assert "Seeds: fresh every iteration" in text
    assert "bfloat16: max_abs_scaled <= 0.08, rel_l2 <= 0.01, psnr_db >= 40.0, cosine >= 0.9999" in text
    assert "S=37" in text and "S=300" in text  # every test shape, none cut
    # floors per bench shape from the roofline formulas; with no GPU and nothing measured here, on the H200's
    # measured 785 TFLOP/s (the figures the targets are set against), not the datasheet's 989
    full = 4 * 4 * 32 * 4096 * 4096 * 128 / 785e12 * 1e6
    assert f"| B=4 H=32 S=4096 D=128 causal=False | {4 * 4 * 32 * 4096 * 4096 * 128 / 1e9:.1f} |" in text
    assert f"{full:.1f} | compute | {full / 0.7:.1f} |" in text and f"{full / 2:.1f} | compute |" in text
    assert "H200 cuBLAS 4096^3, measured 2026-11-30" in text and "/ 785 TFLOP/s (bfloat16)" in text
    assert "Target: 70% of the roofline" in text and "not judged in this run" in text
    on_gpu = render_task(t, H200)  # a GPU run quotes what rungs/ladder/roofline.py uses: here (no cache) the datasheet
    assert "timed on NVIDIA H200" in on_gpu and "/ 989 TFLOP/s" in on_gpu and "datasheet" in on_gpu


def test_task_targets_say_where_they_come_from():
    for name, target in (("softmax", 0.9), ("gemm", 1.0), ("flash_attn", 0.7)):
        assert task(name).roofline.target == target
        yaml = (ROOT / "tasks" / f"{name}.yaml").read_text()
        comment = yaml[:yaml.index("  target:")].rsplit("roofline:", 1)[1]
        assert "README" in comment, name


def test_what_the_tasks_comments_point_to_is_there():
    """Issue 37: tasks/softmax.yaml (and eleven other tasks) pointed to a DESIGN.md that is not in the repository."""
    readme = (ROOT / "README.md").read_text()
    for path in sorted((ROOT / "tasks").glob("*.yaml")):
        comments = "\n".join(line.split("#", 1)[1] for line in path.read_text().splitlines() if "#" in line)
        for name in re.findall(r"[\w./-]+\.md\b", comments):
            assert (ROOT / name).is_file() or (path.parent / name).is_file(), (path.name, name)
        for section in re.findall(r"README '([^']+)'", comments):
            assert f"**{section}.**" in readme or f"## {section}" in readme, (path.name, section)


# ---- history ----------------------------------------------------------------------------------------------
def test_history_has_a_reason_and_the_models_notes_per_iteration():
    text = section(prompt_after("softmax", 4), "Iterations so far")
    rows = [ln for ln in text.splitlines() if re.match(r"\| \d", ln)]
    assert len(rows) == 4
    assert rows[0].startswith("| 1 | model | compile: arange's arguments must be of type tl.constexpr")
    assert "Plan: one program per row" in rows[0]  # the model's own words from iteration 1
    assert "| 2 | model | correctness: M=4 N=7 float32 seed=" in rows[1]
    assert "pass, untimed (no GPU)" in rows[2] and "```" not in text and "import triton" not in text


def test_best_whole_and_the_last_as_a_diff_against_it(tmp_path):
    run = tmp_path / "softmax"
    shutil.copytree(RUNS / "softmax", run)
    store = RunStore.open(run)
    best = store.kernel_of(3)
    worse = best.replace("num_warps=", "num_warps=2 * ", 1) if "num_warps=" in best else best + "# one line more\n"
    (run / "iter-005").mkdir()
    (run / "iter-005" / "kernel.py").write_text(worse)
    failing = Verdict(verdict="fail", failed_rung="compile", rungs=[RungResult(name="compile", status="fail",
                                                                              message="something broke")])
    # iteration 4 leaves the run; 3 is then the best, 5 the last
    events = [e for e in store.journal.read() if not (isinstance(e, IterationFinished) and e.iteration == 4)]
    store.journal.path.write_text("".join(e.model_dump_json() + "\n" for e in events))
    store.journal.append(IterationFinished(iteration=5, kernel_sha="x", verdict=failing, notes="tried more warps"))
    t = task("softmax")
    text = iteration_prompt(t, store, store.iterations(), 6, t.budgets)
    assert best in section(text, "Best kernel so far: iteration 3")
    last = section(text, "Last kernel: iteration 5, as a diff against the best (iteration 3)")
    assert "```diff" in last and "--- iter-3/kernel.py" in last and len(last) < len(best)
    assert text.count(best.splitlines()[0]) == 1  # the best's text once, not twice


# ---- a failure ------------------------------------------------------------------------------------------------
def test_correctness_failure_grouped_by_what_the_failing_cases_share():
    soft = section(prompt_after("softmax", 2), "Result of iteration 2")
    assert "fails: every case with N is not a power of 2 and inputs heavy_tailed/normal/uniform" in soft
    assert "M!=1 and inputs" in soft  # the other reading the test shapes allow
    flash = section(prompt_after("flash_attn", 2), "Result of iteration 2")
    assert re.search(r"fails: every case with S \S.* and causal=True; passes: every other case", flash)
    gemm = section(prompt_after("gemm", 2), "Result of iteration 2")
    assert "cases fail" in gemm
    for text in (soft, flash, gemm):  # whole labels: shape, dtype, seed and distribution of each failure
        lines = [ln for ln in text.splitlines() if ln.startswith("- case c")]
        assert lines and all(re.search(r"seed=\d+ (normal|uniform|large|heavy_tailed|edge)\)", ln) for ln in lines)


def test_failures_with_no_clean_split_are_counted_by_value():
    def row(i: int, n: int, dist: str, ok: bool) -> feedback.CaseRow:
        return feedback.CaseRow(f"c{i:03d}", {"M": 4, "N": n}, "float32", i, dist, 0.0 if ok else 0.2, 0.9, ok)

    rows = [row(0, 7, "normal", False), row(1, 7, "large", True), row(2, 7, "edge", False),
            row(3, 64, "normal", True), row(4, 64, "large", False), row(5, 64, "edge", True)]
    lines = feedback.grouping(rows)
    assert lines[0] == "3 of 6 cases fail" and not any(ln.startswith("fails:") for ln in lines)
    assert "by inputs: normal 1/2 fail, large 1/2 fail, edge 1/2 fail" not in lines  # alike: says nothing
    assert "by N: N=7 2/3 fail, N=64 1/3 fail" in lines
    assert feedback.grouping([row(0, 7, "normal", False)]) == [
        "fails: every case (1 of 1: every shape, seed and input distribution)"]


def test_a_failure_prompt_says_each_paragraph_once_and_no_noise():
    for name in ("softmax", "gemm", "flash_attn"):
        store = recorded(name)
        for it in store.iterations():
            if it.verdict.verdict != "fail":
                continue
            text = prompt_after(name, it.iteration)
            assert feedback.paragraphs_repeated(text) == [], (name, it.iteration)
            assert "max_abs   max_rel" not in text  # no per-case metric table
            assert "### dumps details" not in text  # no dumps of test shapes after a failure
            assert "Make it faster" not in text
            prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # code may repeat (a compiler quotes its line)
            lines = [ln for ln in prose.splitlines() if len(ln) > 60]
            assert len(lines) == len(set(lines)), (name, it.iteration)


def test_the_recorded_prompts_repeated_what_the_new_ones_say_once():
    """The 'before' of the check above: the prompts recorded after each demo's correctness failure said the
    first failure twice (the rung's line, then its details) and held the per-case metric table."""
    for name in ("softmax", "flash_attn"):
        old = next(e for e in recorded(name).journal.read() if isinstance(e, PromptSent) and e.iteration == 3)
        user = old.messages[1].content
        assert feedback.paragraphs_repeated(user) and "max_abs   max_rel" in user
        assert feedback.paragraphs_repeated(prompt_after(name, 2)) == []


def test_rel_l2_over_with_no_element_past_the_guard_is_explained():
    rung = RungResult(name="correctness", status="fail", message="case c000 (...): rel_l2 0.0121 > 0.01; 0 bad elements",
                      details="1 of 1 cases fail; the first failure of each shape:\n"
                              "case c000 (M=4 N=7 bfloat16 seed=1 normal): rel_l2 0.0121 > 0.01; 0 bad elements\n")
    shared, lines = feedback.failure_lines(rung)
    assert "0 bad elements" not in lines[0] and "spread over many elements" in lines[0]


def test_only_the_last_slice_wrong_points_at_the_edge():
    details = ("1 of 3 cases fail; the first failure of each shape:\ncase c001 (B=2 H=3 S=37 D=32 causal=False bfloat16 "
               "seed=5 normal): rel_l2 0.3 > 0.01; 40 of 7104 elements off (0.56%); dim 0 (size 2): 1; dim 1 (size 3): 2; "
               "dim 2 (size 37): all; dim 3 (size 32): all\n")
    _, lines = feedback.failure_lines(RungResult(name="correctness", status="fail", message="x", details=details))
    assert "only the last index of dim 0, 1 is wrong" in lines[0]


def test_scale_bugs_and_clauses_shared_by_every_failure():
    rows = [feedback.CaseRow("c000", {"S": 37}, "bfloat16", 1, "normal", 0.5, 0.99999, False),
            feedback.CaseRow("c001", {"S": 100}, "bfloat16", 2, "normal", 0.5, 0.99999, False)]
    note = feedback.scale_note(rows, 0.01)
    assert note and "scale bug" in note and "1.5" in note and "0.5" in note
    pattern = feedback.CaseRow("c002", {"S": 37}, "bfloat16", 3, "normal", 0.5, 0.3, False)
    assert feedback.scale_note([pattern], 0.01) is None  # the wrong direction: not a scale bug
    poison = "NaN is the poison put in unwritten output memory: some elements were never written"
    details = "2 of 9 cases fail; the first failure of each shape:\n" + "\n".join(
        f"case c00{i} (S={s} seed={i} normal): 3 of 10 elements are NaN/Inf; first at [0, {i}]; {poison}"
        for i, s in ((0, 37), (1, 100))) + "\n"
    shared, lines = feedback.failure_lines(RungResult(name="correctness", status="fail", message="x", details=details))
    assert shared == [poison] and all(poison not in ln for ln in lines)


# ---- a pass ---------------------------------------------------------------------------------------------------
def test_a_cpu_pass_says_no_timing_and_what_to_improve_instead():
    text = prompt_after("softmax", 4)
    result = section(text, "Result of iteration 4")
    assert "correctness: ok" in result and "max_abs   max_rel" not in result  # one line, no 24-row table
    todo = section(text, "What to do now")
    assert "no timing is available" in todo and "Make it faster" not in todo and "bench shapes" in todo


def test_a_gpu_pass_shows_each_bench_shape_against_its_floor():
    t = task("flash_attn")
    shapes = t.shapes.bench
    floors = [1403.5, 701.8]
    runtimes = [2187.0, 1213.0]  # the README's figures for flash_attn_4_fa2
    roof = RungResult(name="roofline", status="ok", message="63.3% of the roofline; target 70% not reached", metrics={
        "roofline_fraction": 0.633, "target_reached": False, "per_shape": [
            {"shape": s, "dtype": "bfloat16", "floor_us": f, "bound": "compute", "runtime_us": r,
             "roofline_fraction": f / r} for s, f, r in zip(shapes, floors, runtimes)]})
    bench = RungResult(name="benchmark", status="ok", message="3400.0 us median", metrics={
        "runtime_us": 3400.0, "per_shape": [{"shape": s, "eager_us": e, "compile_us": None}
                                            for s, e in zip(shapes, (11083.0, 20373.0))]})
    corr = RungResult(name="correctness", status="ok", message="48 cases match", details="case table\n" * 24)
    verdict = Verdict(verdict="pass", rungs=[corr, bench, roof])
    it = IterationFinished(iteration=4, kernel_sha="x", verdict=verdict, notes="FA2 loop split")
    text = render_iteration(task=t, history=[it], last=it, last_code="def kernel(): ...\n", best=it,
                            best_code="def kernel(): ...\n", base_code="def kernel(): ...\n", hints=[], iteration=5,
                            budget=t.budgets, env=H200)
    assert "| B=4 H=32 S=4096 D=128 causal=False bfloat16 | 2187.0 | 1403.5 | compute | 64.2% | 11083.0 | - |" in text
    assert "case table" not in text
    assert "It passes at 63.3% of the roofline; the target is 70%. Make it faster" in text
    assert "| 4 | model | pass, 3400.0 us, 63.3% of the roofline | FA2 loop split |" in text


# ---- the human provider ---------------------------------------------------------------------------------------
def test_human_sees_what_a_model_gets_calls_tools_and_hears_verdicts(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text("def kernel(x):\n    return x\n")
    shown = io.StringIO()
    human = HumanModel(stdin=io.StringIO(f'!tool nope {{}}\n!tool diff {{"a": 1\n!tool diff {{"a": 1, "b": 2}}\n'
                                         f"!note trying the file\n{kernel}\n"), stdout=shown)
    messages = [Message(role="system", content="SYSTEM PROMPT"), Message(role="user", content="USER PROMPT")]
    first = human.respond(messages, TOOL_SPECS)
    assert first.tool_calls and first.tool_calls[0].name == "diff" and first.tool_calls[0].arguments == {"a": 1, "b": 2}
    out = shown.getvalue()
    assert out.index("SYSTEM PROMPT") < out.index("----- tools (call one with") < out.index("USER PROMPT")
    assert all(f"- {s.name}: {s.description}" in out for s in TOOL_SPECS) and '"required": ["a", "b"]' in out
    assert "unknown tool 'nope'" in out and "not JSON" in out
    messages += [Message(role="assistant", tool_calls=first.tool_calls),
                 Message(role="tool", content="TOOL ANSWER", tool_call_id=first.tool_calls[0].id)]
    second = human.respond(messages, TOOL_SPECS)
    out = shown.getvalue()
    assert out.count("USER PROMPT") == 1 and "TOOL ANSWER" in out and out.count("----- tools (call one with") == 1
    assert second.text.startswith("trying the file") and "def kernel(x):" in second.text
    human.verdict(1, Verdict(verdict="fail", failed_rung="compile",
                             rungs=[RungResult(name="compile", status="fail", message="boom")]))
    assert "verdict of iteration 1: fail at compile: boom" in shown.getvalue()


def test_human_run_through_the_loop_prints_every_verdict(tmp_path):
    """`--model human` on the softmax task: a broken kernel, a tool call, then stop; both verdicts printed."""
    from harness.agent import Agent

    t = task("softmax").model_copy(update={"context": []})
    shown = io.StringIO()
    bad = tmp_path / "bad.py"
    bad.write_text("def kernel(x):\n    return x +\n")
    human = HumanModel(stdin=io.StringIO(f"{bad}\n!tool list_iterations {{}}\n\n"), stdout=shown)
    store = RunStore.create(tmp_path / "runs", t, "human", t.budgets.model_dump())
    Agent(task=t, model=human, store=store, budgets=t.budgets, dumps_root=tmp_path / "dumps").run()
    out = shown.getvalue()
    assert out.count("You are a GPU kernel engineer") == 1 and "(the same as before)" in out
    assert "verdict of iteration 1: fail at precheck" in out
    assert "1: fail at precheck" in out  # list_iterations' answer, printed to the person


def test_toolbox_specs_are_what_the_system_prompt_lists():
    names = [s.name for s in Toolbox().specs(gpu=False)]
    text = render_system(task("softmax"), Toolbox().specs(gpu=False), CPU)
    assert all(f"- {n}: " in text for n in names)


def test_prompt_sizes_script_on_the_recorded_runs():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "prompt_sizes.py"), str(RUNS / "softmax")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = [ln.split() for ln in p.stdout.splitlines() if re.match(r"\s+\d", ln)]
    assert len(rows) == 5 and all(len(r) == 5 for r in rows)
    json.dumps(rows)


def test_a_computed_nan_in_attention_is_not_called_unwritten(tmp_path):
    """Tried as a model would: a replayed flash_attn run whose first kernel computes its NaN (key blocks visited last
    to first, the causal loop not cut at the diagonal: exp(-inf - -inf)). The next prompt says the NaN was computed
    and where (causal rows 0-63), not that memory was left unwritten."""
    from harness.agent import Agent
    from harness.models import load_model

    src = (ROOT / "tasks" / "flash_attn.yaml").read_text()
    shapes = src[src.index("shapes:"):src.index("roofline:")]
    lean = src.replace(shapes, "shapes:\n  test:\n    - {B: 1, H: 1, S: 100, D: 16, causal: true}\n"
                                "    - {B: 1, H: 1, S: 100, D: 16, causal: false}\n"
                                "  bench:\n    - {B: 1, H: 1, S: 128, D: 16, causal: false}\n")
    lean = lean.replace("distributions: [normal, uniform, large, heavy_tailed]", "distributions: [normal]")
    lean = lean.replace("transcript: flash_attn.demo.jsonl", "seeds: 1")
    (tmp_path / "flash_attn.yaml").write_text(lean)
    shutil.copy(ROOT / "tasks" / "flash_attn_ref.py", tmp_path / "flash_attn_ref.py")
    transcript = tmp_path / "nan.jsonl"
    # one kernel: the prompt after it is written to the journal before the used-up transcript is asked for a reply
    kernels = [ROOT / "tests" / "kernels" / "flash_attn_reverse_nan.py"]
    transcript.write_text("".join(json.dumps({"text": f"turn {i}", "code_file": str(k)}) + "\n"
                                  for i, k in enumerate(kernels)))
    t = load_task(tmp_path / "flash_attn.yaml")
    budgets = t.budgets.model_copy(update={"iterations": 2})
    store = RunStore.create(tmp_path / "runs", t, f"replay:{transcript}", budgets.model_dump())
    agent = Agent(task=t, model=load_model(f"replay:{transcript}"), store=store, budgets=budgets,
                  dumps_root=tmp_path / "dumps")
    agent.run()
    prompts = [e for e in store.journal.read() if isinstance(e, PromptSent)]
    result = section(prompts[1].messages[-1].content, "Result of iteration 1")
    assert "computed NaN" in result and "never written" not in result, result
    assert "causal=True" in result and "0-63" in result, result


# ---- issue 39: repetition and missing guidance ------------------------------------------------------------------
def test_the_contract_is_in_the_system_prompt_and_not_repeated_per_iteration():
    """The ~3k characters of the task's contract went out in every iteration prompt; now they end the system prompt,
    the same text every iteration (a person sees it once, an API caches it), and each iteration prompt says only
    what changed."""
    t = task("softmax")
    system = render_system(t, TOOL_SPECS, CPU)
    contract = render_task(t, CPU)
    assert system.endswith(contract) and system.count("## Tolerances") == 1
    assert "defining `kernel` (the entry point of the task below)." in system
    assert system.count(t.signature) == 1  # said once, in the contract
    for k in (1, 4):
        user = prompt_after("softmax", k)
        assert user.startswith(f"# Iteration {k + 1} of at most 8\nThe task (what to compute, the reference, inputs, "
                               "tolerances, shapes) is in the system prompt; below is what changed.\n")
        assert "## Reference" not in user and "## Tolerances" not in user and "## Shapes" not in user


def test_the_last_kernel_is_a_diff_against_the_best_even_when_rewritten_and_said_once_when_the_same(tmp_path):
    t = task("softmax")
    best_code = "import triton\n" + "".join(f"# best line {i}\n" for i in range(40))
    rewrite = "import triton\n" + "".join(f"# new line {i}\n" for i in range(40))
    ok = Verdict(verdict="pass", rungs=[RungResult(name="correctness", status="ok", message="all match")])
    bad = Verdict(verdict="fail", failed_rung="compile", rungs=[RungResult(name="compile", status="fail",
                                                                          message="boom")])
    best = IterationFinished(iteration=2, kernel_sha="a", verdict=ok)
    last = IterationFinished(iteration=3, kernel_sha="b", verdict=bad)
    values = dict(task=t, history=[best, last], last=last, best=best, best_code=best_code, base_code=None, hints=[],
                  iteration=4, budget=t.budgets, env=CPU)
    text = render_iteration(last_code=rewrite, **values)
    assert "## Last kernel: iteration 3, as a diff against the best (iteration 2)" in text
    assert "-# best line 39" in text and "+# new line 39" in text and text.count("```python") == 1
    same = render_iteration(last_code=best_code, **values)
    assert "## Last kernel: iteration 3, the same code as the best (iteration 2)" in same
    assert same.count("# best line 39") == 1 and same.count("```python") == 1


def test_the_prompt_says_how_the_best_is_chosen_and_when_an_iteration_is_the_last():
    t = task("softmax")
    untimed = Verdict(verdict="pass", rungs=[RungResult(name="correctness", status="ok", message="all match")])
    timed = Verdict(verdict="pass", rungs=[RungResult(name="benchmark", status="ok", message="12 us",
                                                      metrics={"runtime_us": 12.0})])
    bad = Verdict(verdict="fail", failed_rung="compile", rungs=[RungResult(name="compile", status="fail",
                                                                          message="boom")])
    for verdict, env, rule in ((untimed, CPU, "Without timings passes are not ranked: the best is the latest kernel "
                                              "that passed every correctness case (a later pass replaces it)."),
                               (timed, H200, "The best is the pass with the lowest runtime.")):
        best = IterationFinished(iteration=1, kernel_sha="a", verdict=verdict)
        last = IterationFinished(iteration=2, kernel_sha="b", verdict=bad)
        text = render_iteration(task=t, history=[best, last], last=last, last_code="def kernel(): pass\n", best=best,
                                best_code="def kernel(): return 1\n", base_code=None, hints=[], iteration=8,
                                budget=t.budgets, env=env)
        assert f"## Best kernel so far: iteration 1 ({feedback.reason(verdict)})\n{rule}\n" in text
        last_line = text.splitlines()[0]
        assert last_line.startswith("# Iteration 8 of at most 8: the last. The run stops after it and keeps its best "
                                    "kernel")
        assert last_line.endswith("(without timings, the latest that passes: a pass now replaces the best)") == \
            (env is CPU)
    assert "the last" not in prompt_after("softmax", 4).splitlines()[0]  # iteration 5 of at most 8


def test_configs_say_who_receives_the_keys():
    """A function entry is called with CONFIGS[k] as keyword arguments; a class entry (KernelBench's ModelNew) is
    built with the reference's constructor arguments and called through forward, and CONFIGS is not read for it
    (rungs/worker/candidate.py discovers a config space for a function entry only)."""
    function = render_system(task("softmax"), TOOL_SPECS, CPU)
    assert "the harness calls\n  `kernel(*inputs, **CONFIGS[k])`, so `kernel` takes each key as a keyword argument" \
        in function
    from harness.spec import load_task as load_any

    kb = load_any(ROOT / "tests" / "kernelbench_format" / "level2" / "9_gemm_scale_tanh.py")
    cls = render_system(kb, TOOL_SPECS, CPU)
    assert "- Autotuning: `ModelNew` is a class. The harness builds it with the reference's constructor arguments" in cls
    assert "A module-level `CONFIGS` is not read for a class entry, and a\n  `@triton.autotune` runs its first " \
           "config only: choose block sizes, warps and stages in `forward`" in cls
    assert "**CONFIGS[k]" not in cls


def test_gpu_only_tools_are_offered_on_a_gpu_run_only(monkeypatch):
    t = task("softmax")
    for env, offered in ((CPU, False), (H200, True)):
        monkeypatch.setattr(feedback, "environment", lambda dsl="triton", env=env: env)
        names = [s.name for s in Toolbox().specs(on_gpu(t.dsl))]
        assert ("get_profile" in names, "get_sections" in names) == (offered, offered)
        assert "get_dump" in names and "search_context" in names
        system = render_system(t, Toolbox().specs(on_gpu(t.dsl)), env)
        assert ("- get_profile: " in system) == offered
    monkeypatch.setattr(feedback, "environment", lambda dsl="triton": CPU)
    assert "get_profile" in [s.name for s in Toolbox().specs(on_gpu(t.dsl, remote=True))]  # a Ray cluster's GPUs


def test_prompt_sizes_on_a_kernelbench_run(tmp_path, monkeypatch):
    """benchmarks/prompt_sizes.py read a KernelBench problem's .py as a task YAML and crashed. A replayed run of two
    kernels on 9_gemm_scale_tanh: the solution, then the column mask written with M instead of N."""
    import subprocess
    import sys

    from harness.agent import Agent
    from harness.models import load_model
    from harness.spec import load_task as load_any

    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    kb = ROOT / "tests" / "kernelbench_format"
    transcript = tmp_path / "kb.jsonl"
    transcript.write_text("".join(json.dumps({"text": f"turn {i}", "code_file": str(k)}) + "\n" for i, k in enumerate(
        [kb / "solutions" / "9_gemm_scale_tanh.py", kb / "solutions_bad" / "9_gemm_scale_tanh.py"])))
    t = load_any(kb / "level2" / "9_gemm_scale_tanh.py").model_copy(update={"seeds": 1})
    budgets = t.budgets.model_copy(update={"iterations": 3})
    store = RunStore.create(tmp_path / "runs", t, f"replay:{transcript}", budgets.model_dump())
    Agent(task=t, model=load_model(f"replay:{transcript}"), store=store, budgets=budgets,
          dumps_root=tmp_path / "dumps").run()
    prompts = [e for e in store.journal.read() if isinstance(e, PromptSent)]
    assert len(prompts) == 3 and len({p.messages[0].content for p in prompts}) == 1  # one system prompt
    third = prompts[2].messages[1].content
    assert "dim 1 (size 80): 48-79" in section(third, "Result of iteration 2")
    assert "## Reference" not in third and "## Best kernel so far: iteration 1" in third
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "prompt_sizes.py"), str(store.root)],
                       capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "KERNEL_HARNESS_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [ln.split() for ln in p.stdout.splitlines() if re.match(r"\s+\d", ln)]
    assert [r[0] for r in rows] == ["1", "2", "3"] and all(len(r) == 5 for r in rows)
    assert "System prompt new or changed in 1 of 3 (old), 1 of 3 (new)" in p.stdout


def test_the_prompt_names_every_module_the_screen_allows():
    """The screen imports from an allowlist (rungs/ladder/static_checks.ALLOWED_ROOTS): a model told less writes
    imports the precheck refuses; told more, imports it will be refused for."""
    from rungs.ladder.static_checks import ALLOWED_ROOTS

    text = (ROOT / "harness" / "prompts" / "system.j2").read_text()
    para = text[text.index("- Import only"):text.index("The precheck names what it refuses.")]
    named = set(re.findall(r"\b([a-z_]+)\b", para))
    dsl_packages = {"cuda", "cutlass", "rungs", "tilelang", "tvm", "__future__", "typing_extensions"}
    assert ALLOWED_ROOTS - dsl_packages <= named, sorted(ALLOWED_ROOTS - dsl_packages - named)


def test_a_kernelbench_prompt_says_its_inputs_are_get_inputs_own_draws(tmp_path, monkeypatch):
    """A KernelBench problem's inputs are what its get_inputs draws (torch.rand here: uniform in [0, 1)), only the
    seed varies; its prompt said "distributions normal" (the task's default list, which its input maker ignores)."""
    from harness.spec import load_task as load_any

    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    text = render_task(load_any(ROOT / "tests" / "kernelbench_format" / "level2" / "9_gemm_scale_tanh.py"))
    inputs = section(text, "Inputs")
    assert "values as get_inputs below draws them (its own distribution)" in inputs, inputs
    assert "distributions normal" not in text and "each get_inputs() drawn from a seed of its own" in text
    # a task of our own still lists the distributions its input maker draws, one per case
    own = render_task(load_task(ROOT / "tasks" / "softmax.yaml"))
    assert "distributions normal, uniform, heavy_tailed, large, edge" in own and "its own distribution" not in own
