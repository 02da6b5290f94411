#!/usr/bin/env bash
# The product path on the GPU machine: `harness run` on each task's demo transcript (replay model), then the
# iteration table of each report. Reports, verdicts and kernels are packed into $OUT/runs.tar.gz. From the repo root:
#   bash benchmarks/gpu_runs.sh softmax gemm flash_attn
set -u
OUT=${OUT:-$PWD/bench-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
WORK=$(mktemp -d)
for t in "$@"; do
  T0=$(date +%s)
  timeout 400 python3 -m harness.cli run "tasks/$t.yaml" -q --runs-dir "$WORK/runs" --dumps-dir "$WORK/dumps" \
    > "$WORK/$t.out" 2>&1
  echo "== $t: rc $? in $(( $(date +%s) - T0 )) s"
  tail -n 3 "$WORK/$t.out"
done
echo
for r in "$WORK"/runs/*/; do
  echo "================ $(basename "$r")"
  sed -n '/^| iter/,/^$/p' "$r/report.md"
  python3 - "$r" <<'PY'
import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("iter-*/result.json")):
    v = json.loads(p.read_text())
    for r in v["rungs"]:
        if r["name"] in ("benchmark", "profile", "roofline", "dumps") and r["status"] != "skip":
            print(f"{p.parent.name} {r['name']}: {r['status']}: {r['message'][:400]}")
PY
done
# reports, verdicts and kernels only: the whole run and dump folders of a five-iteration attention run took more
# than 200 s to pack on the GPU machine (2026-12-05) and came back too large to fetch
(cd "$WORK" && find runs \( -name "report.*" -o -name result.json -o -name kernel.py \) -print |
  tar czf "$OUT/runs.tar.gz" -T -) 2>/dev/null
ls -la "$OUT"
