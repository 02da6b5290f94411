"""Task specs: good files load; bad ones give one line naming the file, the line and the key."""
from __future__ import annotations

from pathlib import Path

import pytest

from rungs.core.errors import BadInput
from rungs.core.expr import ExprError, evaluate
from rungs.core.spec import load_task

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
    (GOOD.replace("ref.py:reference", "missing.py:reference"), "t.yaml:3: key 'reference': file"),
    (GOOD.replace("ref.py:reference", "ref.py:nothing"), "t.yaml:3: key 'reference': ref.py defines no function 'nothing'"),
    (GOOD.replace('"8*M*N"', '"8*M*Q"'), "t.yaml:10: key 'roofline.bytes': unknown name 'Q'"),
    (GOOD.replace("{M: 2, N: 3}", "{M: 2, N: seven}"),
     "t.yaml:8: key 'shapes.test.0.N': shape variable N is 'seven', not a number (the roofline bytes formula uses it)"),
    (GOOD.replace("description: d", 'description: "d'),
     "t.yaml:2: not valid YAML: the quoted value that starts on this line runs on to line 10 (a closing \" is "
     "missing?)"),
    (GOOD.replace("name: t", "name: 't").replace('"8*M*N"', "8*M*N"),
     "t.yaml:1: not valid YAML: the quoted value that starts on this line runs on to line 11 (a closing ' is "),
    (GOOD.replace('"8*M*N"', '"__import__(1)"'), "t.yaml:10: key 'roofline.bytes': only min"),
    (GOOD.replace("name: t\n", ""), "key 'name': Field required"),
    ("name: [unclosed\n", "t.yaml:1: not valid YAML: a flow sequence that starts here"),
    ("- a list\n", "expected a mapping"),
])
def test_bad_task_names_file_line_and_key(tmp_path, edit, expect):
    with pytest.raises(BadInput) as info:
        load_task(write_task(tmp_path, edit))
    assert expect in str(info.value)
    assert "\n" not in str(info.value)


def test_task_code_that_raises_names_the_shape_and_its_line(tmp_path):
    from rungs.ladder.cases import make_cases

    path = write_task(tmp_path, GOOD.replace("    - {M: 2, N: 3}", "    - {M: 2, N: 3}\n    - {M: 2, N: -1}"))
    task = load_task(path)
    with pytest.raises(BadInput) as info:
        make_cases(task, task.shapes.test, 1, with_reference=True)
    text = str(info.value)
    assert text.startswith(f"{path}:9: key 'shapes.test.1': inputs ref.py:make_inputs raised RuntimeError: "), text
    assert "at ref.py line" in text and text.endswith("for shape {'M': 2, 'N': -1}") and "\n" not in text


def test_missing_task_file(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        load_task(tmp_path / "nope.yaml")


def test_formula_evaluator_is_arithmetic_only():
    assert evaluate("4*B*S*S*(0.5 if causal else 1)", {"B": 2, "S": 3, "causal": True}) == 36.0
    assert evaluate("max(M, N) // 2", {"M": 7, "N": 9}) == 4.0
    for bad in ("__import__('os')", "x.y", "[1][0]", "open('f')"):
        with pytest.raises(ExprError):
            evaluate(bad, {"x": 1})


DEGENERATE_REF = """\
import torch


def tiny(x):
    return x * 1e-9


def constant(x):
    return torch.ones_like(x) * 3.0


def ignores_inputs(x):
    g = torch.Generator().manual_seed(0)
    return torch.randn(x.shape, generator=g, dtype=x.dtype)


def make_inputs(shape, dtype, seed, dist="normal"):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape["M"], shape["N"], generator=g).to(dtype),)
"""


@pytest.mark.parametrize("func, expect", [("tiny", "tiny in magnitude"), ("constant", "nearly constant"),
                                          ("ignores_inputs", "does not change with its inputs")])
def test_degenerate_task_guard(tmp_path, func, expect):
    from rungs.ladder.cases import degenerate_warnings

    (tmp_path / "ref.py").write_text(DEGENERATE_REF)
    path = tmp_path / "t.yaml"
    path.write_text(GOOD.replace("ref.py:reference", f"ref.py:{func}"))
    (tmp_path / "ref.py").write_text(DEGENERATE_REF)  # write_task's softmax ref is not used here
    warnings = degenerate_warnings(load_task(path))
    assert len(warnings) == 1 and expect in warnings[0], warnings


def test_shipped_tasks_are_not_degenerate():
    from rungs.ladder.cases import degenerate_warnings

    for path in TASKS.glob("*.yaml"):
        assert degenerate_warnings(load_task(path)) == [], path
