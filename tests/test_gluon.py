"""The Triton tasks' Gluon kernels (triton.experimental.gluon): tasks/demos/flash_attn_7_gluon.py and gemm_6_gluon.py.

On a CPU: the Triton worker's compile capture builds its Hopper kernel for sm_90a (the dumps rung's path), and the SASS
has what the demo's docstring claims: wgmma for both products, registers moved from the producer warp to the two
consumer warpgroups (setmaxnreg 24 and 240), and in the loop a wait for S alone (P V still in flight); at head dim 256
(64-key blocks) it fits Hopper's shared memory without spills. On the GPU: the
judging rungs on every test shape of tasks/flash_attn.yaml, then timed calls.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from backend_driver import Launches, load_worker, sass

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tasks" / "demos" / "flash_attn_7_gluon.py"
GEMM = ROOT / "tasks" / "demos" / "gemm_6_gluon.py"


def _compiled(path: Path, name: str, calls) -> list:
    """The Triton worker's compile capture around `calls(module)`: what each launch compiled for sm_90a."""
    worker = load_worker(name="triton")
    launches = Launches()
    restore = worker.install_compile_capture(False, launches)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        calls(module)
    finally:
        restore()
    return [(n, handle) for n, handle, _ in launches.compiled]


def test_the_gluon_attention_builds_for_hopper_with_its_partitions(tmp_path: Path) -> None:
    import torch

    def calls(module) -> None:  # CPU tensors: compiled for sm_90a, never launched
        q = torch.zeros(1, 2, 300, 128, dtype=torch.bfloat16)
        module._attention_hopper(q, q, q, True)
        wide = torch.zeros(1, 2, 300, 256, dtype=torch.bfloat16)  # head dim 256, its route: 64-key blocks
        module._attention_hopper(wide, wide, wide, False, BLOCK_N=module.HOPPER_KEY_BLOCK[256])

    (name, handle), (_, handle_256) = _compiled(DEMO, "candidate_gluon_attention", calls)
    worker = load_worker(name="triton")
    worker.write_compiled([(name, handle, []), ("d256", handle_256, [])], tmp_path)
    assert handle_256.metadata.shared <= 227 * 1024
    assert not re.search(r"\b(LDL|STL)\b", sass(tmp_path / "d256.cubin"))
    ptx = (tmp_path / f"{name}.ptx").read_text()
    code = sass(tmp_path / f"{name}.cubin")
    hgmma = [line for line in code.splitlines() if "HGMMA.64x128x16.F32.BF16" in line]
    # per consumer warpgroup: the first block's S, the loop's S and P V, the last P V; 8 k-steps each
    assert len(hgmma) == 2 * 4 * 8, len(hgmma)
    assert sum("tnspB" in line for line in hgmma) == 2 * 2 * 8  # P V: P from registers, V transposed from shared
    assert "setmaxnreg.dec.sync.aligned.u32 \t24" in ptx and "setmaxnreg.inc.sync.aligned.u32 \t240" in ptx
    waits = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", code)
    assert waits.count("0x1") == 2, waits  # each consumer's loop waits for S alone, P V still in flight
    assert "LDL" not in code and "STL" not in code  # no spills at 240 registers


@pytest.mark.gpu
def test_gpu_the_gluon_attention_is_right_and_timed(tmp_path: Path, gpu_baselines: Path) -> None:
    """Every test shape of tasks/flash_attn.yaml (lengths no block divides, both masks, head dims 32/64/128: all
    through the Gluon kernel on the GPU) against the float64 reference, then timed at a 2048-long sequence."""
    import torch

    from rungs.core.spec import load_task
    from rungs.ladder.ladder import check
    from conftest import TASKS, judge_rungs

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    task = load_task(TASKS / "flash_attn.yaml")
    bench = [{"B": 2, "H": 8, "S": 2048, "D": 128, "causal": c} for c in (False, True)]
    task = task.model_copy(update={"shapes": task.shapes.model_copy(update={"bench": bench})})
    v = check(task, DEMO, tmp_path / "work", dump_dir=tmp_path / "dumps", seeds=1, baseline_cache=gpu_baselines,
              rungs=judge_rungs())
    assert v.verdict == "pass", v.summary
    print(v.rung("benchmark").message)


def test_the_gluon_gemm_builds_persistent_and_warp_specialized(tmp_path: Path) -> None:
    """gemm_6_gluon: per consumer warpgroup, 4 wgmmas of 64 x 256 x 16 a 64-deep K step with one left in flight, TMA
    loads (B's 256 columns in 128-byte pieces) and a TMA store of C, registers moved to the consumers, no spills,
    and its shared memory (3 stages and C's staging) under Hopper's 227 KB."""
    import torch

    def calls(module) -> None:
        a = torch.zeros(4096, 4096, dtype=torch.bfloat16)
        # the default, and the config with the deepest ring (the most shared memory of the 128 x 128 ones); the other
        # two differ from these only in the tile order (a run-time value) or one stage less
        for config in (module.CONFIGS[0], max(module.CONFIGS[2:], key=lambda c: c["STAGES"])):
            module._gemm_gluon(a, a, **config)

    (name, handle), *others = _compiled(GEMM, "candidate_gluon_gemm", calls)
    worker = load_worker(name="triton")
    worker.write_compiled([(name, handle, [])] + [(f"cfg{i}", h, []) for i, (_, h) in enumerate(others)], tmp_path)
    for i, (_, other) in enumerate(others):  # it fits and keeps its accumulator in registers
        assert other.metadata.shared <= 227 * 1024 and not re.search(r"\b(LDL|STL)\b", sass(tmp_path / f"cfg{i}.cubin"))
    code = sass(tmp_path / f"{name}.cubin")
    assert len(re.findall(r"HGMMA\.64x256x16\.F32\.BF16", code)) == 2 * 4
    assert "UTMALDG" in code and "UTMASTG" in code
    assert re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", code).count("0x1") == 2
    assert "setmaxnreg.inc.sync.aligned.u32 \t240" in (tmp_path / f"{name}.ptx").read_text()
    assert not re.search(r"\b(LDL|STL)\b", code)
    assert handle.metadata.shared <= 227 * 1024


@pytest.mark.gpu
def test_gpu_the_gluon_gemm_is_right_and_timed(tmp_path: Path, gpu_baselines: Path) -> None:
    """Every test shape of tasks/gemm.yaml (the aligned ones through the Gluon kernel, the odd ones through the
    fallback) against the float64 reference, then timed at 2048^3 and 4096 x 4096 x 1024."""
    import torch

    from rungs.core.spec import load_task
    from rungs.ladder.ladder import check
    from conftest import TASKS, judge_rungs

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    task = load_task(TASKS / "gemm.yaml")
    bench = [{"M": 2048, "N": 2048, "K": 2048}, {"M": 4096, "N": 4096, "K": 1024}]
    task = task.model_copy(update={"shapes": task.shapes.model_copy(update={"bench": bench})})
    v = check(task, GEMM, tmp_path / "work", dump_dir=tmp_path / "dumps", seeds=1, baseline_cache=gpu_baselines,
              rungs=judge_rungs())
    assert v.verdict == "pass", v.summary
    print(v.rung("benchmark").message)
