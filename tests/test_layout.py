"""The package layout: rungs/ (verification) imports nothing from harness/ (orchestration); rungs/ is split into rooms
by process, so the trust boundary shows in the tree, and these tests hold the rooms to it:

- rungs/core/ is the floor: it imports nothing of the rest of rungs/;
- rungs/timing/ is shared by the worker and the parent's trusted processes: it imports only rungs/core/;
- rungs/worker/ is what runs in the candidate's sandboxed process: it, and everything it imports of rungs/ (the
  backends' worker halves it loads by name among them), imports nothing of the parent (rungs/ladder/,
  rungs/sandbox/, harness/), and loads no pydantic;
- the parent imports from the worker's room only the job format (rungs/worker/job.py).

Also: the `harness` command's sub-command modules import nothing from harness/cli.py (which registers them)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent

ROOMS = ("core", "timing", "backends", "worker", "sandbox", "ladder")
"""rungs/ holds these folders and its __init__.py, nothing else: every module lives in a room."""
WORKER_MAY_IMPORT = ("rungs.worker", "rungs.core", "rungs.timing", "rungs.backends")
"""What the worker's side imports of rungs/: its room, the floor, the shared timing and the backends' worker halves."""
JOB_FORMAT = "rungs.worker.job"
"""The one module of the worker's room the parent imports: the job it hands over and the names of what comes back."""
WORKER_SIDE_PROGRAMS = {
    "harness/export/capture.py": "the export's recording process: runs the candidate, in a child process of its own, "
                                 "under the worker's compile capture and op trace",
    "harness/export/cute_capture.py": "the same recording process for CuTe DSL kernels",
    "harness/export/verify.py": "times an exported kernel the user trusts in the harness's own process, loaded as the "
                                "worker loads a candidate (said in its docstring)",
}
"""Programs outside rungs/worker/ that run candidate code themselves, so they use the worker's code; each says why."""


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (imports inside functions count: they run too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _found(root: Path, files: list[Path], bad: Callable[[str], bool]) -> list[str]:
    return sorted(f"{p.relative_to(root)}: {m}" for p in files for m in _imports(p) if bad(m))


def _py(root: Path, *folder: str) -> list[Path]:
    return sorted(root.joinpath(*folder).rglob("*.py"))


def _offenders(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    return _found(ROOT, _py(folder), lambda m: _under(m, *forbidden))


def _module_file(root: Path, module: str) -> Path | None:
    """The file of `module`, or of the module it names an attribute of (`rungs.worker.job.Job`); None outside rungs/."""
    parts = module.split(".")
    while parts and parts[0] == "rungs":
        for candidate in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
        parts = parts[:-1]
    return None


def worker_side(root: Path) -> list[Path]:
    """The modules of rungs/ the worker's processes run: its room, the backends' halves it imports by name (a job's
    `worker_module`, `<dsl>_worker.py`, and the sections step's `<dsl>_sections.py`), and whatever of rungs/ those
    import, followed down; it stops at the parent's rooms, which are then the offence."""
    todo = _py(root, "rungs", "worker") + sorted((root / "rungs" / "backends").glob("*_worker.py")) \
        + sorted((root / "rungs" / "backends").glob("*_sections.py"))
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for m in _imports(path):
            if _under(m, "rungs") and not _under(m, "rungs.ladder", "rungs.sandbox"):
                found = _module_file(root, m)
                if found is not None:
                    todo.append(found)
    return sorted(seen)


def worker_imports_of_the_parent(root: Path) -> list[str]:
    return _found(root, worker_side(root), lambda m: _under(m, "harness") or
                  (_under(m, "rungs") and m != "rungs" and not _under(m, *WORKER_MAY_IMPORT)))


def parent_imports_of_the_worker(root: Path) -> list[str]:
    """Imports of the worker's room (other than the job format) by the rest of rungs/ and harness/."""
    exempt = set(worker_side(root)) | {root / p for p in WORKER_SIDE_PROGRAMS}
    outside = [p for p in _py(root, "rungs") + _py(root, "harness") if p not in exempt]
    return _found(root, outside, lambda m: _under(m, "rungs.worker") and m != "rungs.worker"
                  and not _under(m, JOB_FORMAT))


def timing_imports_of_either_side(root: Path) -> list[str]:
    return _found(root, _py(root, "rungs", "timing"), lambda m: _under(m, "harness") or
                  (_under(m, "rungs") and m != "rungs" and not _under(m, "rungs.timing", "rungs.core")))


def test_rungs_import_nothing_from_harness() -> None:
    assert _offenders(ROOT / "rungs", ("harness",)) == []


def test_core_imports_nothing_above_it() -> None:
    found = [o for o in _offenders(ROOT / "rungs" / "core", ("rungs",)) if not o.split(": ")[1].startswith("rungs.core")]
    assert found == []


def test_every_module_lives_in_a_room() -> None:
    top = sorted(p.name for p in (ROOT / "rungs").iterdir() if p.name != "__pycache__")
    assert top == sorted(["__init__.py", *ROOMS]), top


def test_the_worker_imports_nothing_of_the_parent() -> None:
    assert worker_imports_of_the_parent(ROOT) == []


def test_the_parent_imports_only_the_job_format_from_the_worker() -> None:
    assert parent_imports_of_the_worker(ROOT) == []


def test_the_shared_timing_imports_neither_side() -> None:
    assert timing_imports_of_either_side(ROOT) == []


def test_the_worker_side_is_what_the_worker_runs() -> None:
    """The walk reaches what the worker imports: its loop and guards, the shared timing and the floor beneath, the
    backends' halves, and no parent module; the parent's job-format imports are seen (and allowed)."""
    side = {str(p.relative_to(ROOT)) for p in worker_side(ROOT)}
    assert {"rungs/worker/loop.py", "rungs/worker/tamper.py", "rungs/timing/measure.py", "rungs/core/atomic.py",
            "rungs/backends/triton_worker.py", "rungs/backends/triton_interp.py"} <= side, side
    assert not any(s.startswith(("rungs/ladder/", "rungs/sandbox/")) for s in side), side
    assert _found(ROOT, _py(ROOT, "rungs", "ladder"), lambda m: _under(m, JOB_FORMAT)), "no job-format import seen"


def test_the_finders_are_not_vacuous(tmp_path: Path) -> None:
    """Each rule fails on a tree that breaks it: an import inside a function, one through the package, one of the
    job format (allowed) beside one of the worker's loop (not)."""
    (tmp_path / "x.py").write_text("def f():\n    from harness.agent import run\n")
    assert {"harness.agent", "harness.agent.run"} <= _imports(tmp_path / "x.py")
    files = {
        "rungs/ladder/rung.py": "from rungs.worker.job import Job\n\ndef f():\n    from rungs.worker.loop import main\n",
        "rungs/sandbox/pool.py": "from rungs.worker import job, tamper\n",
        "rungs/worker/loop.py": "from rungs.worker import calls\n",
        "rungs/worker/calls.py": "def f():\n    from rungs.sandbox.pool import scrub\n",
        "rungs/worker/job.py": "",
        "rungs/backends/triton_worker.py": "from rungs.backends import helper\n",
        "rungs/backends/helper.py": "from rungs.ladder import metrics\n",
        "rungs/timing/measure.py": "from rungs.worker.job import Job\nfrom rungs.core import atomic\n",
        "harness/export/capture.py": "from rungs.worker.calls import as_outputs\n",
        "harness/agent.py": "from rungs.worker.candidate import load_candidate\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert parent_imports_of_the_worker(tmp_path) == [
        "harness/agent.py: rungs.worker.candidate", "harness/agent.py: rungs.worker.candidate.load_candidate",
        "rungs/ladder/rung.py: rungs.worker.loop", "rungs/ladder/rung.py: rungs.worker.loop.main",
        "rungs/sandbox/pool.py: rungs.worker.tamper"]
    assert worker_imports_of_the_parent(tmp_path) == [
        "rungs/backends/helper.py: rungs.ladder", "rungs/backends/helper.py: rungs.ladder.metrics",
        "rungs/worker/calls.py: rungs.sandbox.pool", "rungs/worker/calls.py: rungs.sandbox.pool.scrub"]
    assert timing_imports_of_either_side(tmp_path) == [
        "rungs/timing/measure.py: rungs.worker.job", "rungs/timing/measure.py: rungs.worker.job.Job"]


def test_no_sub_command_module_imports_the_cli() -> None:
    """harness/cli.py registers the sub-command modules (steer, task, eval, context, mcp, export); they take the
    shared options and helpers from harness/cli_common.py, never from cli.py back (no cycle). No other module of
    harness/ imports it either: it is the top."""
    harness = ROOT / "harness"
    modules = sorted(p for p in harness.rglob("*.py") if p != harness / "cli.py")
    subs = {harness / f"{n}_cli.py" for n in ("steer", "task", "eval", "context", "mcp")} | {harness / "export/cli.py"}
    assert subs <= set(modules), subs - set(modules)
    found = sorted(f"{p.relative_to(ROOT)}: {m}" for p in modules for m in _imports(p)
                   if m == "harness.cli" or m.startswith("harness.cli."))
    assert found == []


def test_no_import_cycle_and_a_bare_worker() -> None:
    """Importing rungs (every module) loads no harness module; the worker's side (every module worker_side finds)
    loads no pydantic."""
    names = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                   for p in worker_side(ROOT))
    code = ("import sys, pkgutil, importlib, rungs\n"
            f"for name in {names!r}:\n"
            "    importlib.import_module(name)\n"
            "assert 'pydantic' not in sys.modules, 'the worker imports pydantic'\n"
            "for m in pkgutil.walk_packages(rungs.__path__, 'rungs.'):\n"
            "    importlib.import_module(m.name)\n"
            "bad = sorted(n for n in sys.modules if n == 'harness' or n.startswith('harness.'))\n"
            "assert not bad, bad\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
