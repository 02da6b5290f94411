"""The CuTe DSL demos on a GPU, next to the Triton demos and torch (not a test; run on the H200).

For every CuTe task (tasks/*_cute.yaml: softmax_cute, and gemm_cute / flash_attn_cute where present) and each of
its demos tasks/demos/<task>_<n>_*.py: correctness on the task's test shapes (every dtype, the first --seeds
distributions) against the task's reference in float64, judged by the ladder's own comparison (rungs.ladder.metrics)
when it imports, else by a plain allclose; then, for each correct one, the time on the bench shapes
(triton.testing.do_bench, median) with the bench-shape output compared too, beside the Triton task's demos (the
task without `_cute`) and torch (torch.softmax, torch.matmul / cuBLAS, scaled_dot_product_attention / cuDNN).
It calls each demo's kernel(...) directly: no ladder, no sandbox, nothing of the redesign, so it runs on main as is.

    python3 benchmarks/gpu_cute_check.py [--tasks softmax_cute,gemm_cute] [--seeds 2] [--out DIR]

Writes gpu_cute_check.json and gpu_cute_check.log to --out (default $OUT, else nothing) and prints a table last.
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tasks"
sys.path.insert(0, str(ROOT))
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_modules = itertools.count()
LOG: list[str] = []


def say(text: str) -> None:
    LOG.append(text)
    print(text, flush=True)


def load_module(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"gpu_cute_check_{next(_modules)}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def task_callable(task_file: Path, ref: str) -> Callable[..., Any]:
    file, _, name = ref.partition(":")
    return getattr(load_module(task_file.parent / file), name)


def to_cuda(values: tuple[Any, ...]) -> list[Any]:
    return [v.cuda() if isinstance(v, torch.Tensor) else v for v in values]


def upcast(values: list[Any]) -> list[Any]:
    return [v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]


def judge(out: Any, ref: torch.Tensor, dtype: str, overrides: dict[str, Any] | None = None) -> str | None:
    """None when `out` matches, else what is wrong, in one line. `overrides`: the task's `tolerances:` for dtype."""
    if not isinstance(out, torch.Tensor) or out.shape != ref.shape:
        return f"returned {type(out).__name__} {getattr(out, 'shape', '')}, expected a tensor {tuple(ref.shape)}"
    try:  # the ladder's comparison and thresholds, if this checkout has them where main has them
        from rungs.ladder.metrics import assess, thresholds

        _, worst, broken = assess(out.detach().cpu(), ref.detach().cpu(), dtype, thresholds(dtype, overrides))
        if not broken:
            return None
        where = f"; worst at {worst.index}: got {worst.got:.6g}, expected {worst.expected:.6g}" if worst else ""
        return ", ".join(broken) + where
    except ImportError:
        tol = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 3e-2}.get(dtype, 1e-3)
        got, exp = out.detach().double().cpu(), ref.detach().double().cpu()
        if torch.allclose(got, exp, rtol=tol, atol=tol):
            return None
        return f"max abs error {(got - exp).abs().max().item():.3g} (rtol = atol = {tol})"


def one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    try:
        from rungs.backends.cute import BACKEND

        return BACKEND.compile_message(text)[:240]
    except ImportError:
        return " ".join(text.split())[:240]


def bench_us(fn: Callable[[], Any]) -> float:
    import triton.testing

    fn()
    torch.cuda.synchronize()
    return float(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")) * 1e3


def torch_baseline(family: str) -> tuple[str, Callable[..., Any]] | None:
    if family == "softmax":
        return "torch.softmax", lambda x: torch.softmax(x, dim=-1)
    if family == "gemm":
        return "torch.matmul (cuBLAS)", torch.matmul
    if family == "flash_attn":
        import torch.nn.functional as F

        return "SDPA (cuDNN/flash)", lambda q, k, v, causal: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return None


def rate(spec: dict[str, Any], shape: dict[str, Any], us: float) -> dict[str, float]:
    roof = spec.get("roofline") or {}
    names = {"__builtins__": {}, **shape}
    flops = eval(str(roof.get("flops", "0")), names)  # noqa: S307 - our own task files
    nbytes = eval(str(roof.get("bytes", "0")), names)  # noqa: S307
    return {"tflops": flops / us / 1e6, "gbps": nbytes / us / 1e3}


def check_task(name: str, seeds: int) -> list[dict[str, Any]]:
    task_file = TASKS / f"{name}.yaml"
    spec = yaml.safe_load(task_file.read_text())
    family = name.removesuffix("_cute")
    reference = task_callable(task_file, spec["reference"])
    make_inputs = task_callable(task_file, spec["inputs"])
    dists = spec.get("distributions") or ["normal"]
    tolerances = spec.get("tolerances") or {}
    rows: list[dict[str, Any]] = []
    contenders: list[tuple[str, str, Callable[..., Any]]] = []  # (dsl, demo, kernel) that passed
    for demo in sorted((TASKS / "demos").glob(f"{name}_[0-9]*.py")):
        row = {"task": name, "demo": demo.stem, "dsl": spec.get("dsl"), "cases": 0, "passed": 0, "error": None}
        rows.append(row)
        t0 = time.perf_counter()
        try:
            kernel = load_module(demo).kernel
            for dtype, shape in itertools.product(spec["dtypes"], spec["shapes"]["test"]):
                for seed, dist in enumerate(dists[:seeds]):
                    inputs = to_cuda(make_inputs(dict(shape), DTYPES[dtype], seed, dist))
                    out = kernel(*inputs)
                    torch.cuda.synchronize()
                    wrong = judge(out, reference(*upcast(inputs)), dtype, tolerances.get(dtype))
                    row["cases"] += 1
                    row["passed"] += wrong is None
                    if wrong and row["error"] is None:
                        row["error"] = f"{shape} {dist}: {wrong}"
        except Exception as exc:  # noqa: BLE001 - a demo that does not compile is expected (the _1 demos)
            row["error"] = one_line(exc)
            say(f"{demo.stem}: {row['error']}\n{traceback.format_exc(limit=3)}")
        row["check_s"] = round(time.perf_counter() - t0, 2)
        say(f"{demo.stem}: {row['passed']}/{row['cases']} cases pass ({row['check_s']} s){'' if not row['error'] else ' - ' + row['error']}")
        if row["cases"] and row["passed"] == row["cases"]:
            contenders.append(("cute", demo.stem, kernel))
    twin = TASKS / f"{family}.yaml"
    for demo in sorted((TASKS / "demos").glob(f"{family}_[0-9]*.py")) if twin.is_file() else []:
        if "nocompile" in demo.stem or "wrong" in demo.stem:
            continue  # the Triton task's failing demos
        try:
            contenders.append(("triton", demo.stem, load_module(demo).kernel))
        except Exception as exc:  # noqa: BLE001
            say(f"{demo.stem}: {one_line(exc)}")
    baseline = torch_baseline(family)
    if baseline:
        contenders.append(("torch", baseline[0], baseline[1]))
    for shape in spec["shapes"]["bench"]:
        for dtype in spec["dtypes"]:
            inputs = to_cuda(make_inputs(dict(shape), DTYPES[dtype], 0, dists[0]))
            try:
                expected = reference(*upcast(inputs))
            except torch.cuda.OutOfMemoryError:
                expected = None
            for dsl, demo, kernel in contenders:
                entry = {"task": name, "demo": demo, "dsl": dsl, "shape": shape, "dtype": dtype}
                try:
                    out = kernel(*inputs)
                    torch.cuda.synchronize()
                    entry["bench_check"] = ("n/a" if expected is None else
                                           judge(out, expected, dtype, tolerances.get(dtype)) or "ok")
                    entry["us"] = bench_us(lambda: kernel(*inputs))
                    entry.update(rate(spec, shape, entry["us"]))
                except Exception as exc:  # noqa: BLE001
                    entry["error"] = one_line(exc)
                rows.append(entry)
                say(json.dumps(entry, default=str))
            del expected
            torch.cuda.empty_cache()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'task':<16} {'demo / contender':<32} {'dsl':<7} {'shape':<34} {'result':>14} {'us':>10} "
             f"{'TFLOP/s':>8} {'GB/s':>8} {'vs torch':>8}"]
    torch_us = {(r["task"], json.dumps(r.get("shape"))): r["us"] for r in rows if r.get("dsl") == "torch" and "us" in r}
    for r in rows:
        if "shape" not in r:
            result = f"{r['passed']}/{r['cases']} pass" if r["cases"] else "error" if r["error"] else "-"
            why = f"  {r['error'][:90]}" if r["error"] else ""
            lines.append(f"{r['task']:<16} {r['demo']:<32} {r['dsl'] or '':<7} {'test shapes':<34} {result:>14}{why}")
            continue
        shape = ",".join(f"{k}={v}" for k, v in r["shape"].items())
        if "us" not in r:
            lines.append(f"{r['task']:<16} {r['demo']:<32} {r['dsl']:<7} {shape:<34} {'error':>14}  {r.get('error', '')[:60]}")
            continue
        base = torch_us.get((r["task"], json.dumps(r["shape"])))
        vs = f"{base / r['us']:.2f}x" if base else "-"
        lines.append(f"{r['task']:<16} {r['demo']:<32} {r['dsl']:<7} {shape:<34} {str(r['bench_check'])[:14]:>14} "
                     f"{r['us']:>10.1f} {r['tflops']:>8.1f} {r['gbps']:>8.0f} {vs:>8}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="", help="comma-separated CuTe tasks (default: every tasks/*_cute.yaml)")
    parser.add_argument("--seeds", type=int, default=2, help="distributions tried per test shape")
    parser.add_argument("--out", default=os.environ.get("OUT", ""), help="folder for the log and json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_cute_check: no CUDA device; run it on the GPU machine")
        return 2
    os.environ.setdefault("CUTE_DSL_LOG_TO_CONSOLE", "0")
    names = [n for n in args.tasks.split(",") if n] or sorted(p.stem for p in TASKS.glob("*_cute.yaml"))
    missing = [n for n in names if not (TASKS / f"{n}.yaml").is_file()]
    if missing:
        print(f"gpu_cute_check: no task file for {', '.join(missing)} under {TASKS}")
        return 2
    import cutlass  # noqa: F401 - fail here, in one line, when the wheel is missing
    from importlib.metadata import version

    say(f"torch {torch.__version__}, triton {version('triton')}, nvidia-cutlass-dsl {version('nvidia-cutlass-dsl')}, "
        f"{torch.cuda.get_device_name()}")
    rows = [row for name in names for row in check_task(name, args.seeds)]
    text = table(rows)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu_cute_check.json").write_text(json.dumps(rows, indent=1, default=str))
        (out / "gpu_cute_check.log").write_text("\n".join(LOG) + "\n\n" + text + "\n")
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
