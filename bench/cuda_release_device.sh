#!/usr/bin/env bash
# GPU-machine check of a pinned CUDA release (BENCHMARKS.md, "CUDA 13.5 on the GPU"): the 0.3.36
# wheel for --arch 90 built with the machine's own CUDA (the baseline) and with `--cuda RELEASE`
# (hermetic, from the pinned wheels already in $LLAMA_FORGE_CACHE/downloads), then each run
# on the GPU and on the CPU only (tokens must be equal), then both side by side for tok/s.
#
#   bench/cuda_release_device.sh 13.5
#
# Run from the repo root of a device copy carrying .dev/ (stripped xtask, the trimmed sdist as
# .dev/llama_cpp_python-0.3.36.tar.gz, diskcache and typing_extensions wheels). READY=FILE makes
# it wait for FILE before it needs the release's wheels (they may still be arriving). Writes
# $OUT/results.txt (default /tmp/gpu-out) and touches /tmp/cuda_release.done at the end.
set -uo pipefail
rel=$1
export OUT=${OUT:-/tmp/gpu-out} LLAMA_FORGE_CACHE=${LLAMA_FORGE_CACHE:-$PWD/vendor/cache} VERSION=0.3.36 OURS_ONLY=1
unset CC CXX  # the GPU machine's CXX is a GCC without its shared libstdc++ (the tool refuses it)
mkdir -p "$OUT"
bash bench/gpu_wheel.sh build 90
while [ -n "${READY:-}" ] && [ ! -f "$READY" ]; do sleep 2; done
.dev/xtask toolchains install cuda "$rel" | tee -a "$OUT/results.txt"
CUDA=$rel bash bench/gpu_wheel.sh build 90
bash bench/gpu_wheel.sh run 90
CUDA=$rel bash bench/gpu_wheel.sh run 90
TARGET=/tmp/gpu-work/site-cuda$rel bash bench/cuda_ab.sh python3 /tmp/gpu-work/ours-90/*.whl python3 /tmp/gpu-work/ours-90-cuda"$rel"/*.whl
touch /tmp/cuda_release.done
