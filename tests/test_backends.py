"""The DSL plug points: a backend with no CPU interpreter ends a CPU climb "unverified" (never "pass"), and a compile
capture that saw no launch fails compile whatever the DSL. The stand-in backend is Triton's own worker half under
another name, with no interpreter: the rungs and the worker are the real ones."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rungs import backends
from rungs.backends import triton as triton_backend
from rungs.worker.job import Job
from rungs.ladder.ladder import check

from conftest import TASKS

FAKE = dataclasses.replace(triton_backend.BACKEND, name="fake", label="Fake DSL", verifies_on_cpu=False)

TORCH_ONLY = '''import torch
import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    return torch.softmax(x, -1)
'''


@pytest.fixture
def fake_task(lean_softmax_task):
    """One small shape: no test here reads the task's shapes, and each built every one (the softmax's six blocks)."""
    backends.register("fake", f"{__name__}:FAKE")
    yield lean_softmax_task.model_copy(update={"dsl": "fake"})
    backends._REGISTRY.pop("fake", None)
    backends._loaded.pop("fake", None)


def test_backend_without_an_interpreter_is_unverified_on_a_cpu(fake_task, tmp_path):
    v = check(fake_task, TASKS / "demos" / "softmax_3_rowwise.py", tmp_path / "w", dump_dir=tmp_path / "d",
              device="cpu", seeds=1)
    assert v.verdict == "unverified" and v.failed_rung is None, v.summary
    assert v.rung("compile").status == "ok" and v.rung("dumps").status == "ok"
    assert list((tmp_path / "d").glob("*.ptx")), "the dumps rung still writes the compiled stages"
    for name in ("run", "correctness", "benchmark", "profile", "roofline"):
        r = v.rung(name)
        assert r.status == "skip" and r.message == "compiled, not verified: no GPU and no Fake DSL interpreter", r
    assert v.summary.startswith("unverified: compiled, not verified")


def test_a_compile_capture_with_no_launch_fails_compile_for_any_dsl(fake_task, tmp_path):
    kernel = tmp_path / "torch_only.py"
    kernel.write_text(TORCH_ONLY)
    v = check(fake_task, kernel, tmp_path / "w", device="cpu", seeds=1)
    assert v.verdict == "fail" and v.failed_rung == "compile", v.summary
    assert "the entry launched no Fake DSL kernel" in v.rung("compile").message


def test_unknown_dsl_is_one_line_at_precheck(softmax_task, tmp_path):
    v = check(softmax_task.model_copy(update={"dsl": "nosuch"}), TASKS / "demos" / "softmax_3_rowwise.py",
              tmp_path / "w", device="cpu", seeds=1)
    assert v.failed_rung == "precheck" and v.rung("precheck").message.startswith("unknown dsl 'nosuch'")


def test_the_registry_names_its_backends_and_halves():
    assert {"triton", "cute"} <= set(backends.names())
    tri = backends.get("triton")
    assert isinstance(tri, backends.Backend) and tri.label == "Triton" and tri.verifies_on_cpu
    assert tri.version() not in ("", "unknown")
    assert isinstance(backends.load_worker(name="triton"), backends.WorkerBackend)
    with pytest.raises(backends.UnknownBackend, match="expected one of"):
        backends.get("nosuch")


def test_a_worker_half_is_found_the_same_way_by_module_and_by_dsl_name():
    """load_worker finds a worker half by the module the parent's backend names (carried in the job) or, where a job
    carries none, by the DSL's name: for every registered backend both name the same module."""
    for name in backends.names():
        by_name = backends._REGISTRY[name].partition(":")[0] + "_worker"
        assert backends.get(name).worker_module == by_name, name
    assert backends.load_worker("rungs.backends.triton_worker") is backends.load_worker(name="triton")
    with pytest.raises(backends.UnknownBackend, match="expected one of"):
        backends.load_worker(name="nosuch")


def test_job_round_trips_and_refuses_unknown_keys():
    job = Job(kernel="/k.py", dsl="triton", device="cuda", phases=["compile", "run"], bench=[{"id": "b00"}],
              recheck={"id": "r000"}, timing={"cap_s": 1.0})
    assert Job.from_json(job.to_json()) == job
    assert job.but(phases=["run"]).phases == ["run"] and job.phases == ["compile", "run"]
    with pytest.raises(ValueError, match="unknown job key"):
        Job.from_dict({**job.to_dict(), "surprise": 1})


def test_triton_compile_message_points_at_the_kernel_line():
    error = ("  cand.py:30 in kernel: _k[grid](x)\nCompilationError: at 4:8:\n    y = tl.load(x)\n"
             "        ^\nNameError('tl2 is not defined')")
    message = backends.get("triton").compile_message(error)
    assert "at line 4, column 8 of the @triton.jit function, launched from line 30 in kernel" in message


def test_atomic_write_leaves_no_temporary(tmp_path: Path):
    from rungs.core.atomic import atomic_write

    target = tmp_path / "x.json"
    atomic_write(target, "one")
    atomic_write(target, b"two")
    assert target.read_text() == "two" and [p.name for p in tmp_path.iterdir()] == ["x.json"]
