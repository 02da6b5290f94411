"""`harness export` for CuTe DSL tasks: what the entry's compiled functions are, written by their own `export_to_c`.

The recording (harness/export/cute_capture.py, in the sandbox) calls the entry at each export shape with launches
turned into records, and has each compiled function write its header and object. Here: the C entry that calls
those host entries in the recorded order with the recorded arguments (the caller's device pointers for the tensors,
the caller's stream, the numbers as recorded), one branch per exported shape; the Makefile linking them with the
CuTe DSL runtime; the test program and README; then `make` and the symbol check.

`cute.compile` specializes on the tensors' layouts (a from_dlpack tensor's shape and strides are compiled in unless
marked dynamic) and on every Constexpr, so each exported shape is its own branch and no other shape is accepted.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from rungs.core.errors import HarnessError
from harness.export import (ExportRefused, Exported, _render, _shapes_text, c_name, cuda_root, run_capture,
                            run_make, target)
from harness.export.plan import Launch, Variant, int_sizes, tensor_name
from harness.export.symbols import link_problems
from rungs.core.spec import TaskSpec

RUNTIME_ARCHIVE = "libcuda_dialect_runtime_static.a"
ALLOWED_UNDEFINED = re.compile(r"^(cuda[A-Z]\w*|cu[A-Z]\w*|_GLOBAL_OFFSET_TABLE_|abort|malloc|free|calloc|realloc"
                               r"|printf|fprintf|snprintf|puts|stderr|strlen|str[a-z]+|mem[a-z]+|__stack_chk_fail"
                               r"|__(?:v?s?n?f?printf|mem[a-z]+|str[a-z]+)_chk)$")
"""What the entry, the exported objects and the CuTe DSL runtime archive may leave to the program: the CUDA
runtime (cudart, linked by the Makefile), the driver, and the C library (with glibc's fortified variants, which a
compiler that defines _FORTIFY_SOURCE calls: `__printf_chk` on the H200's image, 2026-12-02)."""


def runtime_dir() -> Path | None:
    """The installed nvidia-cutlass-dsl's folder with lib/libcuda_dialect_runtime_static.a and include/ (cu12/ or
    cu13/, whichever libs wheel is installed)."""
    try:
        from cutlass.runtime import find_runtime_libraries

        libs = find_runtime_libraries(enable_tvm_ffi=False)
    except Exception:  # noqa: BLE001 - no or a broken nvidia-cutlass-dsl: the build step says so
        return None
    for lib in libs:
        root = Path(lib).parent.parent
        if (root / "lib" / RUNTIME_ARCHIVE).is_file():
            return root
    return None


def cudart_link(cuda: Path | None) -> str | None:
    """How the test program links the CUDA runtime that the exported objects call: the toolkit's static cudart, or
    the libcudart.so the pip wheels ship (a GPU machine with a driver but no toolkit); None: neither is here."""
    if cuda is not None and (cuda / "lib64" / "libcudart_static.a").is_file():
        return f"{cuda / 'lib64' / 'libcudart_static.a'} -lpthread -ldl -lrt"
    try:
        import nvidia.cuda_runtime as pip_cudart  # type: ignore[import-not-found]

        for lib in sorted(Path(next(iter(pip_cudart.__path__))).glob("lib/libcudart.so.*")):
            return f"-L{lib.parent} -l:{lib.name} -Wl,-rpath,{lib.parent}"
    except ImportError:
        pass
    return None


def export_cute(kernel: Path, described: str, task: TaskSpec, shapes: list[dict[str, Any]], out_dir: Path,
                build: bool) -> Exported:
    from rungs.backends.cute import CuteBackend
    from harness.export.cute_capture import arch

    fn = f"kh_{c_name(task.name)}_{c_name(task.entry)}"
    # the recording compiles and never launches, on a GPU machine too: the arch is named, not asked of a driver
    env = {**CuteBackend().worker_env("cpu"), "CUTE_DSL_ARCH": arch(target())}
    for old in out_dir.glob(f"{fn}_k*.[ho]"):  # a previous export's objects must not be linked with this one's
        old.unlink()
    capture = run_capture(kernel, task, shapes, out_dir, module="harness.export.cute_capture", extra_env=env,
                          extra_job={"prefix": fn})
    names = [c_name(n) for n in task.outputs]
    variants = plan_cute(capture)
    sources = write_sources(out_dir, fn, task, described, capture, names)
    done = Exported(out_dir, fn, variants, capture, sources, kernel)
    if build:
        done.built, done.build_note = build_objects(out_dir, fn, capture)
    return done


def plan_cute(capture: dict[str, Any]) -> list[Variant]:
    """One variant per exported shape: its compiled calls, everything fixed at that shape. The C entry takes the
    integer sizes only, so two shapes that differ in another value (a `causal` flag) cannot both be branches."""
    variants: list[Variant] = []
    seen: dict[tuple[tuple[str, int], ...], dict[str, Any]] = {}
    for v in capture["variants"]:
        key = tuple(int_sizes(v["shape"]).items())
        if key in seen and seen[key] != v["shape"]:
            raise ExportRefused(f"export refused: shapes {_shapes_text([seen[key]])} and {_shapes_text([v['shape']])} "
                                "differ only in values the C entry does not take (its parameters are the integer "
                                "sizes): export them into separate folders")
        seen[key] = v["shape"]
        launches = [Launch(r["kernel"], capture["builds"][r["build"]]["func"], [], [], 0, 0, {})
                    for r in v["launches"]]
        variants.append(Variant([int_sizes(v["shape"])], launches, ["layouts and constexprs compiled in"], []))
    return variants


def _argument(build: dict[str, Any], i: int, p: dict[str, Any], output_names: list[str]) -> dict[str, Any]:
    """The C declaration of one host-entry argument and the expression passed for it."""
    var = f"a{i}"
    if p["kind"] == "tensor":
        ptr = tensor_name(p["role"], p["index"], output_names)
        fields = [f".data = (void *)(uintptr_t){ptr}"]
        if p["dynamic_shapes"]:
            fields.append(".dynamic_shapes = {" + ", ".join(map(str, p["dynamic_shapes"])) + "}")
        if p["dynamic_strides"]:
            fields.append(".dynamic_strides = {" + ", ".join(map(str, p["dynamic_strides"])) + "}")
        return {"decl": f"{build['func']}_Tensor_{p['name']}_t {var} = {{ {', '.join(fields)} }};", "pass": f"&{var}",
                "check": f"{ptr} % {p['align']} == 0" if p["align"] > 1 else None}
    if p["kind"] == "stream":
        return {"decl": None, "pass": "(cudaStream_t)stream", "check": None}
    return {"decl": f"{p['ctype']} {var} = {p['value']};", "pass": var, "check": None}


def write_sources(out_dir: Path, fn: str, task: TaskSpec, described: str, capture: dict[str, Any],
                  output_names: list[str]) -> list[str]:
    from rungs.backends.cute import CuteBackend

    first = capture["variants"][0]
    builds = capture["builds"]
    sizes = list(int_sizes(first["shape"]))
    inputs = [tensor_name("input", i, output_names) for i in range(len(first["inputs"]))]
    outputs = [tensor_name("output", i, output_names) for i in range(len(first["outputs"]))]
    tensors = [{"name": n} for n in inputs + outputs]
    rendered = []
    for v in capture["variants"]:
        shape = int_sizes(v["shape"])
        launches = []
        for r in v["launches"]:
            build = builds[r["build"]]
            args = [_argument(build, i, p, output_names) for i, p in enumerate(r["params"])]
            launches.append({"kernel": r["kernel"], "func": build["func"], "wrapper": build["wrapper"], "args": args})
        checks = sorted({a["check"] for l in launches for a in l["args"] if a["check"]})
        rendered.append({"shapes_text": _shapes_text([v["shape"]]), "launches": launches, "checks": checks,
                         "checks_text": ", ".join(checks) or "none",
                         "exact": " && ".join(f"s_{k} == {val}" for k, val in shape.items()) or "1",
                         "calls_text": ", then ".join(f"`{l['kernel']}`" for l in launches)})
    header, source_c, test = f"{fn}.h", f"{fn}.c", f"{fn}_test"
    root = runtime_dir()
    cuda = cuda_root()
    usage = f"{test} REPS {' '.join(sizes)} " + " ".join(f"{n}.bin" for n in inputs) + " " + \
        " ".join(f"{n}.bin BYTES" for n in outputs)
    context = {"fn": fn, "task": task.name, "entry": task.entry, "source": described, "guard": f"{fn.upper()}_H",
               "tensors": tensors, "sizes": sizes, "variants": rendered, "header": header, "builds": builds,
               "inputs": inputs, "outputs": outputs, "test": test, "lib": fn, "source_c": source_c,
               "extra_decls": [f"void {fn}_unload(void);", f"int32_t {fn}_last_error(void);"],
               "runtime_lib": str(root / "lib") if root else "CUTE_DSL_LIB_NOT_FOUND",
               "runtime_include": str(root / "include") if root else "CUTE_DSL_INCLUDE_NOT_FOUND",
               "cudart": cudart_link(cuda) or "-lcudart", "cutlass": CuteBackend().version(),
               "target": capture_arch(out_dir), "usage": usage.strip(),
               "tensor_docs": [f"{t['name']}: {d['dtype']}[{', '.join(map(str, d['shape']))}]"
                               for t, d in zip(tensors, first["inputs"] + first["outputs"])]}
    (out_dir / header).write_text(_render("entry.h.j2", context))
    (out_dir / source_c).write_text(_render("cute_entry.c.j2", context))
    (out_dir / f"{test}.c").write_text(_render("test_main.c.j2", context))
    (out_dir / "Makefile").write_text(_render("cute_Makefile.j2", context))
    lines = (out_dir / header).read_text().splitlines()
    context["prototype"] = next(line for line in lines if line.startswith("CUresult"))
    (out_dir / "README.md").write_text(_render("cute_README.md.j2", context))
    return [source_c] + [b["object"] for b in builds]


def capture_arch(out_dir: Path) -> str:
    from harness.export import capture_target
    from harness.export.cute_capture import arch

    return arch(capture_target(out_dir))


def build_objects(out_dir: Path, fn: str, capture: dict[str, Any]) -> tuple[list[str], str]:
    """`make` the entry's object and the library, then check the symbols of the entry, the exported objects and the
    CuTe DSL runtime archive together: the entry is defined, each host entry and module loader it calls is, and what
    is left undefined is the CUDA runtime's, the driver's or the C library's."""
    cuda = cuda_root()
    if shutil.which("make") is None or shutil.which("cc") is None:
        return [], "not built: no make or C compiler on this machine"
    if cuda is None or not (cuda / "include" / "cuda_runtime.h").is_file():
        return [], "not built: no cuda_runtime.h found (export_to_c's headers need the CUDA toolkit; set CUDA_HOME)"
    if runtime_dir() is None:
        return [], f"not built: no {RUNTIME_ARCHIVE} in the installed nvidia-cutlass-dsl"
    if cudart_link(cuda) is None:
        return [], "not built: no CUDA runtime to link (libcudart_static.a of the toolkit or a libcudart.so wheel)"
    run_make(out_dir, cuda)
    problems = check_symbols(out_dir, fn, capture["builds"])
    if problems:
        raise HarnessError(f"symbol check failed in {out_dir}: {problems[0]}")
    objects = sorted(p.name for p in out_dir.glob("*.o") if not p.name.endswith("_test.o"))
    return objects, (f"built lib{fn}.a from {len(objects)} objects and lib{fn}.so (linked with {RUNTIME_ARCHIVE} and "
                     "the CUDA runtime, nothing undefined but the C library); symbols checked")


def check_symbols(out_dir: Path, fn: str, builds: list[dict[str, Any]]) -> list[str]:
    root = runtime_dir()
    archives = [out_dir / f"lib{fn}.a"] + ([root / "lib" / RUNTIME_ARCHIVE] if root else [])
    wanted = [fn, f"{fn}_unload"] + [name for b in builds for name in
                                     (f"_mlir_{b['func']}_cuda_init", f"_mlir_{b['func']}_cuda_load_to_device",
                                      b["host_entry"] or f"{b['wrapper']}'s host entry")]
    return link_problems(archives, wanted, ALLOWED_UNDEFINED)


__all__ = ["export_cute"]
