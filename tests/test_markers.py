"""The test suite's own markers (issue 37): every test that opens a page in headless Chromium is marked `chromium`,
and without the browser it skips in one line, except in CI, which installs it (.ci/run) and must run them."""
from __future__ import annotations

import ast

import pytest

from conftest import CHROMIUM_MISSING, ROOT, pytest_runtest_setup

TESTS = ROOT / "tests"


def is_chromium_mark(node: ast.AST) -> bool:
    return ast.unparse(node) in ("pytest.mark.chromium", "[pytest.mark.chromium]")


def test_every_test_that_opens_chromium_is_marked():
    opening, unmarked = [], []
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        module_marked = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                            and is_chromium_mark(n.value) for n in tree.body)
        for fn in tree.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_")):
                continue
            if any(isinstance(c, ast.Call) and getattr(c.func, "id", "") in ("chromium", "chromium_path")
                   for c in ast.walk(fn)):
                opening.append(f"{path.name}::{fn.name}")
                if not (module_marked or any(is_chromium_mark(d) for d in fn.decorator_list)):
                    unmarked.append(opening[-1])
    assert len(opening) >= 4 and not unmarked, unmarked


def test_the_marker_is_registered_and_in_the_readme(pytestconfig):
    assert any(m.startswith("chromium:") for m in pytestconfig.getini("markers"))
    assert "`chromium`" in (ROOT / "README.md").read_text()


class Marked:
    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "chromium" else None


def test_no_chromium_skips_in_one_line_but_fails_in_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no browser on it
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        pytest_runtest_setup(Marked())
    assert skipped.value.msg == CHROMIUM_MISSING and "\n" not in CHROMIUM_MISSING
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        pytest_runtest_setup(Marked())
    assert failed.value.msg.startswith(CHROMIUM_MISSING) and "CI" in failed.value.msg
