"""Task specs: good files load; bad ones give one line naming the file, the line and the key."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import BadInput
from harness.expr import ExprError, evaluate
from harness.spec import load_task

from conftest import TASKS


def write_task(tmp_path: Path, text: str) -> Path:
    (tmp_path / "ref.py").write_text((TASKS / "softmax_ref.py").read_text())
    path = tmp_path / "t.yaml"
    path.write_text(text)
    return path


GOOD = """\
name: t
description: d
reference: ref.py:reference
inputs: ref.py:make_inputs
dtypes: [float32]
shapes:
  test:
    - {M: 2, N: 3}
roofline:
  bytes: "8*M*N"
"""


def test_shipped_tasks_load():
    for path in TASKS.glob("*.yaml"):
        task = load_task(path)
        assert task.shapes.test and task.shapes.bench, path


def test_good_task_loads(tmp_path):
    task = load_task(write_task(tmp_path, GOOD))
    assert task.floor_terms({"M": 2, "N": 3}) == (0.0, 48.0)


@pytest.mark.parametrize("edit, expect", [
    (GOOD + "colour: blue\n", "t.yaml:11: key 'colour': unknown key"),
    (GOOD.replace("dtypes: [float32]", "dtypes: [float33]"), "t.yaml:5: key 'dtypes.0'"),
    (GOOD.replace("    - {M: 2, N: 3}", "    - {M: 2, N: 3}\n  tset: []"), "t.yaml:9: key 'shapes.tset': unknown key"),
    (GOOD.replace("ref.py:reference", "missing.py:reference"), "key 'reference': file"),
    (GOOD.replace("ref.py:reference", "ref.py:nothing"), "defines no function 'nothing'"),
    (GOOD.replace('"8*M*N"', '"8*M*Q"'), "key 'roofline': unknown name 'Q'"),
    (GOOD.replace('"8*M*N"', '"__import__(1)"'), "t.yaml:10: key 'roofline.bytes': only min"),
    (GOOD.replace("name: t\n", ""), "key 'name': Field required"),
    ("name: [unclosed\n", "t.yaml:2: not valid YAML"),
    ("- a list\n", "expected a mapping"),
])
def test_bad_task_names_file_line_and_key(tmp_path, edit, expect):
    with pytest.raises(BadInput) as info:
        load_task(write_task(tmp_path, edit))
    assert expect in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_task_file(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        load_task(tmp_path / "nope.yaml")


def test_formula_evaluator_is_arithmetic_only():
    assert evaluate("4*B*S*S*(0.5 if causal else 1)", {"B": 2, "S": 3, "causal": True}) == 36.0
    assert evaluate("max(M, N) // 2", {"M": 7, "N": 9}) == 4.0
    for bad in ("__import__('os')", "x.y", "[1][0]", "open('f')"):
        with pytest.raises(ExprError):
            evaluate(bad, {"x": 1})
