"""The CuTe DSL child process of `harness export`: `python -m harness.export.cute_capture JOB.json`.

It imports the candidate, calls its entry on inputs the task's input maker draws, and records every call of a
compiled CuTe DSL function the entry makes, in order, with the arguments it was called with, launching none: the
CuTe backend's compile capture (rungs/backends/cute_worker.py) compiles instead of launching, and on a machine with
no GPU answers the entry's stream and SM-count questions as the H200 would. The entry runs under the same torch-op
trace as the Triton recording (harness/export/capture.py): torch work between the calls besides allocations and
views is refused, and so is a launch sequence that differs between two draws of the same shape.

Then each compiled function the entry called is written by its own `export_to_c` (nvidia-cutlass-dsl): a header
with the host entry's argument structs and module loader, and an object holding the host entry and the fatbin.
Everything the parent needs is written to capture.json; a refusal is one line in it, never a traceback.

Candidate code runs here: the parent gives this process its own folder and a time limit.
"""
from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from typing import Any, Callable

from rungs.worker import autotune, launch_gate
from rungs.core.imports import import_file
from rungs.worker.compile_phase import Launches
from rungs.worker.candidate import load_candidate
from harness.export.capture import Recorder, Refused, call, main

C_NUMERIC = {"Int8": "int8_t", "Int16": "int16_t", "Int32": "int32_t", "Int64": "int64_t", "Uint8": "uint8_t",
             "Uint16": "uint16_t", "Uint32": "uint32_t", "Uint64": "uint64_t", "Boolean": "uint8_t",
             "Float32": "float", "TFloat32": "float", "Float64": "double"}
"""Numeric parameters the C entry passes as literals (export_to_c's types for them); half types are refused."""


class CuteRecorder(Launches):
    """The compile capture's `launches` (rungs.worker.compile_phase.Launches), told of each compiled call through `on_launch`."""

    label = "compiled CuTe DSL function"

    def __init__(self) -> None:
        super().__init__(None)
        self.launches: list[dict[str, Any]] = []
        self.tensors: dict[int, tuple[str, int]] = {}
        self.pending: list[tuple[dict[str, Any], int]] = []
        self.functions: list[Any] = []
        """Each distinct compiled function called, in first-call order: what export_to_c writes."""
        self.keys: list[tuple[str, str]] = []
        """_identity() of each of `functions`, in the same order."""

    resolve_outputs = Recorder.resolve_outputs

    def on_launch(self, compiled: Any, runtime_args: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """One call of a compiled function: `args` are its runtime arguments (a call of what cute.compile returned)
        or the @cute.jit function's own (a direct call, constexprs included)."""
        execution = compiled.execution_args
        if not runtime_args:  # the DSL's own keywords (compile_only, ...) are not the function's
            kwargs = {k: v for k, v in kwargs.items() if k in execution.original_signature.parameters}
            values = list(execution.get_rectified_args_from_original_args(args, kwargs))  # constexprs dropped
        else:
            values = execution.get_rectified_args(tuple(args), dict(kwargs))
        key = _identity(compiled)
        if key not in self.keys:
            self.keys.append(key)
            self.functions.append(compiled)
        index = self.keys.index(key)
        name = getattr(compiled, "__name__", None) or compiled.function_name
        params = []
        for param, value in zip(execution.signature.parameters.values(), values):
            if value is None:
                continue  # an optional argument left out: export_to_c's wrapper has no parameter for it
            params.append(self.describe(name, param, value))
        self.launches.append({"kernel": name, "build": index, "params": params})

    def describe(self, fn: str, param: Any, value: Any) -> dict[str, Any]:
        import cuda.bindings.driver as cuda
        from cutlass.cute.typing import NumericMeta

        entry: dict[str, Any] = {"name": param.name}
        annotation = param.annotation
        if hasattr(value, "dynamic_shapes_mask") and hasattr(value, "data_ptr"):  # cute.runtime's tensor
            shape, stride = list(value.shape), list(value.stride)
            width = value.element_type.width // 8
            entry.update(kind="tensor", align=int(value._assumed_align or width),
                         dynamic_shapes=[int(s) for s, d in zip(shape, value.dynamic_shapes_mask) if d],
                         dynamic_strides=[int(s) for s, d in zip(stride, value.dynamic_strides_mask) if d])
            role = self.tensors.get(value.data_ptr)
            if role is None:
                self.pending.append((entry, value.data_ptr))
            else:
                entry["role"], entry["index"] = role
        elif isinstance(annotation, type) and issubclass(annotation, cuda.CUstream):
            entry["kind"] = "stream"
        elif isinstance(annotation, NumericMeta) and annotation.__name__ in C_NUMERIC:
            plain = getattr(value, "value", value)
            if not isinstance(plain, (bool, int, float)):
                raise Refused(f"{fn}: argument {param.name} is a {type(value).__name__} computed at run time, which "
                              "the C entry cannot rebuild")
            ctype = C_NUMERIC[annotation.__name__]
            entry.update(kind="number", ctype=ctype,
                         value=repr(float(plain)) if ctype in ("float", "double") else str(int(plain)))
        else:
            raise Refused(f"{fn}: argument {param.name} ({type(value).__name__}) is not a tensor, a stream or a plain "
                          "number: the C entry cannot build it for export_to_c's host entry")
        return entry


def _identity(compiled: Any) -> tuple[str, str]:
    """What makes two compiled functions the same export: an entry that calls cute.compile at every call gets a new
    object each time for the same specialization (its mangled name and its cubin, which the capture keeps)."""
    binary = getattr(compiled, "__cubin__", None) or getattr(compiled, "__ptx__", None) or b""
    data = binary if isinstance(binary, bytes) else str(binary).encode()
    return compiled.function_name, hashlib.sha256(data).hexdigest()


def arch(target: str) -> str:
    """cuda:90:32 -> sm_90a: what the DSL compiles for (the arch-specific features the H200's kernels use)."""
    cc = int(target.split(":")[1])
    return f"sm_{cc}a" if cc >= 90 else f"sm_{cc}"


def export_functions(functions: list[Any], out: Path, prefix: str) -> list[dict[str, Any]]:
    """export_to_c for each compiled function: PREFIX_kN.h and PREFIX_kN.o, the symbols prefixed PREFIX_kN."""
    builds = []
    for i, compiled in enumerate(functions):
        name = f"{prefix}_k{i}"
        try:
            compiled.export_to_c(str(out), name, name)
        except Exception as exc:  # noqa: BLE001 - the DSL's own refusal (an argument type it cannot write in C)
            raise Refused(f"export_to_c refused {compiled.function_name}: {str(exc).splitlines()[0][:300]}") from None
        header = (out / f"{name}.h").read_text()
        wrapper = f"cute_dsl_{name}_wrapper"
        if wrapper not in header or f"{name}_Kernel_Module_Load" not in header:
            raise Refused(f"export_to_c's header {name}.h has no {wrapper} or module loader: this nvidia-cutlass-dsl "
                          "writes headers the export does not know")
        entry = re.search(rf"void (_mlir_{name}__mlir_ciface_\w+)\(", header)
        builds.append({"func": name, "header": f"{name}.h", "object": f"{name}.o", "wrapper": wrapper,
                       "host_entry": entry.group(1) if entry else None,
                       "function_name": compiled.function_name, "kernels": sorted(compiled.kernel_info or {})})
    return builds


def dsl_side(owner: Any, name: str) -> Callable[[], None]:
    """owner.name runs as the DSL's, not the candidate's: from_dlpack reads the tensor's __dlpack__ and cute.compile
    converts torch arguments, host reads the trace would otherwise refuse (the launch gate does the same)."""
    original = getattr(owner, name)

    def dsl_call(*args: Any, **kwargs: Any) -> Any:
        with launch_gate.gate().inside():
            return original(*args, **kwargs)
    setattr(owner, name, dsl_call)
    return lambda: setattr(owner, name, original)


def run(job: dict[str, Any], out: Path) -> dict[str, Any]:
    import cutlass.cute.runtime as runtime
    from cutlass.base_dsl.compiler import CompileCallable

    from rungs.backends.cute_worker import WORKER

    recorder = CuteRecorder()
    restore = WORKER.install_compile_capture(False, recorder)  # no launches; the H200's answers (aot_device)
    # before the candidate imports from_dlpack by name
    undo = [dsl_side(runtime, "from_dlpack"), dsl_side(CompileCallable, "_compile")]
    try:
        fn = autotune.bound(load_candidate(job["kernel"], job["entry"]))
        make = getattr(import_file(Path(job["inputs_file"])), job["inputs_fn"])
        variants = []
        for shape in job["shapes"]:
            base = call(fn, make, shape, job["dtype"], 0, job["dist"], recorder, keep=True)
            other = call(fn, make, shape, job["dtype"], 1, job["other_dist"], recorder, keep=False)
            if other["launches"] != base["launches"]:
                raise Refused(f"the launch sequence at {shape} depends on the input data (two draws of the same shape "
                              "called different compiled functions or passed different arguments): a fixed C launch "
                              "sequence would be wrong")
            variants.append(base)
    finally:
        for u in undo:
            u()
        restore()
    builds = export_functions(recorder.functions, out, job["prefix"])
    return {"variants": variants, "probes": [], "builds": builds}


if __name__ == "__main__":
    main(Path(sys.argv[1]), run)
