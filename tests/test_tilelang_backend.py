"""The TileLang backend on a CPU: a demo compiles for sm_90a (nvcc) under the compile capture, and the dumps
hold the generated CUDA, PTX and the cubin nvcc produced, whose SASS cuobjdump reads."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import skip_unless_installed
from rungs.backends import get
from rungs.backends.cuda_api import nvcc_path

skip_unless_installed("tilelang", "tilelang is not installed (pip install tilelang)")

if nvcc_path() is None:  # pragma: no cover
    pytest.skip("TileLang compiles with nvcc, and none is here", allow_module_level=True)

from backend_driver import ROOT, compile_demo, s_and_p_v_waits, sass  # noqa: E402 - after the skips


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
    from rungs.backends import (
        tilelang_worker,  # the cubin is nvcc's own, taken as it came out (not rebuilt)
    )

    source = (tmp_path / "softmax_rows.cu").read_text()
    _, cubin, _, _, ptx = tilelang_worker._binaries[source]
    assert cubin == (tmp_path / "softmax_rows.cubin").read_bytes()
    assert ptx == (tmp_path / "softmax_rows.ptx").read_text() and ".target sm_90a" in ptx


def test_both_halves_follow_the_protocol() -> None:
    from rungs.backends import Backend, WorkerBackend, load_worker

    assert isinstance(get("tilelang"), Backend) and isinstance(load_worker(name="tilelang"), WorkerBackend)


def test_parse_error_is_a_compile_error_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(AttributeError) as info:
        compile_demo("tilelang", ROOT / "tasks" / "demos" / "softmax_tilelang_1_nocompile.py", "softmax_tilelang",
                     tmp_path, limit=1)
    import traceback

    message = get("tilelang").compile_message("".join(traceback.format_exception(info.value)))
    assert "reduce_maximum" in message and "line " in message


def _marked_softmax(tmp_path: Path) -> Path:
    source = (ROOT / "tasks" / "demos" / "softmax_tilelang_4_fast.py").read_text()
    source = source.replace("import torch\n", "import torch\n\nfrom rungs.backends.tilelang_sections import "
                            "section_begin, section_end\n", 1)
    source = source.replace("            m = T.alloc_fragment((1,), \"float32\")\n            s = T.alloc_fragment((1,), "
                            "\"float32\")\n", "            m = T.alloc_fragment((1,), \"float32\")\n            s = "
                            "T.alloc_fragment((1,), \"float32\")\n            section_begin(\"load\")\n", 1)
    source = source.replace("            T.reduce_max(x, m, dim=0)\n", "            section_end(\"load\")\n"
                            "            section_begin(\"reduce\")\n            T.reduce_max(x, m, dim=0)\n", 1)
    source = source.replace("            for j in T.Parallel(BLOCK):\n                x[j] = x[j] / s[0]\n",
                            "            for j in T.Parallel(BLOCK):\n                x[j] = x[j] / s[0]\n"
                            "            section_end(\"reduce\")\n", 1)
    path = tmp_path / "softmax_tilelang_marked.py"
    path.write_text(source)
    return path


def test_section_markers_add_nothing_to_the_timed_build_and_become_the_cuda_markers_when_instrumented(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The marked kernel's timed build is the unmarked demo's, to the generated CUDA; with the sections step's
    buffer address set (here a made-up one: this only compiles, with nvcc for sm_90a) each marker is the CUDA C++
    one over a buffer at that address, and the PTX reads the timers and appends records with an atomic."""
    import ast

    from rungs.backends import tilelang_sections as ts
    from rungs.ladder.static_checks import screen

    marked = _marked_softmax(tmp_path)
    assert ts.regions(marked.read_text()) == ["load", "reduce"]
    assert screen(ast.parse(marked.read_text())) == []  # the markers pass the static screen
    for source in ("from rungs.backends.tilelang_sections import _state\n",
                   "import rungs.backends.tilelang_sections as s\ns._state.address = 1\n"):
        assert "harness" in [f.rule for f in screen(ast.parse(source))], source
    plain = compile_demo("tilelang", ROOT / "tasks" / "demos" / "softmax_tilelang_4_fast.py", "softmax_tilelang",
                         tmp_path / "plain", limit=1)
    timed = compile_demo("tilelang", marked, "softmax_tilelang", tmp_path / "timed", limit=1)
    assert [k["name"] for k in plain["kernels"]] == [k["name"] for k in timed["kernels"]] == ["softmax_rows"]
    assert (tmp_path / "timed" / "softmax_rows.cu").read_text() == (tmp_path / "plain" / "softmax_rows.cu").read_text()
    # the same machine code (names of internal linkage carry a hash of nvcc's temporary file name)
    code = lambda d: re.sub(r"_INTERNAL_[0-9a-f]{8}", "_INTERNAL_", sass(tmp_path / d / "softmax_rows.cubin"))
    assert code("timed") == code("plain") and "MUFU.EX2" in code("timed")
    monkeypatch.setattr(ts._state, "address", 0x7F0000000000)
    monkeypatch.setattr(ts._state, "ids", {})
    ts.use_hook(ts._state.address)
    try:
        compile_demo("tilelang", marked, "softmax_tilelang", tmp_path / "instr", limit=1)
    finally:
        ts.use_hook(None)
    cu = (tmp_path / "instr" / "softmax_rows.cu").read_text()
    assert ts._state.ids == {"load": 0, "reduce": 1}
    assert "KH_SECTION_BEGIN(load);" in cu and "KH_SECTION_END(reduce);" in cu and "0x7f0000000010ull" in cu
    instrumented = (tmp_path / "instr" / "softmax_rows.ptx").read_text()
    assert "%globaltimer" in instrumented and "%clock64" in instrumented and "atom." in instrumented


def test_the_overlapped_attention_runs_its_softmax_under_p_v(tmp_path: Path) -> None:
    """tasks/demos/flash_attn_tilelang_6_overlap.py (#38: FlashAttention-3's overlap in TileLang), as far as a CPU can
    check it: the loop's softmax (its exp2s) runs after P V's first HGMMA is issued and before the wait that ends P V,
    with S waited for alone (`WARPGROUP.DEPBAR.LE gsb0, 0x1`, or 0x0 before P V's issue); and each K / V stage is
    handed back to the producer only after the wait that ends its wgmma. Whether it is right is the GPU's to say.
    A first version, which rescaled O after the wait, had all 66 exp2s after both waits (ptxas moved the wait up)."""
    result = compile_demo("tilelang", ROOT / "tasks" / "demos" / "flash_attn_tilelang_6_overlap.py",
                          "flash_attn_tilelang", tmp_path, limit=1)
    [kernel] = result["kernels"]
    code = sass(tmp_path / f"{kernel['name']}.cubin")
    first_pv = re.search(r"HGMMA\.\S+ R\d+, gdesc\[\w+\]\.tnspB", code)  # P V: both operands in shared memory
    assert first_pv, "no P V wgmma from shared memory"
    waits, _, end_pv = s_and_p_v_waits(code)
    assert waits.count("0x1") == 1, waits
    under = code[first_pv.start():end_pv.start()].count("MUFU.EX2")
    assert under >= 64, f"{under} of the softmax's exp2s run while P V is in flight"
    assert "STL" not in code and "LDL" not in code
    source = (tmp_path / f"{kernel['name']}.cu").read_text()
    loop = source[source.index("wait_wgmma<1>"):]
    assert loop.index("wait_wgmma<1>") < loop.index(".arrive()") < loop.index("wait_wgmma<0>") \
        < loop.index(".arrive()", loop.index("wait_wgmma<0>"))  # K handed back after wait(1), V after wait(0)
