#!/usr/bin/env bash
# GPU-machine measurement of the CUDA wheel's size levers (see BENCHMARKS.md, issue 11).
# Run from the repo root of a device copy carrying .dev/ (stripped xtask, trimmed 0.3.36 sdist),
# after `bench/gpu_wheel.sh build 90 && bench/gpu_wheel.sh run 90` gave the baseline in the same lease.
#
#   HOST_OPT=O3 bench/size_levers.sh   # -ffunction-sections/-fdata-sections everywhere, --gc-sections
#   HOST_OPT=Os bench/size_levers.sh   # the same, and nvcc's host passes at -Os instead of -O3
#
# It appends recipe defines to this copy's recipes/llama-cpp-python.toml (never commit that), builds
# and runs the wheel with gpu_wheel.sh, relinks libggml-cuda.so with gold's --icf=all, and runs the
# wheel with that library swapped in. Sizes: raw, deflated (gzip -6), stripped and deflated.
# BASELINE_WHEEL=path (the default plan's wheel, saved from gpu_wheel.sh's build) also compares
# the two wheels on a 0.82B q4_0 model (make_tiny_gguf.py --shape 16,2048,16,5632, quantized
# through the wheel's llama_model_quantize), installed in turn A B A B, two runs each.
set -uo pipefail
export LLAMA_FORGE_CACHE=${LLAMA_FORGE_CACHE:-$PWD/vendor/cache}
X=$PWD/.dev/xtask; S=$PWD/.dev/llama_cpp_python-0.3.36.tar.gz; out=${OUT:-/tmp/gpu-out}; mkdir -p "$out"
PY=$(command -v python3)
$PY - "$($X plan llama-cpp-python --version 0.3.36 --arch 90 --py 312 --source "$S" --json)" "${HOST_OPT:-O3}" <<'PY'
import json, sys
plan, opt = json.loads(sys.argv[1]), sys.argv[2]
val = {d["name"]: d["value"] for d in plan["defines"]}
extra = {
    "CMAKE_C_FLAGS": val["CMAKE_C_FLAGS"] + " -ffunction-sections -fdata-sections",
    "CMAKE_CXX_FLAGS": val["CMAKE_CXX_FLAGS"] + " -ffunction-sections -fdata-sections",
    "CMAKE_SHARED_LINKER_FLAGS": "-Wl,--gc-sections",
    "CMAKE_CUDA_FLAGS": val["CMAKE_CUDA_FLAGS"] + " -Xcompiler=-ffunction-sections -Xcompiler=-fdata-sections",
}
if opt == "Os":
    # nvcc's -O is the host passes' level and comes after -Xcompiler flags: leave it out.
    extra["CMAKE_CUDA_FLAGS_RELEASE"] = "-DNDEBUG -Xcompiler=-Os"
with open("recipes/llama-cpp-python.toml", "a") as f:
    for k, v in extra.items():
        f.write(f'\n[[cmake.define]]\nname = "{k}"\nvalue = {json.dumps(v)}\nreason = "size experiment"\n')
PY
rm -rf /tmp/gpu-work/ours-90
VERSION=0.3.36 OURS_ONLY=1 bash bench/gpu_wheel.sh build 90
bd=$(grep -l 'gc-sections' .build/*/build/CMakeCache.txt | head -1 | xargs dirname)
link=$(cd "$bd" && ninja -t commands | grep -E -- '-o [^ ]*libggml-cuda\.so' | tail -1)
lib=$(echo "$link" | grep -oE -- '-o [^ ]*libggml-cuda\.so' | cut -c4-)
cu=$(cd "$bd" && ninja -t commands | grep -m1 -E 'nvcc.* -c .*\.cu')
echo "host flags nvcc passes: $(cd "$bd" && eval "$cu --dryrun" 2>&1 | grep -E '(gcc|g\+\+|cc1plus)' | grep -v cicc | head -2 | grep -oE ' -O[0-3s]| -ffunction-sections' | tr '\n' ' ')" | tee -a "$out/results.txt"
mkdir -p /tmp/relink
sz() { strip -o /tmp/relink/s.so "$1"; echo "$2: raw $(stat -c %s "$1") deflated $(gzip -6 -c "$1" | wc -c) stripped+deflated $(gzip -6 -c /tmp/relink/s.so | wc -c); $(size -A "$1" | awk '$2 > 300000 {printf "%s %d ", $1, $2}')" | tee -a "$out/results.txt"; }
sz "$bd/$lib" "libggml-cuda.so as built"
(cd "$bd" && eval "$(echo "$link" | sed "s#-o $lib#-fuse-ld=gold -Wl,--icf=all -o /tmp/relink/icf.so#")") && sz /tmp/relink/icf.so "libggml-cuda.so relinked with gold --icf=all"
VERSION=0.3.36 bash bench/gpu_wheel.sh run 90
$PY -m pip install -q --no-index --find-links .dev /tmp/gpu-work/ours-90/*.whl
site=$($PY -c 'import importlib.util,os; print(os.path.dirname(importlib.util.find_spec("llama_cpp").origin))')/lib
cp /tmp/relink/icf.so "$site/libggml-cuda.so"
for i in 1 2; do
  r=$(cd /tmp && $PY "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" /tmp/gpu-work/tiny.gguf --tokens 100 --n-ctx 256 --n-gpu-layers -1 2>/dev/null | grep -E '^(TOKENS|TOKENS_PER_S|LOAD_S):' | tr '\n' ' ')
  echo "ICF run $i: $r" | tee -a "$out/results.txt"
done
$PY -m pip uninstall -y -q llama_cpp_python
[ -n "${BASELINE_WHEEL:-}" ] || exit 0
$PY -m pip install -q --no-index --find-links .dev "$BASELINE_WHEEL"
bash bench/q4_model.sh "$PY"
for round in 1 2; do
  for who in baseline levers; do
    w=$BASELINE_WHEEL; [ $who = levers ] && w=$(ls /tmp/gpu-work/ours-90/*.whl)
    $PY -m pip install -q --no-index --find-links .dev --force-reinstall --no-deps "$w"
    for i in 1 2; do
      r=$(cd /tmp && $PY "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" /tmp/m-q4.gguf --tokens 100 --n-ctx 256 --n-gpu-layers -1 --no-highlevel-check 2>&1 | grep -E '^(TOKENS_PER_S|LOAD_S|SMOKE_OK)' | tr '\n' ' ')
      echo "$who (round $round) 0.82B q4_0 run $i: $r" | tee -a "$out/results.txt"
    done
  done
done
$PY -m pip uninstall -y -q llama_cpp_python
