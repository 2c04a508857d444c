#!/usr/bin/env bash
# CPU speed of the default llama.cpp archive (GGML_BACKEND_DL + the shipped CPU
# variants, chosen at run time) against a -march=native build of the same source,
# in one run on one machine (BENCHMARKS.md, "CPU: runtime dispatch against -march=native",
# "Hidden symbols and a section per function"). Run from the repo root of a copy that carries .dev/ (the
# tool as .dev/xtask or .dev/xtask.xz, the trimmed sdist, .dev/cache with the pinned
# CMake and Ninja wheels); needs python3 with numpy, cmake, ninja and a C++ compiler. No
# network, so ours is built with the machine's g++ (--host-cc), as native is.
#
#   OUT=/tmp/cpu-out [WHO="ours@xtask-prev ours native"] [THREADS=16] [ROUNDS=2] bench/cpu_dispatch.sh
#
# The model: make_tiny_gguf.py --shape 16,2048,16,5632 (a seeded 0.82B llama-shaped
# model), quantized to q4_0; llama-bench -t THREADS -p 256 -n 64 -r 3 on cores
# 0..THREADS-1, ROUNDS rounds, each build in turn.
set -uo pipefail
out=${OUT:-/tmp/cpu-out}; mkdir -p "$out"
export LLAMA_FORGE_ROOT=$PWD
VERSION=${VERSION:-0.3.36}
SDIST=${SDIST:-$PWD/.dev/llama_cpp_python-$VERSION.tar.gz}
work=${WORK:-/tmp/cpu-work}; rm -rf "$work"; mkdir -p "$work"
cp -a .dev/cache "$work/cache"
export LLAMA_FORGE_CACHE=$work/cache
unset CC CXX
log() { echo "$*" | tee -a "$out/results.txt"; }
log "== $(lscpu | sed -n 's/^Model name: *//p'); $(nproc) cores; $(grep -o -w 'avx2\|avx_vnni\|avx512f\|avx512vbmi\|avx512_vnni\|avx512_bf16\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
log "== $(gcc --version | head -1); $(cmake --version | head -1)"

# The builds side by side: each of WHO (default "ours native"): ours is the default plan
# of the carried tool (.dev/xtask), ours@NAME the same with .dev/NAME and its recipes
# (dev_recipes: the tool and recipes before a change, for an A/B in one lease), native
# llama.cpp's own -march=native build.
source "$PWD/bench/dev_tool.sh"
who=(${WHO:-ours native})
label() { echo "${1/@/-}"; }
t0=$(date +%s)
for spec in "${who[@]}"; do
  case $spec in
    ours*)
      case $spec in
        ours@*) x=$(dev_tool "${spec#ours@}"); recipes=$(dev_recipes "${spec#ours@}") ;;
        *) x=$(dev_tool xtask); recipes=$PWD/recipes ;;
      esac
      l=$(label "$spec")
      # --arch cpu: the GPU machine's default (`auto`) is its GPU's CUDA archive. A stable
      # dir of its own: two builds of one source would otherwise take turns.
      ( LLAMA_FORGE_RECIPES=$recipes LLAMA_FORGE_BUILD_DIR=$work/$l-work LLAMA_FORGE_STABLE_DIR=$work/$l-stable "$x" build llama.cpp --version "$VERSION" --source "$SDIST" --arch cpu --host-cc /usr/bin/g++ --dist "$work/$l" >"$out/$l-build.log" 2>&1
        echo "$l rc=$? $(( $(date +%s) - t0 )) s" >>"$out/$l-build.log" ) & ;;
  esac
done
mkdir -p "$work/native"
tar xzf "$SDIST" -C "$work/native" --strip-components=3 "llama_cpp_python-$VERSION/vendor/llama.cpp"
( cmake -S "$work/native" -B "$work/native/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_CUDA=OFF >"$out/native-build.log" 2>&1 &&
  cmake --build "$work/native/b" --target llama-bench llama-quantize >>"$out/native-build.log" 2>&1
  echo "native rc=$? $(( $(date +%s) - t0 )) s" >>"$out/native-build.log" ) &
python3 tests/e2e/make_tiny_gguf.py "$work/m-f32.gguf" --shape 16,2048,16,5632 --seed 0 \
  --gguf-py "$work/native/gguf-py" | tail -1 | tee -a "$out/results.txt"
wait
declare -A bin
for spec in "${who[@]}"; do
  l=$(label "$spec")
  tail -1 "$out/$l-build.log" | tee -a "$out/results.txt"
  case $spec in
    native) bin[$l]=$work/native/b/bin ;;
    *)
      a=$(ls "$work/$l"/*.tar.gz | head -1); log "$l: $(basename "$a") $(stat -c %s "$a") bytes"
      mkdir -p "$work/$l-x" && tar xzf "$a" -C "$work/$l-x"; bin[$l]=$(ls -d "$work/$l-x"/*/ | head -1)
      log "$l loads: $(python3 tests/e2e/ggml_modules.py "${bin[$l]}")" ;;
  esac
done
"$work/native/b/bin/llama-quantize" "$work/m-f32.gguf" "$work/m-q4_0.gguf" q4_0 >"$out/quantize.log" 2>&1
rm -f "$work/m-f32.gguf"
# llama-bench on THREADS cores (default 16: cores 0-15, the single-GPU machine's count),
# ROUNDS rounds (default 2), each build in turn: the machine's speed drifts by more than
# the builds differ over minutes, so many short interleaved rounds.
threads=${THREADS:-16}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for spec in "${who[@]}"; do
    l=$(label "$spec")
    taskset -c "0-$((threads - 1))" "${bin[$l]}/llama-bench" -m "$work/m-q4_0.gguf" -t "$threads" -p 256 -n 64 -r 3 -o md >"$out/bench-$l-$round.md" 2>"$out/bench-$l-$round.err"
    log "$l round $round: $(grep -E 'pp256|tg64' "$out/bench-$l-$round.md" | awk -F'|' '{gsub(/ /,"",$(NF-2)); gsub(/^ +| +$/,"",$(NF-1)); printf "%s %s; ", $(NF-2), $(NF-1)}')"
  done
done
# Each build's sums over all rounds, against native's.
python3 - "$out" "${who[@]/@/-}" <<'PY' | tee -a "$out/results.txt"
import re, sys, glob
out, labels = sys.argv[1], sys.argv[2:]
tot = {}
for l in labels:
    for f in glob.glob(f"{out}/bench-{l}-[0-9]*.md"):
        for line in open(f):
            m = re.search(r"\|\s*(pp256|tg64)\s*\|\s*([0-9.]+)", line)
            if m:
                tot.setdefault(l, {}).setdefault(m.group(1), 0.0)
                tot[l][m.group(1)] += float(m.group(2))
n = tot.get("native", {})
for l in labels:
    t = tot.get(l, {})
    print(l + ": " + "; ".join(f"{k} {t.get(k, 0):.1f}" + (f" ({t.get(k, 0) / n[k]:.3f}x native)" if n.get(k) else "") for k in ("pp256", "tg64")))
PY
