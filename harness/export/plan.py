"""From capture.json to what the C entry does: variants (one per distinct launch sequence among the exported
shapes), each launch's grid and integer arguments as expressions of the sizes, and the checks that keep a caller
inside what the kernels were compiled for (divisibility hints, pointer alignment, the exported shapes)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.export.derive import Expr, Sizes, derive, divisors_of

C_TYPES = {"i1": "int8_t", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t", "u1": "uint8_t",
           "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t", "fp32": "float", "f32": "float",
           "fp64": "double"}
"""Kernel parameter types as the cubin reads them (Triton's own map gives `double` for fp32, right for its Python
launcher's argument parsing but not for a kernel parameter of 4 bytes)."""


@dataclass
class Arg:
    name: str
    ctype: str
    value: str
    """A C expression: a pointer parameter, or a size expression."""
    checks: list[str] = field(default_factory=list)
    """C conditions the compiled specialization assumes of this argument."""


@dataclass
class Launch:
    kernel: str
    func: str
    grid: list[Expr]
    args: list[Arg]
    num_warps: int
    shared: int
    constexprs: dict[str, Any]


@dataclass
class Variant:
    shapes: list[Sizes]
    launches: list[Launch]
    fixed: list[str]
    """What could not be written as an expression of the sizes (then only the exported shapes are accepted)."""
    same_structure_at: list[Sizes]
    """Nearby shapes where the launcher made the same launches (kernels, constexprs): the expressions' evidence."""


def structure(launches: list[dict[str, Any]]) -> list[Any]:
    """What must match for two recordings to be the same C code: kernels, constexprs, options, tensor roles."""
    return [(r["kernel"], r["num_warps"], r["num_stages"],
             [(p["name"], p.get("value") if p["constexpr"] else p.get("role"), p.get("index")) for p in r["params"]
              if p["constexpr"] or p["kind"] == "tensor"]) for r in launches]


def int_sizes(shape: dict[str, Any]) -> Sizes:
    """The integer sizes, by the names the C code and the size expressions use: a KernelBench tuple's element,
    `input_shape[0]`, is `input_shape_0` there."""
    return {re.sub(r"\[(\d+)\]", r"_\1", k): v for k, v in shape.items() if isinstance(v, int) and not isinstance(v, bool)}


def tensor_name(role: str, index: int, outputs: list[str]) -> str:
    return f"in{index}" if role == "input" else (outputs[index] if index < len(outputs) else f"out{index}")


def plan(capture: dict[str, Any], output_names: list[str]) -> list[Variant]:
    builds = {b["func"]: b for b in capture["builds"]}
    groups: dict[str, list[int]] = {}
    for i, v in enumerate(capture["variants"]):
        key = repr([(r["build"], structure([r])) for r in v["launches"]])
        groups.setdefault(key, []).append(i)
    variants = []
    for members in groups.values():
        bases = [capture["variants"][i] for i in members]
        first = bases[0]["launches"]
        near = [p for p in capture["probes"] if p["of"] in members and structure(p["launches"]) == structure(first)]
        recordings = [(int_sizes(b["shape"]), b["launches"]) for b in bases] + \
                     [(int_sizes(p["shape"]), p["launches"]) for p in near]
        launches, fixed = [], []
        for li, record in enumerate(first):
            divisors = divisors_of([p.get("value") for p in record["params"] if p["constexpr"]])

            def expr(value_of: Any, what: str) -> Expr:
                e = derive([(sizes, value_of(ls[li])) for sizes, ls in recordings], divisors)
                if e.fixed:
                    fixed.append(f"{record['kernel']} {what} = {e.text}")
                return e

            grid = [expr(lambda r, d=d: r["grid"][d], f"grid[{d}]") for d in range(3)]
            args = []
            for pi, p in enumerate(record["params"]):
                if p["constexpr"] or p["hint"] == 1 and p["kind"] == "int":
                    if p["hint"] == 1:  # specialized to 1: compiled in, so the caller's value must be 1
                        e = expr(lambda r, pi=pi: r["params"][pi]["value"], p["name"])
                        args.append(Arg(p["name"], "", "", [] if e.names == () and not e.fixed else
                                        [f"({e.c('s_')}) == 1"]))
                    continue
                if p["kind"] == "tensor":
                    name = tensor_name(p["role"], p["index"], output_names)
                    checks = [f"{name} % 16 == 0"] if p["hint"] == 16 else []
                    args.append(Arg(p["name"], "CUdeviceptr", name, checks))
                elif p["kind"] == "int":
                    e = expr(lambda r, pi=pi: r["params"][pi]["value"], p["name"])
                    checks = [f"({e.c('s_')}) % 16 == 0"] if p["hint"] == 16 else []
                    args.append(Arg(p["name"], C_TYPES[p["type"]], f"({C_TYPES[p['type']]})({e.c('s_')})", checks))
                else:  # floats and booleans: the value the launcher passed at the exported shape
                    value = str(int(p["value"])) if p["kind"] == "bool" else repr(float(p["value"]))
                    args.append(Arg(p["name"], C_TYPES[p["type"]], value))
            build = builds[record["build"]]
            launches.append(Launch(record["kernel"], build["func"], grid, args, record["num_warps"], build["shared"],
                                   {p["name"]: p["value"] for p in record["params"] if p["constexpr"]}))
        variants.append(Variant([int_sizes(b["shape"]) for b in bases], launches, fixed,
                                [int_sizes(p["shape"]) for p in near]))
    return variants
