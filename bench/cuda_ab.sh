#!/usr/bin/env bash
# GPU-machine tok/s check of two CUDA wheels side by side (BENCHMARKS.md, "CUDA 13.5 on the GPU").
# Each wheel lives in its own Python (so each keeps the CUDA runtime wheels it requires); they
# run in turn A B A B, two runs each, on a seeded 0.82B llama-shaped model quantized to q4_0
# through wheel A's llama_model_quantize, every layer on the GPU, 100 tokens.
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
gguf=$(ls -d "${LLAMA_FORGE_STABLE_DIR:-/tmp/llama-forge}"/llama-cpp-python-*/src/vendor/llama.cpp/gguf-py | head -1)
model=/tmp/m-q4.gguf
[ -f $model ] || {
  $apy tests/e2e/make_tiny_gguf.py /tmp/m-f32.gguf --shape 16,2048,16,5632 --seed 0 --gguf-py "$gguf" | tail -1
  $apy -c 'import ctypes, llama_cpp
p = llama_cpp.llama_model_quantize_default_params(); p.ftype = 2; p.nthread = 16  # q4_0
assert llama_cpp.llama_model_quantize(b"/tmp/m-f32.gguf", b"/tmp/m-q4.gguf", ctypes.byref(p)) == 0'
  rm -f /tmp/m-f32.gguf
}
for round in 1 2; do
  for who in A B; do
    py=$apy; w=$awhl; pp=; [ $who = B ] && { py=$bpy; w=$bwhl; pp=${TARGET:-}; }
    for i in 1 2; do
      r=$(cd /tmp && PYTHONPATH=$pp $py "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" $model --tokens 100 --n-ctx 256 --n-gpu-layers -1 --no-highlevel-check 2>&1 | grep -E '^(TOKENS|TOKENS_PER_S|LOAD_S|SMOKE_OK)' | tr '\n' ' ')
      echo "$who $(basename "$w") (round $round) 0.82B q4_0 run $i: $r" | tee -a "$out/results.txt"
    done
  done
done
