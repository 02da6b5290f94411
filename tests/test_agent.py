"""The loop with the replay model, driving the real ladder (CPU)."""
from __future__ import annotations

import json
from pathlib import Path

from harness.agent import Agent, extract_code
from harness.events import IterationFinished, PromptSent, RunStopped
from harness.models import load_model
from harness.store import RunStore

from conftest import TASKS


def make_agent(task, tmp_path: Path, transcript: Path, **budget) -> Agent:
    budgets = task.budgets.model_copy(update=budget)
    store = RunStore.create(tmp_path / "runs", task, f"replay:{transcript}", budgets.model_dump())
    return Agent(task=task, model=load_model(f"replay:{transcript}"), store=store, budgets=budgets,
                 dumps_root=tmp_path / "dumps")


def test_iteration_budget_stops_the_run_and_feedback_reaches_the_prompt(lean_softmax_task, tmp_path):
    agent = make_agent(lean_softmax_task, tmp_path, TASKS / "softmax.demo.jsonl", iterations=2)
    stop = agent.run()
    assert stop.status == "budget" and "2 iterations" in stop.reason
    events = agent.store.journal.read()
    prompts = [e for e in events if isinstance(e, PromptSent)]
    assert len(prompts) == 2
    # the second prompt carries the first iteration's compile error, word for word
    assert "arange's arguments must be of type tl.constexpr" in prompts[1].messages[1].content
    assert [e.verdict.failed_rung for e in events if isinstance(e, IterationFinished)] == ["compile", "correctness"]
    assert isinstance(events[-1], RunStopped)
    assert json.loads((agent.store.root / "run.json").read_text())["status"] == "budget"
    assert not (agent.store.root / "best").exists()  # nothing passed


def test_reply_without_code_is_a_failed_iteration(softmax_task, tmp_path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"text": "I think we should use more warps."}) + "\n")
    agent = make_agent(softmax_task, tmp_path, transcript)
    stop = agent.run()
    assert stop.status == "transcript_end"
    (it,) = agent.store.iterations()
    assert it.verdict.failed_rung == "precheck" and "held no kernel" in it.verdict.rung("precheck").message


def test_tool_submission_and_tool_calls(lean_softmax_task, tmp_path):
    code = (TASKS / "demos" / "softmax_3_rowwise.py").read_text()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps({"text": "", "tool_calls": [{"name": "list_iterations"}, {"name": "nosuch"}]}) + "\n"
        + json.dumps({"text": "", "tool_calls": [{"name": "submit_kernel", "arguments": {"code": code,
                                                                                           "notes": "rowwise"}}]}) + "\n")
    agent = make_agent(lean_softmax_task, tmp_path, transcript)
    agent.run()
    (it,) = agent.store.iterations()
    assert it.verdict.verdict == "pass" and it.notes == "rowwise"
    assert (agent.store.root / "best" / "kernel.py").read_text() == code
    tool_results = [e.result for e in agent.store.journal.read() if getattr(e, "type", "") == "tool_call"]
    assert tool_results[0] == "no iterations yet" and "unknown tool 'nosuch'" in tool_results[1]


def test_extract_code_takes_the_last_fenced_block():
    text = "plan\n```python\nold\n```\nbetter:\n```python\nnew = 1\n```\n"
    assert extract_code(text) == "new = 1\n"
    assert extract_code("no code here") is None


def _rewired(source: str) -> list[int]:
    """Lines that assign an attribute of something named `agent` (`agent.x = `, `self.agent.x += `, setattr)."""
    import ast

    hits = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr" and node.args:
            targets = [ast.Attribute(value=node.args[0], attr="?")]
        hits += [node.lineno for t in targets for sub in ast.walk(t)
                 if isinstance(sub, ast.Attribute) and ast.unparse(sub.value).split(".")[-1] == "agent"]
    return sorted(set(hits))


def test_nobody_rewires_the_agent_and_its_parts_never_hold_it():
    """An Agent is built with its parts (toolbox, executor, config) and nobody assigns its fields afterwards: no
    module of harness/ but agent.py writes `agent.<field> = ...` (nor `self.agent.<field>`, nor setattr on it). The
    toolbox and the executors are handed a small context (ToolContext, ClimbContext), never the agent: they do not
    import harness.agent, and no parameter of theirs is an Agent."""
    import ast
    import inspect

    from harness import executors, tools

    root = Path(__file__).resolve().parent.parent / "harness"
    found = [f"{p.relative_to(root.parent)}:{line}" for p in sorted(root.rglob("*.py")) if p != root / "agent.py"
             for line in _rewired(p.read_text())]
    assert found == []
    for module in (tools, executors):
        imported = {n.module for n in ast.walk(ast.parse(Path(module.__file__).read_text()))
                    if isinstance(n, ast.ImportFrom)}
        assert "harness.agent" not in imported, module.__name__
    for fn in (tools.Toolbox.__init__, tools.Toolbox.specs, tools.Toolbox.call, executors.Local.climb,
               executors.Ray.climb, executors.order_for, executors.land):
        params = inspect.signature(fn).parameters.values()
        assert not [p for p in params if p.name == "agent" or "Agent" in str(p.annotation)], fn.__qualname__


def test_the_finder_of_rewiring_is_not_vacuous():
    source = "agent.store = x\nself.agent.round += 1\nsetattr(agent, 'tools', t)\nnot_it.store = y\nagent.run()\n"
    assert _rewired(source) == [1, 2, 3]
