"""benchmarks/dsl_table.py's choice of each DSL's row (the GPU script itself times libraries; not run here): where a
DSL has several demos' verdicts, the table shows its fastest timed pass, not the last file by name."""
from __future__ import annotations

import importlib.util
import json

from conftest import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("dsl_table", ROOT / "benchmarks" / "dsl_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _verdict(verdict: str, us: float | None) -> dict:
    metrics = {"runtime_us": us} if us is not None else {}
    return {"verdict": verdict, "failed_rung": None if verdict == "pass" else "correctness",
            "rungs": [{"name": "benchmark", "metrics": metrics}]}


def test_each_dsl_shows_its_fastest_timed_pass(tmp_path):
    table = _script()
    files = {"flash_attn_tilelang_4_fast": _verdict("pass", 2029.9),
             "flash_attn_tilelang_6_overlap": _verdict("pass", 4080.3),  # right, slower: not the row
             "gemm_4_grouped": _verdict("pass", 1653.0),
             "gemm_6_gluon": _verdict("pass", 1547.4),
             "gemm_9_broken": _verdict("fail", None),  # sorts last, and is no better than a timed pass
             "softmax_cute_2_wrong": _verdict("fail", None)}
    for stem, v in files.items():
        (tmp_path / f"{stem}.json").write_text(json.dumps(v))
    found = table.verdicts([tmp_path])
    assert found[("flash_attn", "tilelang")]["demo"] == "flash_attn_tilelang_4_fast"
    assert found[("gemm", "")]["demo"] == "gemm_6_gluon"
    assert found[("softmax", "cute")]["demo"] == "softmax_cute_2_wrong"  # the only one: shown, failed
