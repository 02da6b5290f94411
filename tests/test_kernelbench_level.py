"""benchmarks/kernelbench_level.py's arithmetic (the GPU script itself is not run here): the time split it prints
per problem, the level's total, and the --check rule (a warm problem over twice its figure fails)."""
from __future__ import annotations

import importlib.util

from conftest import ROOT
from harness.eval import split_seconds


def _script():
    spec = importlib.util.spec_from_file_location("kernelbench_level", ROOT / "benchmarks" / "kernelbench_level.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_split_adds_up_to_the_problems_seconds_and_names_the_slow_part():
    level = _script()
    # a GPU problem's rung_seconds as the eval writes them: the one worker's bench and run phases moved out of the
    # compile rung's clock, the baselines out of the benchmark rung's
    seconds = split_seconds({"precheck": 0.1, "compile": 20.0, "run": 0.2, "correctness": 1.0, "benchmark": 30.0,
                             "profile": 9.0, "roofline": 0.1},
                            {"baseline_s": 25.0, "breakdown_s": {"run": 0.5, "bench_inputs": 1.0, "bench_timed": 2.0,
                                                                 "bench_first_call": 0.5, "worker_exit": 0.5,
                                                                 "gpu_wait": 3.0}})  # another process timed the GPU
    assert seconds["compile"] == 12.5 and seconds["gpu_wait"] == 3.0 and seconds["run"] == 0.7 and seconds["baselines"] == 25.0
    assert seconds["benchmark"] == 9.0
    assert sum(seconds.values()) == 60.4
    parts = level.split({**seconds, "other": 2.0})
    assert parts == {"compile": 12.5, "correctness": 1.7, "benchmark": 9.0, "profile": 9.0, "baselines": 25.0,
                     "gpu_wait": 3.0, "other": 2.2}
    text = level.table([{"problem": "19_ReLU", "verdict": "pass", "seconds": 62.4,
                         "rung_seconds": {**seconds, "other": 2.0}},
                        {"problem": "23_Softmax", "verdict": "fail", "failed_rung": "task", "seconds": 0.5,
                         "rung_seconds": {}}])
    assert text.splitlines()[-1].split() == ["level", "total", "(2", "problems)", "62.9", "12.5", "1.7", "9.0", "9.0",
                                             "25.0", "3.0", "2.2"]


def test_a_wait_for_the_gpu_is_not_a_problems_own_time():
    """Under -j N a problem may wait for another's timing or for the memory the others hold: --check judges the
    seconds less those waits, so a wait does not read as a regression."""
    result = {"seconds": 50.0, "rung_seconds": {"compile": 10.0, "gpu_wait": 5.0, "memory_wait": 25.0}}
    assert _script().own_seconds(result) == 20.0


def test_check_fails_a_warm_problem_over_twice_its_figure():
    level = _script()
    assert level.regressions({"a": 20.0, "b": 41.0, "new": 99.0}, {"a": 10.0, "b": 20.0}) == [
        "b: 41.0 s warm, more than 2 x its figure 20.0 s"]


def test_a_level_measured_in_parts_keeps_one_cache_and_every_figure(tmp_path, monkeypatch):
    """A level does not fit one device session: each part's `fill` pass adds to one carried cache, which must hold
    the Nsight Compute profiles too (they default to ~/.cache, outside KERNEL_HARNESS_CACHE), and --record adds each
    part's warm figures to those already recorded."""
    from rungs.ladder import profile, roofline

    level = _script()
    cache = tmp_path / "carried"
    for key, value in level.cache_env(cache).items():
        monkeypatch.setenv(key, value)
    assert roofline.cache_dir() == cache.resolve()
    assert profile.default_cache().is_relative_to(cache.resolve())
    figures = tmp_path / "figures.json"
    assert level.record(figures, {"1_a": 10.0, "2_b": 20.0}, "NVIDIA H100 80GB HBM3", "fp32") == 0
    assert level.record(figures, {"2_b": 22.0, "3_c": 5.0}, "NVIDIA H100 80GB HBM3", "fp32") == 1
    import json

    assert json.loads(figures.read_text())["warm_s"] == {"1_a": 10.0, "2_b": 22.0, "3_c": 5.0}


def test_the_cold_pass_empties_only_a_cache_the_script_made_and_figures_stay_with_their_gpu(tmp_path):
    """`--cache` names a folder the cold pass empties: one the script did not make (the checkout, the harness's
    home) is refused in one line; figures recorded for one GPU are not mixed with another's."""
    import json

    import pytest

    level = _script()
    mine = tmp_path / "kbcache"
    level.empty_cache(mine)
    (mine / "baselines.json").write_text("{}")
    level.empty_cache(mine)  # the script's own: emptied
    assert sorted(p.name for p in mine.iterdir()) == [level.MARKER]
    theirs = tmp_path / "home"
    theirs.mkdir()
    (theirs / "keep.txt").write_text("a user's file")
    with pytest.raises(SystemExit, match="refusing to empty"):
        level.empty_cache(theirs)
    assert (theirs / "keep.txt").read_text() == "a user's file"
    figures = tmp_path / "figures.json"
    level.record(figures, {"1_a": 10.0}, "NVIDIA H100 80GB HBM3", "fp32")
    with pytest.raises(SystemExit, match="record to another file"):
        level.record(figures, {"2_b": 20.0}, "NVIDIA H200", "fp32")
    assert json.loads(figures.read_text())["warm_s"] == {"1_a": 10.0}
