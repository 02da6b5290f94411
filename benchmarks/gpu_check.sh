#!/usr/bin/env bash
# One call on the GPU machine, from the repo root. Each step has its own time limit, so that either form fits one
# 10-minute device call:
#   bash benchmarks/gpu_check.sh tests     # the gpu-marked tests (5 min 43 s on the H200) and the overhead probe
#   bash benchmarks/gpu_check.sh figures   # timing fidelity (harness vs ncu) and the demo kernels' speeds
# Logs and JSON go to $OUT; a short summary is printed last.
set -u
STEPS=${1:-tests}
case "$STEPS" in tests|figures) ;; *) echo "usage: bash benchmarks/gpu_check.sh tests|figures" >&2; exit 2;; esac
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/bench-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
SCRATCH=$(mktemp -d)
CACHE="$SCRATCH/baselines"  # eager/torch.compile timings shared by the two scripts: each task compiled once
T0=$(date +%s)

echo "== device =="
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,memory.used --format=csv
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.cuda.is_available())'

TESTS_RC=- FID_RC=- DEMO_RC=- PROBE_RC=-
if [ "$STEPS" = tests ]; then
  echo "== gpu tests =="
  timeout 420 python3 -m pytest -m gpu -v -p no:cacheprovider tests >"$OUT/gpu_tests.log" 2>&1
  TESTS_RC=$?
  grep -E "PASSED|FAILED|ERROR" "$OUT/gpu_tests.log" | tail -n 25
  echo "== overhead probe =="
  timeout 150 python3 benchmarks/overhead_probe.py >"$OUT/overhead_probe.log" 2>&1
  PROBE_RC=$?
fi
if [ "$STEPS" = figures ]; then
  echo "== timing fidelity =="
  timeout 180 python3 benchmarks/timing_fidelity.py --out "$OUT" --baseline-cache "$CACHE"
  FID_RC=$?
  echo "== demo speeds =="
  timeout 140 python3 benchmarks/demo_speeds.py --out "$OUT" --baseline-cache "$CACHE" --budget-s 80
  DEMO_RC=$?
fi
T2=$(date +%s)

echo
echo "================ summary ================"
echo "gpu tests:       rc $TESTS_RC: $(grep -sE '(passed|failed|error)' "$OUT/gpu_tests.log" | tail -n 1)"
echo "overhead probe:  rc $PROBE_RC (124 = timed out)"
echo "timing fidelity: rc $FID_RC, demo speeds: rc $DEMO_RC (124 = timed out); $((T2 - T0)) s in all"
[ -f "$OUT/overhead_probe.log" ] && grep -E "^climb|overhead_s" "$OUT/overhead_probe.log"
for f in timing_fidelity.log demo_speeds.log; do
  if [ -f "$OUT/$f" ]; then
    sed -n '/^== /,$p' "$OUT/$f" | tail -n 20
  fi
done
ls "$OUT"
rm -rf "$SCRATCH"
