#!/usr/bin/env bash
# Builds a fixed set of artifacts with one xtask binary and prints their sha256s, so that
# two versions of the tool can be compared byte for byte (BENCHMARKS.md, "Identity").
#   bash bench/identity.sh BIN OUT        # mini fixtures, CUDA 13.1 mini, real CPU archive + wheel
#   MINI_ONLY=1 bash bench/identity.sh BIN OUT
set -euo pipefail
bin=$(realpath "$1")
out=$(realpath -m "$2")
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export LLAMA_FORGE_CACHE=${LLAMA_FORGE_CACHE:-$repo/vendor/cache}
export LLAMA_FORGE_BUILD_DIR=$out/work
unset CUDACXX CUDA_PATH CUDA_HOME
mkdir -p "$out"
run() {
    local name=$1
    shift
    if ! "$bin" "$@" --dist "$out/$name" >"$out/$name.log" 2>&1; then
        tail -30 "$out/$name.log"
        echo "identity: $name failed: $bin $*" >&2
        exit 1
    fi
}
run mini-archive build llama.cpp --source tests/fixtures/mini-llama
run mini-wheel wheel llama-cpp-python --py 311,312 --source tests/fixtures/mini-llama-python
run mini-cuda build llama.cpp --arch 120 --cuda 13.1 --source tests/fixtures/mini-llama
if [ "${MINI_ONLY:-}" != 1 ]; then
    run cpu-archive build llama.cpp
    run cpu-wheel wheel llama-cpp-python --py 311
fi
cd "$out"
sha256sum -- */*.whl */*.tar.gz
