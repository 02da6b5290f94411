"""The TileLang backend on a CPU: a demo compiles for sm_90a (nvcc) under the compile capture, and the dumps
hold the generated CUDA, PTX and the cubin nvcc produced, whose SASS cuobjdump reads."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("tilelang", reason="tilelang is not installed (pip install tilelang)")
from rungs.backends import get  # noqa: E402
from rungs.backends.cuda_api import nvcc_path  # noqa: E402

if nvcc_path() is None:  # pragma: no cover
    pytest.skip("TileLang compiles with nvcc, and none is here", allow_module_level=True)

from backend_driver import ROOT, compile_demo, sass  # noqa: E402


@pytest.fixture(autouse=True)
def cpu_target(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in get("tilelang").worker_env("cpu").items():
        monkeypatch.setenv(key, value)


def test_demo_compiles_for_sm90a_with_dumps(tmp_path: Path) -> None:
    result = compile_demo("tilelang", ROOT / "tasks" / "demos" / "softmax_tilelang_4_fast.py", "softmax_tilelang",
                          tmp_path, limit=1)
    assert result["launches"] == 1 and [k["name"] for k in result["kernels"]] == ["softmax_rows"]
    for suffix in get("tilelang").dump_suffixes:
        assert (tmp_path / f"softmax_rows.{suffix}").is_file(), suffix
    assert "__global__" in (tmp_path / "softmax_rows.cu").read_text()
    meta = json.loads((tmp_path / "softmax_rows.json").read_text())
    assert "sm_90a" in meta["target"] and meta["shapes"] == [{"M": 1, "N": 1}]
    code = sass(tmp_path / "softmax_rows.cubin")
    assert "sm_90a" in code and "MUFU.EX2" in code
    # ncu filters by the device function's name, which is not the prim_func's (the H200's profile rung found none)
    functions = result["kernels"][0]["functions"]
    assert functions and all(f != "softmax_rows" and f"Function : {f}" in code for f in functions), functions
    from rungs.backends import tilelang_worker  # the cubin is nvcc's own, taken as it came out (not rebuilt)

    source = (tmp_path / "softmax_rows.cu").read_text()
    _, cubin, _, _, ptx = tilelang_worker._binaries[source]
    assert cubin == (tmp_path / "softmax_rows.cubin").read_bytes()
    assert ptx == (tmp_path / "softmax_rows.ptx").read_text() and ".target sm_90a" in ptx


def test_both_halves_follow_the_protocol() -> None:
    from rungs.backends import Backend, WorkerBackend, worker_half

    assert isinstance(get("tilelang"), Backend) and isinstance(worker_half("tilelang"), WorkerBackend)


def test_parse_error_is_a_compile_error_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(AttributeError) as info:
        compile_demo("tilelang", ROOT / "tasks" / "demos" / "softmax_tilelang_1_nocompile.py", "softmax_tilelang",
                     tmp_path, limit=1)
    import traceback

    message = get("tilelang").compile_message("".join(traceback.format_exception(info.value)))
    assert "reduce_maximum" in message and "line " in message
