#!/usr/bin/env bash
# One call on the GPU machine, from the repo root: the gpu-marked tests, timing fidelity (harness vs ncu) and the
# demo kernels' speeds. Logs and JSON go to $OUT (5 files); a short summary is printed last. Each step has its own
# time limit so the whole stays under 8 minutes (7.7 at the limits).
#
#   bash benchmarks/gpu_check.sh
set -u
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

echo "== gpu tests =="
timeout 140 python3 -m pytest -m gpu -q -p no:cacheprovider tests >"$OUT/gpu_tests.log" 2>&1
TESTS_RC=$?
tail -n 25 "$OUT/gpu_tests.log"
T1=$(date +%s)

echo "== timing fidelity =="
timeout 180 python3 benchmarks/timing_fidelity.py --out "$OUT" --baseline-cache "$CACHE"
FID_RC=$?
T2=$(date +%s)

echo "== demo speeds =="
timeout 140 python3 benchmarks/demo_speeds.py --out "$OUT" --baseline-cache "$CACHE" --budget-s 80
DEMO_RC=$?
T3=$(date +%s)

echo
echo "================ summary ================"
echo "gpu tests:       rc $TESTS_RC in $((T1 - T0)) s: $(grep -E '(passed|failed|error)' "$OUT/gpu_tests.log" | tail -n 1)"
echo "timing fidelity: rc $FID_RC in $((T2 - T1)) s (124 = timed out)"
echo "demo speeds:     rc $DEMO_RC in $((T3 - T2)) s (124 = timed out)"
for f in timing_fidelity.log demo_speeds.log; do
  if [ -f "$OUT/$f" ]; then
    sed -n '/^== /,$p' "$OUT/$f" | tail -n 20
  fi
done
ls "$OUT"
rm -rf "$SCRATCH"
