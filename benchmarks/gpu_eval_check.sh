#!/usr/bin/env bash
# `harness eval` over the KernelBench-format problems in tests/kernelbench_format/ with their honest Triton
# solutions, on the GPU machine, from the repo root:
#   bash benchmarks/gpu_eval_check.sh            # a cold eval (baselines timed and cached), then a warm one
#   bash benchmarks/gpu_eval_check.sh warm       # the warm eval only (baselines from the cache)
# Each eval has its own time limit so both fit one 10-minute device call; an eval cut short resumes when the
# script runs again (same --id). Prints the table, fast_p and the wall time per problem; logs and the eval
# folders go to $OUT. COLD_S, WARM_S and BAD_S set the three evals' limits (330, 170, 90 s; 0 leaves one out). Also runs the failing solutions (solutions_bad/: each must fail with a named reason).
set -u
MODE=${1:-both}
case "$MODE" in both|warm) ;; *) echo "usage: bash benchmarks/gpu_eval_check.sh [both|warm]" >&2; exit 2;; esac
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/bench-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export KERNEL_HARNESS_CACHE=${KERNEL_HARNESS_CACHE:-$PWD/.eval-cache}  # kept between calls: the warm eval reuses it
KB=tests/kernelbench_format
EVALS="$OUT/evals"

echo "== device =="
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.cuda.is_available())'

run_eval() {  # id, time limit, then the eval's arguments
  local id=$1 limit=$2; shift 2
  [ "$limit" -gt 0 ] || { echo "eval $id: left out (limit 0)"; return; }
  local t0=$(date +%s)
  timeout "$limit" python3 -m harness.cli eval "$@" --evals-dir "$EVALS" --id "$id" \
    >"$OUT/eval-$id.log" 2>&1
  local rc=$?
  echo "eval $id: rc $rc (124 = timed out: run the script again to resume), $(( $(date +%s) - t0 )) s"
}

if [ "$MODE" = both ]; then
  run_eval cold "${COLD_S:-330}" "$KB" --solutions "$KB/solutions"
fi
[ "${WARM_S:-170}" -gt 0 ] && run_eval warm "${WARM_S:-170}" "$KB" --solutions "$KB/solutions" --fresh
run_eval bad "${BAD_S:-90}" "$KB/level1/2_relu.py" "$KB/level1/3_softmax.py" "$KB/level1/7_tiny_scale.py" \
  --solutions "$KB/solutions_bad" --fresh

echo
echo "================ summary ================"
for id in cold warm; do
  [ -f "$EVALS/$id/summary.json" ] || continue
  echo "---- $id: per problem (wall s, verdict, x eager, x compile, roofline) ----"
  python3 - "$EVALS/$id/summary.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = lambda v, s: "-" if v is None else format(v, s)
for r in d["results"]:
    roof = "no roofline" if r["roofline_note"] else f(r["roofline_fraction"], ".2f")
    why = "" if r["verdict"] == "pass" else f'  [{r["failed_rung"]}] {r["reason"][:90]}'
    print(f'{r["problem"]:<22} {r["seconds"]:7.1f} s  {r["verdict"]:<4}  {f(r["runtime_us"], "9.1f")} us  '
          f'x{f(r["speedup_eager"], "6.2f")}  x{f(r["speedup_compile"], "6.2f")}  {roof:>11}{why}')
    slow = sorted((r.get("rung_seconds") or {}).items(), key=lambda kv: -kv[1])[:4]
    if slow:
        print("    slowest rungs: " + ", ".join(f"{k} {v:.1f} s" for k, v in slow))
s = d["summary"]
print(f'fast_0 {s["fast_0"]}  fast_1 {s["fast_1"]}  fast_2 {s["fast_2"]}  geomean x eager {s["geomean_speedup_eager"]}'
      f'  x compile {s["geomean_speedup_compile"]}  ({s["finished"]} of {s["problems"]} finished, {s["gpu"]})')
lvl1 = [r["seconds"] for r in d["results"] if r["level"] == "level1"]
print(f'level1 wall per problem: mean {sum(lvl1) / max(len(lvl1), 1):.1f} s, max {max(lvl1, default=0):.1f} s (target < 30 s warm)')
PY
done
if [ -f "$EVALS/bad/summary.json" ]; then
  echo "---- failing solutions (each must fail, with its reason) ----"
  python3 - "$EVALS/bad/summary.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f'{r["problem"]:<16} {r["verdict"]:<4} [{r["failed_rung"]}] {r["reason"][:110]}')
PY
fi
