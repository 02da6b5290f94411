#!/usr/bin/env bash
# Records Nsight Compute output of demo kernels on the GPU machine, as test data for the profile parser:
# the curated sections, CSV, one file per kernel under $OUT. Run from the repo root.
set -u
OUT=${OUT:-$PWD/bench-out}
mkdir -p "$OUT"
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats"
cat > /tmp/ncu_softmax.py <<'PY'
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("k", sys.argv[1]); k = importlib.util.module_from_spec(spec); spec.loader.exec_module(k)
x = torch.randn(32768, 8192, device="cuda")
for _ in range(2):
    k.kernel(x)
torch.cuda.synchronize()
PY
cat > /tmp/ncu_mm.py <<'PY'
import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16); b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
for _ in range(3):  # warm-up outside the profiled range: --launch-skip would count torch.randn's kernels too
    a @ b
torch.cuda.synchronize(); torch.cuda.profiler.start(); a @ b; torch.cuda.synchronize(); torch.cuda.profiler.stop()
PY
timeout 120 ncu --clock-control none $SECTIONS --launch-skip 1 --launch-count 1 --csv --page details \
  python3 /tmp/ncu_softmax.py tasks/demos/softmax_4_tuned.py > "$OUT/ncu_softmax_details.csv" 2> "$OUT/ncu.err"
echo "ncu softmax rc $? lines $(wc -l < "$OUT/ncu_softmax_details.csv")"
timeout 120 ncu --clock-control none $SECTIONS --profile-from-start off --launch-count 1 --csv --page details \
  python3 /tmp/ncu_mm.py > "$OUT/ncu_matmul_details.csv" 2>> "$OUT/ncu.err"
echo "ncu matmul rc $? lines $(wc -l < "$OUT/ncu_matmul_details.csv")"
head -c 600 "$OUT/ncu_softmax_details.csv"; echo; tail -3 "$OUT/ncu.err"
