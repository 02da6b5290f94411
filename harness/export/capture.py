"""The child process of `harness export`: `python -m harness.export.capture JOB.json`.

It imports the candidate, calls its entry on inputs the task's input maker draws, and records every Triton launch
the entry asks for, in order (kernel, bound arguments, constexprs, grid, warps, stages), without running any:
Triton's CUDA driver is replaced by the compile-only stand-in the worker's compile phase uses
(rungs/worker/compile_phase.py), so this works on a machine with no GPU. The entry runs under the worker's torch-op
trace with an allow-list of allocations and views: any other torch work between launches (a fill, a copy, a host read)
makes the launch sequence something a C function of device pointers cannot replay, and is refused.

Then each distinct launch is compiled ahead of time with Triton's own tool (`triton.tools.compile.compile_kernel`,
the same function in Triton 3.6 and 3.9) into a C source and header that embed the cubin. Everything the parent
needs is written to capture.json; a refusal is one line in it, never a traceback.

Candidate code runs here: the parent gives this process its own folder and a time limit.
"""
from __future__ import annotations

import json
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from rungs.worker import autotune
from rungs.worker.hot_path import TorchComputeRefused, host_mode, trace_mode
from rungs.worker.calls import as_outputs
from rungs.worker.launch_gate import base_name
from rungs.core.imports import import_file
from rungs.backends.triton_worker import _AotDriver
from rungs.worker.candidate import load_candidate

EXPORT_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided
view _unsafe_view reshape _reshape_alias as_strided transpose t permute expand expand_as unsqueeze squeeze alias
detach view_as unflatten flatten movedim contiguous sym_size sym_stride sym_numel sym_storage_offset is_same_size
""".split())
"""aten ops the entry may make around its launches: allocations and views, which the C caller's device pointers
stand for. Fills, copies and arithmetic would be work the C function does not do."""
OPTIONS = {"num_warps": 4, "num_stages": 3}
"""Launch options the export carries, with Triton's CUDA defaults; any other option given is refused."""
NEUTRAL_OPTIONS = {"num_ctas": 1, "maxnreg": None, "debug": None, "launch_cooperative_grid": False,
                   "launch_pdl": False, "enable_fp_fusion": None}
"""Options the export can ignore at these values (they are Triton's defaults)."""
TORCH_DTYPES = {"float32": "float32", "tf32": "float32", "float16": "float16", "bfloat16": "bfloat16",
                "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}


class Refused(Exception):
    """The entry cannot be exported: the message is the one line the user sees."""


class StandInDriver(_AotDriver):
    """The worker's compile-only driver, plus the C type map Triton's AOT compiler asks the driver for."""

    def map_python_to_cpp_type(self, ty: str) -> str:
        from triton.backends.nvidia.driver import ty_to_cpp

        return ty_to_cpp(ty)


class Recorder:
    """Replaces JITFunction.run: records each launch; compiles it (a cached compile-only build) when asked to."""

    label = "Triton kernel"
    """What this recorder records, for the refusal of an entry that launched none."""

    def __init__(self) -> None:
        self.launches: list[dict[str, Any]] = []
        self.tensors: dict[int, tuple[str, int]] = {}
        """data_ptr -> ("input", i): what a tensor argument stands for; outputs are resolved after the call."""
        self.compile = False
        self.pending: list[tuple[dict[str, Any], int]] = []
        """(parameter record, data_ptr) of tensors not yet known to be inputs: resolved against the outputs."""

    def install(self) -> None:
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction

        original = JITFunction.run
        recorder = self

        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            record = recorder.record(self, args, kwargs, grid)
            if not recorder.compile:
                return None
            kernel = original(self, *args, grid=grid, warmup=True, **kwargs)
            recorder.typed(record, kernel)
            return kernel

        def autotuned(self: Any, *args: Any, **kwargs: Any) -> Any:
            raise Refused(f"kernel {base_name(self)} is autotuned: the config it picks is chosen by timing at "
                          "run time; pin the chosen triton.Config (autotune with one config) and export again")

        JITFunction.run = run
        Autotuner.run = autotuned

    def record(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any) -> dict[str, Any]:
        import torch

        names = list(fn.arg_names)
        bound = dict(zip(names, args))
        options = {}
        for key, value in kwargs.items():
            (bound if key in names else options)[key] = value
        for p in fn.params:
            if p.name not in bound and p._param.default is not p._param.empty:
                bound[p.name] = p._param.default
        for key, value in options.items():
            if key not in OPTIONS and NEUTRAL_OPTIONS.get(key, object()) != value:
                raise Refused(f"kernel {fn.__name__}: launch option {key}={value!r} is not carried by the export")
        if callable(grid):
            grid = grid(bound)
        grid = tuple(int(g) for g in (tuple(grid) + (1, 1))[:3])
        params = []
        for p in fn.params:
            value = bound.get(p.name)
            entry: dict[str, Any] = {"name": p.name, "constexpr": bool(p.is_constexpr)}
            if isinstance(value, torch.Tensor):
                entry["kind"] = "tensor"
                entry["dtype"] = str(value.dtype).replace("torch.", "")
                role = self.tensors.get(value.data_ptr())
                if role is None:
                    self.pending.append((entry, value.data_ptr()))
                else:
                    entry["role"], entry["index"] = role
            elif isinstance(value, bool) or value is None:
                entry["kind"], entry["value"] = "bool", value
            elif isinstance(value, int):
                entry["kind"], entry["value"] = "int", value
            elif isinstance(value, float):
                entry["kind"], entry["value"] = "float", value
            elif isinstance(getattr(value, "value", None), (bool, int, float)):  # tl.constexpr(...)
                entry["kind"], entry["value"] = type(value.value).__name__, value.value
            else:
                raise Refused(f"kernel {fn.__name__}: argument {p.name} is a {type(value).__name__}, which the C "
                              "export cannot pass (tensors, integers, floats and booleans only)")
            params.append(entry)
        module = sys.modules.get(fn.fn.__module__)
        attr = next((k for k, v in vars(module).items() if v is fn), None) if module else None
        record = {"kernel": fn.__name__, "attr": attr, "file": getattr(module, "__file__", None), "params": params,
                  "grid": list(grid), **{k: options.get(k, d) for k, d in OPTIONS.items()}}
        self.launches.append(record)
        return record

    @staticmethod
    def typed(record: dict[str, Any], kernel: Any) -> None:
        """The types and hints Triton's JIT specialized this launch on: what the AOT build must reproduce."""
        src = kernel.src
        constants = {k[0] if isinstance(k, tuple) else k: v for k, v in src.constants.items()}
        for i, (p, ty) in enumerate(zip(record["params"], src.signature.values())):
            divisible = any(a == ["tt.divisibility", 16] for a in src.attrs.get((i,), []))
            p["type"] = ty
            p["hint"] = 1 if (i in constants and not p["constexpr"]) else (16 if divisible else None)
        meta = kernel.metadata
        record["global_scratch"] = getattr(meta, "global_scratch_size", 0) or 0
        record["profile_scratch"] = getattr(meta, "profile_scratch_size", 0) or 0

    def resolve_outputs(self, outputs: list[Any]) -> None:
        by_ptr = {o.data_ptr(): i for i, o in enumerate(outputs)}
        for entry, ptr in self.pending:
            if ptr not in by_ptr:
                raise Refused(f"a launch of this entry passes a tensor ({entry['name']}) that is neither an input nor "
                              "an output, nor starts where one does (a scratch buffer or an offset view): the C "
                              "export takes only the caller's input and output pointers")
            entry["role"], entry["index"] = "output", by_ptr[ptr]
        self.pending = []


def call(fn: Any, make: Any, shape: dict[str, Any], dtype: str, seed: int, dist: str, recorder: Any,
         keep: bool) -> dict[str, Any]:
    """One call of the entry on fresh inputs: its launches, and the inputs' and outputs' dtypes and shapes. The
    recorder (Triton's Recorder, or harness/export/cute_capture's) has `launches`, `tensors`, `pending`, `label` and
    `resolve_outputs`."""
    import torch

    inputs = list(make(shape, getattr(torch, TORCH_DTYPES[dtype]), seed, dist))
    recorder.launches, recorder.pending = [], []
    recorder.tensors = {v.data_ptr(): ("input", i) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)}
    refused: list[str] = []
    try:
        with torch.no_grad(), trace_mode(EXPORT_OPS, refused), host_mode(refused):
            outputs = as_outputs(fn(*inputs))
    except TorchComputeRefused:
        raise Refused(f"the entry does torch work besides allocations and views around its launches ({refused[0]}):"
                      " a C function of device pointers cannot replay it") from None
    recorder.resolve_outputs(outputs)
    if not recorder.launches:
        raise Refused(f"the entry launched no {recorder.label} at this shape: nothing to export")
    result: dict[str, Any] = {"shape": shape, "launches": recorder.launches,
                              "outputs": [_tensor(o) for o in outputs]}
    if keep:
        result["inputs"] = [_tensor(v) for v in inputs]
        if any(not v.is_contiguous() for v in inputs + outputs if isinstance(v, torch.Tensor)):
            raise Refused("an input or output is not contiguous: the C export assumes dense row-major tensors")
    return result


def _tensor(t: Any) -> dict[str, Any]:
    import torch

    if not isinstance(t, torch.Tensor):
        raise Refused(f"an input or output is a {type(t).__name__}: the C export passes tensors only")
    return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "bytes": t.numel() * t.element_size()}


def signature_of(record: dict[str, Any]) -> str:
    """The --signature string of Triton's AOT compiler for one recorded launch."""
    parts = []
    for p in record["params"]:
        if p["constexpr"]:
            value = p["value"]
            parts.append(str(int(value)) if isinstance(value, bool) else str(value))  # the tool parses numbers only
        elif p["hint"] == 1:
            parts.append(f"{p['type']}:1")
        else:
            parts.append(p["type"] + (":16" if p["hint"] == 16 else ""))
    return ", ".join(parts)


def current_target() -> str | None:
    """This GPU's target in the compile tool's notation (`cuda:90:32`), None without one."""
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"cuda:{major * 10 + minor}:32"
    except (ImportError, RuntimeError):
        pass
    return None


class TargetText(str):
    """`cuda:90:32` whose parts come out of `split` as the compile tool's GPUTarget wants them: the tool passes them
    on as they come, and Triton 3.6 then compares the architecture, still text, with numbers (TypeError in
    get_ptxas; seen on the H200)."""

    def split(self, sep: str | None = None, maxsplit: int = -1) -> list:  # type: ignore[override]
        return [int(p) if p.isdigit() else p for p in str.split(self, sep, maxsplit)]


def aot_compile(records: list[dict[str, Any]], out_dir: Path, target: str) -> list[dict[str, Any]]:
    """Compile each distinct launch once with triton.tools.compile; returns one entry per distinct kernel build."""
    from triton.tools.compile import CompileArgs, compile_kernel

    tool_target = TargetText(target)
    builds: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in records:
        if record["attr"] is None or record["file"] is None:
            raise Refused(f"kernel {record['kernel']} is not a module-level name of the kernel file: Triton's AOT "
                          "compiler loads kernels by name")
        for scratch in ("global", "profile"):
            if record[f"{scratch}_scratch"]:
                raise Refused(f"kernel {record['kernel']} needs {scratch} scratch memory "
                              f"({record[f'{scratch}_scratch']} bytes): Triton's AOT compiler refuses such kernels")
        sig = signature_of(record)
        key = (record["file"], record["attr"], sig, record["num_warps"], record["num_stages"])
        if key not in builds:
            stem = f"{record['kernel']}_{len(builds)}"
            args = CompileArgs(path=record["file"], kernel_name=record["attr"], signature=sig,
                               grid=",".join(str(g) for g in record["grid"]), target=tool_target,
                               num_warps=record["num_warps"], num_stages=record["num_stages"], out_name=stem,
                               out_path=out_dir / stem)
            try:
                func_name, files = compile_kernel(args)
            except (RuntimeError, AssertionError) as exc:
                raise Refused(f"Triton's AOT compiler refused kernel {record['kernel']}: {exc}") from None
            source = next(f for f in files if f.suffix == ".c").read_text()
            shared = re.search(r"int shared = (\d+);", source)
            builds[key] = {"func": func_name, "files": [f.name for f in files], "signature": sig,
                           "shared": int(shared.group(1)) if shared else 0, "kernel": record["kernel"]}
        record["build"] = builds[key]["func"]
    return list(builds.values())


def main(job_path: Path, run: Callable[[dict[str, Any], Path], dict[str, Any]] | None = None) -> int:
    """Record with `run` (Triton's by default; harness/export/cute_capture passes its own)."""
    job = json.loads(job_path.read_text())
    out = Path(job["out_dir"])
    result: dict[str, Any] = {"refusal": None}
    try:
        result.update((run or record_triton)(job, out))
    except Refused as exc:
        result["refusal"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - the candidate's own code failed: one line for the parent
        (out / "capture-traceback.txt").write_text(traceback.format_exc())
        result["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
    (out / "capture.json").write_text(json.dumps(result, default=str))
    sys.stdout.flush()
    os._exit(0)  # candidate threads or atexit hooks must not change the outcome


def record_triton(job: dict[str, Any], out: Path) -> dict[str, Any]:
    from triton.runtime import driver

    os.environ.pop("TRITON_INTERPRET", None)
    driver.set_active(StandInDriver())
    recorder = Recorder()
    recorder.install()
    fn = autotune.bound(load_candidate(job["kernel"], job["entry"]))  # a declared CONFIGS: its default, CONFIGS[0]
    make = getattr(import_file(Path(job["inputs_file"])), job["inputs_fn"])
    variants, probes = [], []
    for shape in job["shapes"]:
        recorder.compile = True
        base = call(fn, make, shape, job["dtype"], 0, job["dist"], recorder, keep=True)
        recorder.compile = False
        other = call(fn, make, shape, job["dtype"], 1, job["other_dist"], recorder, keep=False)
        if strip(other["launches"]) != strip(base["launches"]):
            raise Refused(f"the launch sequence at {shape} depends on the input data (two draws of the same shape "
                          "launched different kernels, arguments or grids): a fixed C launch sequence would be wrong")
        variants.append(base)
        for name, value in shape.items():  # neighbours: what the grids and integer arguments are functions of
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            for near_value in nearby(value, job["deltas"]):
                near = {**shape, name: near_value}
                probes.append({"of": len(variants) - 1,
                               **call(fn, make, near, job["dtype"], 0, job["dist"], recorder, keep=False)})
    builds = aot_compile([r for v in variants for r in v["launches"]], out, job["target"])
    return {"variants": variants, "probes": probes, "builds": builds}


def nearby(value: int, deltas: list[int]) -> list[int]:
    """Sizes near `value`: a few elements less (divisibility changes), and a half and three quarters of it rounded
    to 64 (blocks of up to 256 then change their count, so a grid over blocks is told apart from one over elements)."""
    far = [value * k // 4 // 64 * 64 for k in (2, 3)] if value >= 256 else []
    return sorted({v for v in [value + d for d in deltas] + far if 1 <= v != value}, reverse=True)


def strip(launches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A launch sequence without what only the compiled build adds (types, hints, scratch sizes)."""
    keep = ("kernel", "attr", "grid", "num_warps", "num_stages")
    return [{**{k: r[k] for k in keep}, "params": [{k: v for k, v in p.items() if k not in ("type", "hint")}
                                                   for p in r["params"]]} for r in launches]


if __name__ == "__main__":
    main(Path(sys.argv[1]))
