"""`harness export`: a verified Triton kernel as C sources that link into a program with no Python (issue 18). A CuTe
DSL task goes its own way after picking the kernel (harness/export/cute.py: export_to_c per compiled function).

Steps: pick the kernel (a run's best iteration, or a file); record every Triton launch its entry makes at the
export shapes, compile-only, in a child process (harness/export/capture.py), refusing what a fixed C launch
sequence cannot replay; compile each distinct launch with Triton's AOT compiler; write the C entry, a Makefile,
a test program and a README (templates in harness/templates/export/); build the objects and check their symbols
(any machine with a C compiler and CUDA's headers); on a GPU, run the test program on inputs the harness wrote and
judge its outputs as the correctness rung does (harness/export/verify.py).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rungs.core.errors import BadInput, HarnessError
from rungs.core.spec import TaskSpec
from harness.export.plan import Variant, plan, tensor_name
from harness.export.untrusted import check_capture, copyable

EXIT_REFUSED = 4
"""`harness export` refused the entry (data-dependent launches, host work between launches, scratch memory,
autotuning, ...): one line on stderr says which."""
DELTAS = (-1, -16, -100)
"""Each size is also recorded this far from the export shape (and at a half and three quarters of it): the
evidence for the grids' and integer arguments' expressions."""
ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "export"


class ExportRefused(HarnessError):
    exit_code = EXIT_REFUSED


@dataclass
class Exported:
    out_dir: Path
    fn: str
    variants: list[Variant]
    capture: dict[str, Any]
    sources: list[str]
    kernel: Path
    """The kernel file exported (the run's best iteration's, or the file given)."""
    built: list[str] = field(default_factory=list)
    """Objects `make` produced (empty where no C compiler or no cuda.h was found)."""
    build_note: str = ""


def parse_shape(text: str, task: TaskSpec) -> dict[str, Any]:
    """`M=1024,N=4096` -> {M: 1024, N: 4096}, with the task's shape variables (others from its first bench shape)."""
    like = (task.shapes.bench or task.shapes.test)[0]
    shape: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or name.strip() not in like:
            raise BadInput(f"--shape {text!r}: expected NAME=VALUE pairs over the task's variables {', '.join(like)}")
        shape[name.strip()] = _value(value.strip(), type(like[name.strip()]))
    return {**like, **shape}


def _value(text: str, kind: type) -> Any:
    try:
        if kind is bool:
            return {"true": True, "false": False}[text.lower()]
        value = kind(text)
    except (ValueError, KeyError):
        wanted = {int: "an integer", float: "a number", bool: "true or false"}.get(kind, "a string")
        raise BadInput(f"--shape: {text!r} is not {wanted}") from None
    if kind is int and value < 1:
        raise BadInput(f"--shape: sizes must be positive, got {text}")
    return value


def pick_kernel(source: Path) -> tuple[Path, str]:
    """A run folder's best iteration, or a kernel file; returns its path and a description."""
    from harness.store import RunStore

    if source.is_dir():
        store = RunStore.open(source)
        best = store.best()
        if best is None:
            raise BadInput(f"{source}: the run has no passing iteration to export")
        return store.iter_dir(best.iteration) / "kernel.py", f"{source.name} iteration {best.iteration}"
    if not source.is_file():
        raise BadInput(f"{source}: neither a run folder nor a kernel file")
    return source, source.name


def c_name(text: str) -> str:
    return re.sub(r"\W", "_", text)


def export(source: Path, task: TaskSpec, out_dir: Path, shapes: list[dict[str, Any]] | None = None,
           build: bool = True) -> Exported:
    if task.dsl not in ("triton", "cute"):
        raise ExportRefused(f"{task.path.name}: dsl {task.dsl} is not exported (Triton and CuTe DSL only)")
    kernel, described = pick_kernel(source)
    shapes = shapes or task.shapes.bench or task.shapes.test
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "capture.json").unlink(missing_ok=True)
    if task.dsl == "cute":
        from harness.export.cute import export_cute

        return export_cute(kernel, described, task, shapes, out_dir, build)
    capture = run_capture(kernel, task, shapes, out_dir)
    names = [c_name(n) for n in task.outputs]
    variants = plan(capture, names)
    fn = f"kh_{c_name(task.name)}_{c_name(task.entry)}"
    sources = write_sources(out_dir, fn, task, described, capture, variants, names)
    done = Exported(out_dir, fn, variants, capture, sources, kernel)
    if build:
        done.built, done.build_note = build_objects(out_dir, fn, capture)
    return done


CAPTURE_FILE_BYTES = 512 << 20
"""The largest file the recording process may write (its logs included): an export's sources and objects are MBs."""


def _capture_limits() -> None:
    import resource

    from rungs.sandbox.pool import _set_limit

    _set_limit(resource.RLIMIT_FSIZE, CAPTURE_FILE_BYTES)
    _set_limit(resource.RLIMIT_CORE, 0)


def run_capture(kernel: Path, task: TaskSpec, shapes: list[dict[str, Any]], out_dir: Path,
                module: str = "harness.export.capture", extra_env: dict[str, str] | None = None,
                extra_job: dict[str, Any] | None = None) -> dict[str, Any]:
    """The recording process (`python -m module JOB.json`), in the candidates' sandbox (rungs/sandbox/bwrap.py) unless
    the user opted out: it runs the kernel file's code. It works in a folder of its own; what it writes is copied into
    out_dir."""
    import tempfile

    from rungs.sandbox import bwrap
    from rungs.sandbox.pool import _own, _tail, scrubbed_env

    with tempfile.TemporaryDirectory(prefix="harness-export-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        _own(work)
        # a copy the sandbox's uid may read (the user's folder may be private), as the ladder's jobs hold theirs
        copy = work / kernel.name
        shutil.copyfile(kernel, copy)
        file, _, fn = task.inputs.partition(":")
        job = {"kernel": str(copy), "entry": task.entry, "inputs_file": str(task.resolve(file)),
               "inputs_fn": fn, "out_dir": str(work), "target": target(), "shapes": shapes,
               "dtype": task.dtypes[0], "dist": task.distributions[0], "other_dist": task.distributions[-1],
               "deltas": list(DELTAS), **(extra_job or {})}
        (work / "job.json").write_text(json.dumps(job))
        argv = [sys.executable, "-m", module, str(work / "job.json")]
        seccomp = None
        if bwrap.unsandboxed():
            env = scrubbed_env(Path(tmp), interpret=False, extra=extra_env)
        else:
            bwrap.require()
            env = scrubbed_env(Path("/tmp"), interpret=False, extra=extra_env)  # the sandbox's private tmpfs
            readable = [task.resolve(file).parent, ROOT / "harness"]
            seccomp = bwrap.seccomp_file()
            argv = bwrap.command(argv, bwrap.Policy(writable=[work], readable=readable, chdir=work), seccomp_fd=seccomp)
        limit = max(300.0, 4 * task.timeout_s)
        # Its output goes to files outside its folder, each file it writes under a size limit: a candidate that
        # prints without end must not fill the harness's memory or the disk.
        out_log, err_log = Path(tmp) / "capture.out", Path(tmp) / "capture.err"
        try:
            with open(out_log, "wb") as out, open(err_log, "wb") as err:
                returncode = subprocess.run(argv, cwd=work, env=env, stdout=out, stderr=err, timeout=limit,
                                            stdin=subprocess.DEVNULL, preexec_fn=_capture_limits,
                                            pass_fds=() if seccomp is None else (seccomp,)).returncode
        except subprocess.TimeoutExpired:
            raise HarnessError(f"recording the launches took more than {limit:.0f} s") from None
        finally:
            if seccomp is not None:
                os.close(seccomp)
        stderr = _tail(err_log, 64 << 10)
        for path in work.iterdir():  # only plain files with plain names (harness/export/untrusted.py)
            if path.suffix in (".c", ".h", ".o", ".json", ".txt") and path != copy and copyable(path):
                shutil.copyfile(path, out_dir / ("capture-job.json" if path.name == "job.json" else path.name))
    result_path = out_dir / "capture.json"
    if not result_path.is_file():
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        raise HarnessError(f"the recording process died (exit {returncode}): {tail}")
    capture = json.loads(result_path.read_text(errors="replace"))
    if not isinstance(capture, dict):
        raise HarnessError("the recording process wrote a capture.json that is not an object")
    if capture.get("refusal"):
        raise ExportRefused(f"export refused: {capture['refusal']}")
    if capture.get("error"):
        raise HarnessError(f"the entry failed while its launches were recorded: {capture['error']} "
                           f"(traceback in {out_dir / 'capture-traceback.txt'})")
    check_capture(capture, out_dir)
    return capture


def target() -> str:
    """sm_90a unless a GPU says otherwise: what the H200 runs, and what the CPU build aims at."""
    from harness.export.capture import current_target

    return current_target() or "cuda:90:32"


def _render(name: str, context: dict[str, Any]) -> str:
    import jinja2

    from harness.export import flush
    from rungs.timing.devices import SPIN_CYCLES  # the harness's spin before each timed call

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    env.globals.update(flush_ptx=flush.c_string(), flush_kernel=flush.KERNEL, spin_kernel=flush.SPIN_KERNEL,
                       spin_cycles=SPIN_CYCLES)  # the test program's L2 flush and spin (the harness's timing)
    return env.get_template(name).render(**context)


def _shapes_text(shapes: list[dict[str, int]]) -> str:
    return "; ".join(", ".join(f"{k}={v}" for k, v in s.items()) for s in shapes)


def write_sources(out_dir: Path, fn: str, task: TaskSpec, described: str, capture: dict[str, Any],
                  variants: list[Variant], output_names: list[str]) -> list[str]:
    import triton

    first = capture["variants"][0]
    sizes = list(variants[0].shapes[0])
    tensors = [{"name": tensor_name("input", i, output_names)} for i in range(len(first["inputs"]))] + \
              [{"name": tensor_name("output", i, output_names)} for i in range(len(first["outputs"]))]
    rendered = []
    for v in variants:
        checks = sorted({c for l in v.launches for a in l.args for c in a.checks})
        exact = " || ".join("(" + " && ".join(f"s_{k} == {val}" for k, val in s.items()) + ")" for s in v.shapes)
        launches = [{"kernel": l.kernel, "func": l.func, "args": l.args, "threads": 32 * l.num_warps,
                     "shared": l.shared, "num_warps": l.num_warps, "grid": [g.c("s_") for g in l.grid],
                     "grid_text": "(" + ", ".join(g.text for g in l.grid) + ")",
                     "constexprs_text": ", ".join(f"{k}={val}" for k, val in l.constexprs.items()) or "no constexprs"}
                    for l in v.launches]
        rendered.append({"shapes": v.shapes, "shapes_text": _shapes_text(v.shapes), "fixed": v.fixed,
                         "checks": checks, "checks_text": ", ".join(re.sub(r"\bs_(\w+)", r"\1", c) for c in checks),
                         "near_text": _shapes_text(v.same_structure_at), "launches": launches,
                         # a fixed value holds at the exported shapes only; KH_ANY_SIZE cannot lift that
                         "exact": exact if v.fixed else f"KH_EXACT({exact})"})
    header, source_c, test = f"{fn}.h", f"{fn}.c", f"{fn}_test"
    kernel_sources = sorted(f for b in capture["builds"] for f in b["files"] if f.endswith(".c"))
    funcs = sorted({b["func"] for b in capture["builds"]})
    usage = f"{test} REPS {' '.join(sizes)} " + " ".join(f"{t['name']}.bin" for t in tensors[:len(first['inputs'])]) + \
        " " + " ".join(f"{t['name']}.bin BYTES" for t in tensors[len(first["inputs"]):])
    context = {"fn": fn, "task": task.name, "entry": task.entry, "source": described, "guard": f"{fn.upper()}_H",
               "tensors": tensors, "sizes": sizes, "variants": rendered, "header": header, "funcs": funcs,
               "inputs": [t["name"] for t in tensors[:len(first["inputs"])]],
               "outputs": [t["name"] for t in tensors[len(first["inputs"]):]], "test": test, "lib": fn,
               "sources": kernel_sources + [source_c], "source_c": source_c, "kernel_sources": kernel_sources,
               "triton": triton.__version__, "target": capture_target(out_dir), "usage": usage.strip(),
               "tensor_docs": [f"{t['name']}: {d['dtype']}[{', '.join(map(str, d['shape']))}]"
                               for t, d in zip(tensors, first["inputs"] + first["outputs"])]}
    (out_dir / header).write_text(_render("entry.h.j2", context))
    c_text = _render("entry.c.j2", context)
    # KH_EXACT(cond): the exported shapes only, unless the caller opts into other sizes (README says when that is safe)
    c_text = c_text.replace('#define KH_CDIV', '#ifdef KH_ANY_SIZE\n#define KH_EXACT(c) 1\n#else\n'
                            '#define KH_EXACT(c) (c)\n#endif\n#define KH_CDIV', 1)
    (out_dir / source_c).write_text(c_text)
    (out_dir / f"{test}.c").write_text(_render("test_main.c.j2", context))
    (out_dir / "Makefile").write_text(_render("Makefile.j2", context))
    lines = (out_dir / header).read_text().splitlines()
    context["prototype"] = next(line for line in lines if line.startswith("CUresult"))
    (out_dir / "README.md").write_text(_render("README.md.j2", context))
    return kernel_sources + [source_c]


def capture_target(out_dir: Path) -> str:
    return json.loads((out_dir / "capture-job.json").read_text())["target"]


def cuda_root() -> Path | None:
    """Where include/cuda.h is: CUDA_HOME, /usr/local/cuda, or the copy Triton ships (a machine with no toolkit)."""
    import triton

    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda", Path(triton.__file__).parent / "backends" / "nvidia"):
        if root and (Path(root) / "include" / "cuda.h").is_file():
            return Path(root)
    return None


def run_make(out_dir: Path, cuda: Path) -> None:
    """The export's own Makefile; its last error line is the one-line failure."""
    proc = subprocess.run(["make", f"CUDA={cuda}"], cwd=out_dir, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise HarnessError(f"make failed in {out_dir}: {tail}")


def build_objects(out_dir: Path, fn: str, capture: dict[str, Any]) -> tuple[list[str], str]:
    """`make` the objects, then check their symbols: the entry is defined, every kernel's loader and function are,
    and nothing is left undefined but the CUDA driver's and the C library's functions."""
    from harness.export.symbols import check_symbols

    cuda = cuda_root()
    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "cc")) is None:
        return [], "not built: no make or C compiler on this machine"
    if cuda is None:
        return [], "not built: no cuda.h found (set CUDA_HOME)"
    run_make(out_dir, cuda)
    objects = sorted(p.name for p in out_dir.glob("*.o"))
    problems = check_symbols(out_dir, fn, [b["func"] for b in capture["builds"]])
    if problems:
        raise HarnessError(f"symbol check failed in {out_dir}: {problems[0]}")
    return objects, f"built lib{fn}.a from {len(objects)} objects; symbols checked"


__all__ = ["EXIT_REFUSED", "ExportRefused", "Exported", "export", "parse_shape"]
