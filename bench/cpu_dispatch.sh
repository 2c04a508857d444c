#!/usr/bin/env bash
# CPU speed of the default llama.cpp archive (GGML_BACKEND_DL + the shipped CPU
# variants, chosen at run time) against a -march=native build of the same source,
# in one run on one machine (BENCHMARKS.md, "CPU: runtime dispatch against -march=native").
# Run from the repo root of a copy that carries .dev/ (the xtask binary, the sdist);
# needs python3 with numpy, cmake, ninja and a C++ compiler. No network.
#
#   OUT=/tmp/cpu-out bench/cpu_dispatch.sh
#
# The model: make_tiny_gguf.py --shape 16,2048,16,5632 (a seeded 0.82B llama-shaped
# model), quantized to q4_0; llama-bench -t $(nproc) -p 256 -n 64 -r 3.
set -uo pipefail
out=${OUT:-/tmp/cpu-out}; mkdir -p "$out"
export LLAMA_FORGE_ROOT=$PWD
X=$PWD/.dev/xtask
VERSION=${VERSION:-0.3.36}
SDIST=${SDIST:-$PWD/.dev/llama_cpp_python-$VERSION.tar.gz}
work=${WORK:-/tmp/cpu-work}; rm -rf "$work"; mkdir -p "$work"
log() { echo "$*" | tee -a "$out/results.txt"; }
log "== $(lscpu | sed -n 's/^Model name: *//p'); $(nproc) cores; $(grep -o -w 'avx2\|avx_vnni\|avx512f\|avx512vbmi\|avx512_vnni\|avx512_bf16\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
log "== $(gcc --version | head -1); $(cmake --version | head -1)"

# Both builds side by side: ours (the default plan) and llama.cpp's native build.
t0=$(date +%s)
( $X build llama.cpp --version "$VERSION" --source "$SDIST" --dist "$work/ours" >"$out/ours-build.log" 2>&1
  echo "ours rc=$? $(( $(date +%s) - t0 )) s" >>"$out/ours-build.log" ) &
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
tail -1 "$out/ours-build.log" | tee -a "$out/results.txt"
tail -1 "$out/native-build.log" | tee -a "$out/results.txt"
a=$(ls "$work"/ours/*.tar.gz | head -1); log "ours: $(basename "$a") $(stat -c %s "$a") bytes"
mkdir -p "$work/ours-x" && tar xzf "$a" -C "$work/ours-x"; ours=$(ls -d "$work"/ours-x/*/ | head -1)
log "ours loads: $(python3 tests/e2e/ggml_modules.py "$ours")"
"$work/native/b/bin/llama-quantize" "$work/m-f32.gguf" "$work/m-q4_0.gguf" q4_0 >"$out/quantize.log" 2>&1
rm -f "$work/m-f32.gguf"
for round in 1 2; do
  for who in ours native; do
    bin=$ours; [ "$who" = native ] && bin=$work/native/b/bin
    "$bin/llama-bench" -m "$work/m-q4_0.gguf" -t "$(nproc)" -p 256 -n 64 -r 3 -o md >"$out/bench-$who-$round.md" 2>"$out/bench-$who-$round.err"
    log "$who round $round: $(grep -E 'pp256|tg64' "$out/bench-$who-$round.md" | awk -F'|' '{gsub(/ /,"",$(NF-2)); gsub(/^ +| +$/,"",$(NF-1)); printf "%s %s; ", $(NF-2), $(NF-1)}')"
  done
done
