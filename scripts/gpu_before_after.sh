#!/usr/bin/env bash
# On the GPU host: the parity table (tensor-core cases included) with the new binaries, and the same
# benchmark rows from old and new binaries in one call. Needs release builds of rlx and parity,
# stripped and xz-packed, in .gpu-bin/base/ (the old tree) and .gpu-bin/new/ (the new one).
set -u
. .gl/prelude.sh
B=/tmp/b; mkdir -p $B
for d in base new; do for x in rlx parity; do xz -dc .gpu-bin/$d/$x.xz > $B/$d-$x; chmod +x $B/$d-$x; done; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for dev in vulkan gpu; do
  echo "== parity $dev (new)"; ( time $B/new-parity $dev ) 2>&1 | tail -6
done
for d in base new; do
  echo "== bench $d: matmul 4096 f16, attention causal s2048 d128 f16, bert-base b32 f16"
  $B/$d-rlx bench --device vulkan --device gpu --precision f16 --iters 20 --matmul-size 4096 \
    --attn-shape 1x32x2048x128 --attn-causal --bert-batch 32 matmul attention bert \
    --json $OUT/bench-$d.json 2>&1 | grep -v "^bench:" | head -30
done
for d in base new; do
  echo "== bench $d: prefill llama-3.2-1b shape, 512 tokens, f16"
  $B/$d-rlx bench --device vulkan --device gpu --precision f16 --iters 10 --decoder llama-3.2-1b \
    prefill --json $OUT/prefill-$d.json 2>&1 | grep -v "^bench:" | head -12
done
