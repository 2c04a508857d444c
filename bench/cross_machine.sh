#!/usr/bin/env bash
# Same bytes on two machines (BENCHMARKS.md, "Identity across machines"): builds the default
# llama-cpp-python CPU wheel (--py 312) and llama.cpp CPU archive with the pinned host
# toolchain (toolchains/linux-gcc.toml, with the pinned CMake and Ninja; CC/CXX unset),
# prints their sha256, and, given the other machine's dist dir, reproduces each of its
# manifests here with `reproduce --strict`.
#
#   bench/cross_machine.sh XTASK OUT [OTHER_DIST]
#
# Optional:
# - SKIP_CPU=1 builds neither CPU artifact (with the options below);
# - CUDA_ARCH=90 also builds the CUDA wheel for that arch (into $OUT/dist-cuda);
# - SMOKE=1 installs that CUDA wheel into $OUT/site and generates 16 greedy tokens of a tiny
#   model on the GPU and on the CPU (tests/e2e/smoke_llama_cpp_python.py): they must agree;
# - GCC_BENCH=1 builds the archive with the system g++ (--host-cc) and runs llama-bench on
#   both archives, alternating (needs python3 with numpy for the model).
set -euo pipefail
bin=$(realpath "$1")
out=$(realpath -m "$2")
other=${3:+$(realpath "$3")}
cd "$(dirname "$0")/.."
export LLAMA_FORGE_BUILD_DIR=$out/work
mkdir -p "$out"
build() {
    local name=$1
    shift
    if ! env -u CC -u CXX "$bin" "$@" >"$out/$name.log" 2>&1; then
        tail -30 "$out/$name.log"
        echo "cross_machine: $name failed: $*" >&2
        exit 1
    fi
}
if [ "${SKIP_CPU:-}" != 1 ]; then
    start=$(date +%s)
    build wheel wheel llama-cpp-python --py 312 --dist "$out/dist"
    echo "wheel: $(($(date +%s) - start)) s"
    start=$(date +%s)
    build archive build llama.cpp --dist "$out/dist"
    echo "archive: $(($(date +%s) - start)) s"
    (cd "$out/dist" && sha256sum -- *.whl *.tar.gz)
fi
if [ -n "${CUDA_ARCH:-}" ]; then
    start=$(date +%s)
    build cuda wheel llama-cpp-python --py 312 --arch "$CUDA_ARCH" --dist "$out/dist-cuda"
    echo "CUDA wheel --arch $CUDA_ARCH: $(($(date +%s) - start)) s"
    (cd "$out/dist-cuda" && sha256sum -- *.whl)
fi
if [ "${SMOKE:-}" = 1 ]; then
    gguf=$(ls -d "${LLAMA_FORGE_STABLE_DIR:-/tmp/llama-forge}"/src-*/src/vendor/llama.cpp/gguf-py | head -1)
    python3 tests/e2e/make_tiny_gguf.py "$out/tiny.gguf" --seed 0 --gguf-py "$gguf" | tail -1
    python3 -m pip install -q --no-deps --no-index --target "$out/site" "$out"/dist-cuda/*.whl ${SMOKE_WHEELS:-}
    for layers in 99 0; do
        PYTHONPATH=$out/site python3 tests/e2e/smoke_llama_cpp_python.py "$out/tiny.gguf" --n-gpu-layers "$layers" --tokens 16 \
            $([ "$layers" = 99 ] && echo --require-gpu-offload) 2>&1 | grep -E '^(TOKENS|GPU_OFFLOAD|GGML_MODULES|SMOKE)' | sed "s/^/n_gpu_layers=$layers: /"
    done
fi
if [ -n "$other" ]; then
    for m in "$other"/*.manifest.json; do
        echo "== reproduce --strict $(basename "$m")"
        env -u CC -u CXX "$bin" reproduce --strict "$m" --dist "$out/reproduce" 2>&1 | tail -8
    done
fi
if [ "${GCC_BENCH:-}" = 1 ]; then
    start=$(date +%s)
    build archive-gcc build llama.cpp --host-cc /usr/bin/g++ --dist "$out/dist-gcc"
    echo "archive with g++: $(($(date +%s) - start)) s"
    for d in dist dist-gcc; do
        mkdir -p "$out/$d-x" && tar xzf "$out/$d"/*.tar.gz -C "$out/$d-x"
    done
    model=$out/model.gguf
    gguf=$(ls -d "${LLAMA_FORGE_STABLE_DIR:-/tmp/llama-forge}"/src-*/src/vendor/llama.cpp/gguf-py | head -1)
    python3 tests/e2e/make_tiny_gguf.py "$out/m-f32.gguf" --shape 16,2048,16,5632 --seed 0 --gguf-py "$gguf" | tail -1
    "$out"/dist-x/*/llama-quantize "$out/m-f32.gguf" "$model" q4_0 >/dev/null 2>&1
    threads=$(nproc)
    for round in 1 2; do
        for d in dist dist-gcc; do
            echo "== $d round $round"
            "$out/$d-x"/*/llama-bench -m "$model" -t "$threads" -p 256 -n 64 -r 3 -o md 2>/dev/null | grep -E "pp256|tg64"
        done
    done
fi
