#!/usr/bin/env bash
# The seeded 0.82B llama-shaped model in q4_0 that the GPU tok/s comparisons run
# (size_levers.sh, cuda_ab.sh; BENCHMARKS.md): made once, at /tmp/m-q4.gguf, by
# make_tiny_gguf.py with the unpacked source's gguf-py, quantized through the llama_cpp
# that PYTHON imports.
#
#   bench/q4_model.sh PYTHON
set -euo pipefail
py=$1; model=/tmp/m-q4.gguf
[ -f $model ] && exit 0
gguf=$(ls -d "${LLAMA_FORGE_STABLE_DIR:-/tmp/llama-forge}"/src-*/src/vendor/llama.cpp/gguf-py | head -1)
$py tests/e2e/make_tiny_gguf.py /tmp/m-f32.gguf --shape 16,2048,16,5632 --seed 0 --gguf-py "$gguf" | tail -1
$py -c 'import ctypes, llama_cpp
p = llama_cpp.llama_model_quantize_default_params(); p.ftype = 2; p.nthread = 16  # q4_0
assert llama_cpp.llama_model_quantize(b"/tmp/m-f32.gguf", b"/tmp/m-q4.gguf", ctypes.byref(p)) == 0'
rm -f /tmp/m-f32.gguf
