"""The shipped tasks: each spec loads, its input maker is deterministic and well-formed, its reference runs on
float64 inputs, and its demo transcript names demo files that exist, in the order no-compile, wrong, correct, faster.

The demos' ladder verdicts (compile fails / correctness fails / pass / pass) are checked by
`harness check` and need the bf16 interpreter fix wired into the worker for the bf16 tasks.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rungs.core.spec import load_callable, load_task
from rungs.ladder.cases import TORCH_DTYPES, upcast

TASKS = Path(__file__).resolve().parent.parent / "tasks"
NAMES = ["softmax", "gemm", "flash_attn", "softmax_cute", "gemm_cute", "flash_attn_cute"]


@pytest.mark.parametrize("name", NAMES)
def test_inputs_and_reference(name: str) -> None:
    task = load_task(TASKS / f"{name}.yaml")
    make_inputs = load_callable(task, task.inputs, "inputs")
    reference = load_callable(task, task.reference, "reference")
    for dtype in task.dtypes:
        for shape in task.shapes.test:
            for dist in task.distributions:
                inputs = make_inputs(dict(shape), TORCH_DTYPES[dtype], 7, dist)
                again = make_inputs(dict(shape), TORCH_DTYPES[dtype], 7, dist)
                tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
                assert tensors and all(x.device.type == "cpu" and x.dtype == TORCH_DTYPES[dtype] for x in tensors)
                assert all(torch.equal(a, b) for a, b in zip(tensors, [x for x in again if isinstance(x, torch.Tensor)]))
                assert all(x.abs().sum() > 0 for x in tensors), f"{name} {shape} {dist}: an all-zero input"
                ref = reference(*[upcast(x) for x in inputs])
                assert ref.dtype == torch.float64 and torch.isfinite(ref).all()


def test_flash_attn_causal_is_a_shape_bool() -> None:
    task = load_task(TASKS / "flash_attn.yaml")
    for group in (task.shapes.test, task.shapes.bench):
        assert {s["causal"] for s in group} == {True, False}
        assert all(type(s["causal"]) is bool for s in group)
    make_inputs = load_callable(task, task.inputs, "inputs")
    q, k, v, causal = make_inputs({"B": 1, "H": 1, "S": 5, "D": 16, "causal": True}, torch.bfloat16, 0, "normal")
    assert causal is True and q.shape == (1, 1, 5, 16)
    flops = [task.floor_terms(s)[0] for s in task.shapes.bench]
    assert flops[1] == flops[0] / 2  # causal does half the work


@pytest.mark.parametrize("name", NAMES)
def test_transcript(name: str) -> None:
    task = load_task(TASKS / f"{name}.yaml")
    assert task.transcript == f"{name}.demo.jsonl"
    turns = [json.loads(line) for line in task.resolve(task.transcript).read_text().splitlines() if line.strip()]
    assert len(turns) >= 4
    for turn in turns:
        assert set(turn) == {"text", "code_file"} and turn["text"].strip()
        assert task.resolve(turn["code_file"]).is_file()
    files = [Path(t["code_file"]).stem for t in turns]
    assert files[0].endswith("nocompile") and files[1].endswith("wrong")
