"""The `hopper` context (harness/context_docs/hopper): shipped with the package, searchable with no network, named
by the gemm and FlashAttention tasks, and its PTX forms are real: the code block compiles for sm_90a to the Hopper
instructions it is there to show (issue 38, item 5)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness import context
from rungs.backends.cuda_api import nvcc_path
from rungs.core.spec import load_task
from rungs.ladder.dumps import tool

from conftest import TASKS

NOTES = Path(context.__file__).parent / "context_docs" / "hopper" / "hopper.md"


def test_the_hopper_notes_are_found_by_what_a_kernel_writer_searches_for(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path / "home"))
    assert context.ensure(["hopper"]) == []  # a built-in local source: filled from the package, no network
    for query, title in (("wgmma shared memory descriptor swizzle", "descriptor"),
                         ("setmaxnreg register reallocation producer consumer", "Warp specialization"),
                         ("flash attention softmax overlap ping-pong", "FlashAttention"),
                         ("wgmma accumulator layout scale-d", "wgmma.mma_async"),
                         ("ptxas C7519 wgmma serialized divergent path", "what broke on the way")):
        hits = context.search(query, ["hopper"], k=1)
        assert hits and title.lower() in hits[0].title.lower(), (query, [h.title for h in hits])


def test_the_hopper_tasks_name_it():
    for name in ("gemm", "gemm_cuda", "gemm_cute", "gemm_tilelang",
                 "flash_attn", "flash_attn_cuda", "flash_attn_cute", "flash_attn_tilelang"):
        assert "hopper" in load_task(TASKS / f"{name}.yaml").context, name


@pytest.mark.skipif(nvcc_path() is None or tool("cuobjdump") is None, reason="needs nvcc and cuobjdump")
def test_the_notes_code_compiles_to_hopper_instructions(tmp_path):
    code = re.search(r"```cuda\n(.*?)```", NOTES.read_text(), re.S).group(1)
    (tmp_path / "notes.cu").write_text(code)
    subprocess.run([nvcc_path(), "-arch=sm_90a", "-cubin", "-o", str(tmp_path / "notes.cubin"),
                    str(tmp_path / "notes.cu")], check=True, capture_output=True, timeout=300)
    sass = subprocess.run([tool("cuobjdump"), "-sass", str(tmp_path / "notes.cubin")], capture_output=True,
                          text=True, check=True, timeout=120).stdout
    for op in ("HGMMA.64x64x16.F32.BF16", "UTMALDG.2D", "SYNCS.ARRIVE.TRANS64", "SYNCS.PHASECHK.TRANS64.TRYWAIT",
               "USETMAXREG.TRY_ALLOC", "USETMAXREG.DEALLOC"):
        assert op in sass, op
    assert sass.count("HGMMA.64x64x16.F32.BF16") == 4  # the four k16 steps across one 128-byte swizzle row
