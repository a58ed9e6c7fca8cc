#!/usr/bin/env bash
# On the GPU host: decode beside llama.cpp in one call (issue 25's table). Needs release builds of
# rlx and parity, stripped and xz-packed, in .gpu-bin/base/ (the old tree) and .gpu-bin/new/ (the
# new one), and llama.cpp's tools copied from ../shared/llama into .gpu-bin/llama/ (xz-packed as
# they are there). Run it as: run(command="bash scripts/gpu_decode_vs_llama.sh",
# carry=[".gl", ".gpu-bin"]).
#
# Rows: Llama-3.2-1B shape, batch 1 after a 512- and a 4096-token prompt (f16 weights; the f16 KV
# cache and, for the new binary, the f32 one), Q4_K; 32 and 64 streams joined by add and by
# enqueue (prefill mixed into the steps); llama-bench tg128 (-d 4096 too) and llama-batched-bench
# at 32 and 64 sequences on a GGUF of the same shape written here; the parity cases of the decode
# path; and one profile of each kind of step.
set -u
. .gl/prelude.sh
B=/tmp/b; mkdir -p $B
for d in base new; do for x in rlx parity; do xz -dc .gpu-bin/$d/$x.xz > $B/$d-$x; chmod +x $B/$d-$x; done; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
echo "== parity (new)"
$B/new-parity vulkan --filter kv_lengths,decode_batch,write_rows,attention 2>&1 | grep -E "FAIL|parity" | tail -8
$B/new-parity gpu --filter kv_lengths,decode_batch,write_rows 2>&1 | grep -E "FAIL|parity" | tail -4
G="--decoder llama-3.2-1b"
gen() { bin=$1; shift; echo "== $bin $*"; timeout 150 $B/$bin bench "$@" generate 2>&1 | grep -vE "^bench:|^\s*$" | tail -3; }
# The first timed workload of a fresh host runs at low clocks: warm up first.
gen new-rlx --device vulkan --precision f16 $G --prefill-tokens 64 --decode-tokens 32 --iters 1 --warmup 1
for ctx in 512 4096; do
  for d in base new; do gen $d-rlx --device vulkan --precision f16 $G --prefill-tokens $ctx --decode-tokens 128 --iters 3 --warmup 1; done
  gen new-rlx --device vulkan --precision f16 $G --prefill-tokens $ctx --decode-tokens 128 --iters 3 --warmup 1 --kv-cache f32
done
gen new-rlx --device gpu --precision f16 $G --prefill-tokens 512 --decode-tokens 128 --iters 3 --warmup 1
for d in base new; do gen $d-rlx --device vulkan --quant q4_k --precision mixed $G --prefill-tokens 512 --decode-tokens 128 --iters 3 --warmup 1; done
for s in 32 64; do
  for d in base new; do gen $d-rlx --device vulkan --precision f16 $G --prefill-tokens 128 --decode-tokens 128 --streams $s --iters 2 --warmup 1; done
  gen new-rlx --device vulkan --precision f16 $G --prefill-tokens 128 --decode-tokens 128 --streams $s --iters 2 --warmup 1 --join enqueue
  gen new-rlx --device vulkan --precision f16 $G --prefill-tokens 128 --decode-tokens 128 --streams $s --iters 2 --warmup 1 --kv-cache f32
done
for d in base new; do gen $d-rlx --device vulkan --quant q4_k --precision mixed $G --prefill-tokens 128 --decode-tokens 128 --streams 32 --iters 2 --warmup 1; done
echo "== profiles (new)"
RLX_PROFILE=1 timeout 120 $B/new-rlx bench --device vulkan --precision f16 $G --prefill-tokens 512 --decode-tokens 16 --iters 1 --warmup 1 generate 2>&1 | grep -vE "^\s*$" | tail -40
RLX_PROFILE=1 timeout 120 $B/new-rlx bench --device vulkan --precision f16 $G --prefill-tokens 128 --decode-tokens 8 --streams 64 --iters 1 --warmup 1 generate 2>&1 | grep -vE "^\s*$" | tail -30
date -u
echo "== llama.cpp"
eval "$(bash .gpu-bin/llama/setup.sh /tmp/llama)"
python3 scripts/make_bench_gguf.py /tmp/l1b.gguf --decoder llama-3.2-1b 2>&1 | tail -1
/tmp/llama/llama-quantize /tmp/l1b.gguf /tmp/l1b-q4km.gguf Q4_K_M > /tmp/q.log 2>&1; tail -1 /tmp/q.log
timeout 200 /tmp/llama/llama-bench -m /tmp/l1b.gguf,/tmp/l1b-q4km.gguf -p 512 -n 128 -ngl 99 2>&1 | grep "|"
timeout 200 /tmp/llama/llama-bench -m /tmp/l1b.gguf -p 0 -n 128 -d 4096 -ngl 99 2>&1 | grep "|"
timeout 200 /tmp/llama/llama-batched-bench -m /tmp/l1b.gguf -c 20480 -npp 128 -ntg 128 -npl 32,64 -ngl 99 2>&1 | grep "^|"
timeout 150 /tmp/llama/llama-batched-bench -m /tmp/l1b-q4km.gguf -c 20480 -npp 128 -ntg 128 -npl 32 -ngl 99 2>&1 | grep "^|"
date -u
