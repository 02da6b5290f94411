#!/usr/bin/env bash
# `harness export` on the H200 (issue 18): the softmax and gemm demos' fast kernels (Triton) and the softmax CuTe DSL
# demo (export_to_c) exported at their tasks' bench shapes, the C test programs built and run on inputs the harness
# writes, the outputs judged by the correctness rung's metrics, and the C time (CUDA events) next to the harness's own
# timing of the same kernel. Logs under $OUT. EXPORT_GEMM_CUTE=1 adds the CuTe gemm demo (4096^3 and 8192^3).
#   device: bash benchmarks/gpu_export_check.sh     (carry .whl where the image lacks the harness's dependencies;
#   the CuTe DSL rows need nvidia-cutlass-dsl there: run it after gpu_session.sh's cute phase, or install it first)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
# the CuTe DSL installed by .dev/cutlass-b/install.sh keeps its packages one level down
[ -d /tmp/site/nvidia_cutlass_dsl/dsl_packages ] && export PYTHONPATH=/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PYTHONPATH
python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__, torch.cuda.get_device_name())"
pairs="softmax:softmax_4_tuned gemm:gemm_4_grouped softmax_cute:softmax_cute_4_fast"
[ "${EXPORT_GEMM_CUTE:-0}" = 1 ] && pairs="$pairs gemm_cute:gemm_cute_4_fast"
for pair in $pairs; do
  task=${pair%%:*}; demo=${pair#*:}
  if [[ $task == *_cute ]] && ! python3 -c "import cutlass.cute" 2>/dev/null; then
    echo "$task: skipped (nvidia-cutlass-dsl is not importable here)"; continue
  fi
  t0=$SECONDS
  timeout 560 python3 -m harness.cli export "tasks/demos/$demo.py" --task "tasks/$task.yaml" -o "$out/export-$task" \
    --verify > "$out/export-$task.log" 2>&1
  echo "$task: export rc=$? in $((SECONDS - t0)) s"
  tail -4 "$out/export-$task.log" | cut -c1-300
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
rows = []
for f in sorted(Path(sys.argv[1]).glob("export-*/verify.json")):
    rows += json.loads(f.read_text())
print(f"{'kernel':<20} {'shape':<22} {'max error':>10} {'C us':>10} {'harness us':>11} {'ratio':>6} "
      f"{'C back-to-back us':>18} {'harness after us':>17}  ok")
for r in rows:
    print(f"{r['kernel']:<20} {r['shape']:<22} {r['max_abs_scaled']:>10.3g} {r['c_us']:>10.2f} {r['harness_us']:>11.2f} "
          f"{r['ratio']:>6.3f} {r.get('c_back_to_back_us', float('nan')):>18.2f} "
          f"{r.get('harness_after_us', float('nan')):>17.2f}  "
          f"{'ok' if r['ok'] else 'WRONG ' + r['broken'][:80]}")
if not rows:
    print("no verify.json written: see the logs above")
PY
