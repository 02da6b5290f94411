#!/usr/bin/env bash
# The product path on the GPU machine: `harness run` on each task's demo transcript (replay model), then the
# iteration table of each report. Run folders are packed into $OUT/runs.tar.gz. From the repo root:
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
tar czf "$OUT/runs.tar.gz" -C "$WORK" runs dumps 2>/dev/null
ls -la "$OUT"
