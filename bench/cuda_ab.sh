#!/usr/bin/env bash
# GPU-machine tok/s check of two CUDA wheels side by side (BENCHMARKS.md, "CUDA 13.5 on the GPU").
# Each wheel lives in its own Python (so each keeps the CUDA runtime wheels it requires); they
# run in turn A B A B, two runs each, on bench/q4_model.sh's seeded 0.82B llama-shaped model
# in q4_0 (quantized through wheel A), every layer on the GPU, 100 tokens.
#
#   bench/cuda_ab.sh A_PYTHON A_WHEEL B_PYTHON B_WHEEL
#
# Run from the repo root of a device copy, after bench/gpu_wheel.sh build (the unpacked
# source's gguf-py makes the model). B installs into TARGET (then on B's PYTHONPATH) when set:
# gpu_wheel.sh CUDA=... run leaves the release's runtime wheels there.
set -uo pipefail
apy=$1; awhl=$2; bpy=$3; bwhl=$4
out=${OUT:-/tmp/gpu-out}; mkdir -p "$out"
$apy -m pip install -q --no-index --find-links "$PWD/.dev" --force-reinstall --no-deps "$awhl" || exit 1
$bpy -m pip install -q --no-index --force-reinstall --no-deps ${TARGET:+--upgrade --target $TARGET} "$bwhl" || exit 1
bash bench/q4_model.sh "$apy" || exit 1
model=/tmp/m-q4.gguf
for round in 1 2; do
  for who in A B; do
    py=$apy; w=$awhl; pp=; [ $who = B ] && { py=$bpy; w=$bwhl; pp=${TARGET:-}; }
    for i in 1 2; do
      r=$(cd /tmp && PYTHONPATH=$pp $py "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" $model --tokens 100 --n-ctx 256 --n-gpu-layers -1 --no-highlevel-check 2>&1 | grep -E '^(TOKENS|TOKENS_PER_S|LOAD_S|SMOKE_OK)' | tr '\n' ' ')
      echo "$who $(basename "$w") (round $round) 0.82B q4_0 run $i: $r" | tee -a "$out/results.txt"
    done
  done
done
