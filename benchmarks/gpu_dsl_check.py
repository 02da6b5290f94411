"""H200 check of the CUDA C++ and TileLang demos: each *_cuda_* / *_tilelang_* demo against its task's reference
on every test shape (and the bench shapes), timed with triton.testing.do_bench next to torch (cuBLAS for GEMM).

    python benchmarks/gpu_dsl_check.py [--only softmax_cuda] [--no-bench]

Stands alone: imports the demo files directly (no ladder, no sandbox), so it runs before the backend refactor
lands. Prints a table last; with $OUT set, writes gpu_dsl_check.log and gpu_dsl_check.json there.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TASKS = ["softmax_cuda", "gemm_cuda", "flash_attn_cuda", "softmax_tilelang", "gemm_tilelang", "flash_attn_tilelang"]
LOG: list[str] = []


def say(line: str) -> None:
    print(line, flush=True)
    LOG.append(line)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> tuple[bool, float]:
    """Within the output dtype's rounding of the float64 reference: a few ulps of bf16 (8 bits of mantissa)
    relative, plus a small absolute floor scaled to the reference's size for sums that cancel."""
    out, ref = out.double().cpu(), ref.double().cpu()
    if out.shape != ref.shape:
        return False, math.inf
    eps = 2 ** -7 if dtype == torch.bfloat16 else 2 ** -16  # fp32: exp2f and 16k-term sums, not 1 ulp
    scale = ref.abs().mean().item() if ref.numel() else 0.0
    err = (out - ref).abs()
    bad = err > 2 * eps * ref.abs() + 2 * eps * scale + 1e-30
    finite = torch.isfinite(out).all().item()
    return bool(finite and not bad.any().item()), float(err.max().item()) if err.numel() else 0.0


def bench_ms(fn) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100))


def run_task(task: str, bench: bool) -> list[dict]:
    spec_path = ROOT / "tasks" / f"{task}.yaml"
    if not spec_path.is_file():
        say(f"{task}: no task file, skipped")
        return []
    spec = yaml.safe_load(spec_path.read_text())
    ref_file, _, ref_fn = spec["reference"].partition(":")
    inp_file, _, inp_fn = spec["inputs"].partition(":")
    ref_mod = load(ROOT / "tasks" / ref_file, f"{task}_ref")
    inp_mod = ref_mod if inp_file == ref_file else load(ROOT / "tasks" / inp_file, f"{task}_inputs")
    reference, make_inputs = getattr(ref_mod, ref_fn), getattr(inp_mod, inp_fn)
    dtype = getattr(torch, spec["dtypes"][0])
    rows = []
    for demo in sorted((ROOT / "tasks" / "demos").glob(f"{task}_[1-9]_*.py")):
        row = {"task": task, "demo": demo.stem, "status": "ok", "max_err": 0.0, "compile_s": None, "bench": []}
        t0 = time.perf_counter()
        try:
            fn = load(demo, f"demo_{demo.stem}").kernel
        except Exception as exc:  # noqa: BLE001 - a demo that does not compile (the _1_ ones) is a row
            row.update(status="compile error", note=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:90]}")
            rows.append(row)
            say(f"{demo.stem}: {row['status']}: {row['note']}")
            continue
        try:
            for shape in spec["shapes"]["test"]:
                inputs = make_inputs(shape, dtype, 0)
                ref = reference(*[x.double() if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs])
                out = fn(*[x.cuda() if torch.is_tensor(x) else x for x in inputs])
                torch.cuda.synchronize()
                ok, err = close(out, ref, dtype)
                row["max_err"] = max(row["max_err"], err)
                if not ok:
                    row.update(status="wrong", note=f"at {shape}: max abs error {err:.3g}")
                    break
            row["compile_s"] = round(time.perf_counter() - t0, 1)  # first calls compile per shape (TileLang)
            if bench and row["status"] == "ok":
                row["bench"] = [bench_shape(spec, shape, fn, make_inputs, reference, dtype)
                                for shape in spec["shapes"]["bench"]]
        except Exception as exc:  # noqa: BLE001
            row.update(status="error", note=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:90]}")
            LOG.append(traceback.format_exc())
        rows.append(row)
        say(f"{demo.stem}: {row['status']} {row.get('note', '')} {row['bench']}")
    return rows


def bench_shape(spec: dict, shape: dict, fn, make_inputs, reference, dtype) -> dict:
    inputs = [x.cuda() if torch.is_tensor(x) else x for x in make_inputs(shape, dtype, 0)]
    out = fn(*inputs)
    ok, err = close(out, torch_baseline(spec["name"], inputs).double(), dtype)  # vs torch at this size (GPU)
    mine, theirs = bench_ms(lambda: fn(*inputs)), bench_ms(lambda: torch_baseline(spec["name"], inputs))
    env = {k: float(v) if isinstance(v, (int, float)) else v for k, v in shape.items()}
    flops, nbytes = eval(spec["roofline"]["flops"], {}, env), eval(spec["roofline"]["bytes"], {}, env)
    return {"shape": shape, "matches_torch": ok, "ms": round(mine, 4), "torch_ms": round(theirs, 4),
            "vs_torch": round(theirs / mine, 3), "tflops": round(flops / mine / 1e9, 1),
            "gbps": round(nbytes / mine / 1e6, 1)}


def torch_baseline(task: str, inputs: list) -> torch.Tensor:
    if task.startswith("softmax"):
        return torch.softmax(inputs[0], dim=-1)
    if task.startswith("gemm"):
        return inputs[0] @ inputs[1]
    q, k, v, causal = inputs
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", action="append", help="a task name (repeatable)")
    parser.add_argument("--no-bench", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_dsl_check: no GPU (this script runs on the H200)")
        return 2
    say(f"{torch.cuda.get_device_name()}  torch {torch.__version__}")
    rows = [r for t in (args.only or TASKS) for r in run_task(t, not args.no_bench)]
    say("")
    say(f"{'demo':34} {'status':14} {'max_err':>9} {'first_s':>7}  bench (ms, vs torch, TFLOP/s, GB/s)")
    for r in rows:
        bench = "; ".join(f"{b['ms']:.3f} {b['vs_torch']:.2f}x {b['tflops']:.0f} {b['gbps']:.0f}"
                          + ("" if b["matches_torch"] else " MISMATCH") for b in r["bench"])
        say(f"{r['demo']:34} {r['status']:14} {r['max_err']:9.2g} {r['compile_s'] or 0:7.1f}  {bench or r.get('note', '')}")
    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_dsl_check.log").write_text("\n".join(LOG) + "\n")
        (Path(out) / "gpu_dsl_check.json").write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
