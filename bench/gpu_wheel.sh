#!/usr/bin/env bash
# GPU-machine benchmark and proof run (see BENCHMARKS.md). Runs from the repo
# root of a copy that carries .dev/ (xtask binary, the 0.3.16 sdist, wheels the
# machine lacks) and vendor/cache/tools/patchelf-*. No network needed.
#
#   bench/gpu_wheel.sh build ARCH   # ours vs pip wheel for ARCH: time, size, cuobjdump, NEEDED
#   bench/gpu_wheel.sh run ARCH     # install each wheel, load the tiny model on the GPU, tokens + tok/s
#
# VERSION (default 0.3.16) picks the release, SDIST its sdist (default .dev/llama_cpp_python-$VERSION.tar.gz,
# which may be a trimmed copy), OURS_ONLY=1 skips the pip wheel baseline.
# Writes everything under $OUT (or /tmp/gpu-out).
set -uo pipefail
mode=$1; arch=$2
out=${OUT:-/tmp/gpu-out}; mkdir -p "$out"
export LLAMA_FORGE_ROOT=$PWD
X=$PWD/.dev/xtask
VERSION=${VERSION:-0.3.16}
SDIST=${SDIST:-$PWD/.dev/llama_cpp_python-$VERSION.tar.gz}
PY=$(command -v python3)
pyv=$($PY -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
work=/tmp/gpu-work; mkdir -p "$work"
log() { echo "$*" | tee -a "$out/results.txt"; }

if [ "$mode" = build ]; then
  log "== machine: $(nvidia-smi -L | head -1); $(nproc) cores; $(nvcc --version | tail -2 | head -1); $(gcc --version | head -1); $(cmake --version | head -1)"
  t0=$(date +%s.%N)
  $X wheel llama-cpp-python --version "$VERSION" --arch "$arch" --py "$pyv" --source "$SDIST" --dist "$work/ours-$arch" >"$out/ours-$arch.log" 2>&1
  rc=$?; t1=$(date +%s.%N)
  log "ours --arch $arch: rc=$rc $(python3 -c "print(f'{$t1-$t0:.0f} s')")"
  tail -15 "$out/ours-$arch.log"
  for w in "$work/ours-$arch"/*.whl; do
    log "ours wheel: $(basename "$w") $(stat -c %s "$w") bytes"
    cp "$w.manifest.json" "$out/" 2>/dev/null
    d=$(mktemp -d); python3 -m zipfile -e "$w" "$d"
    for so in "$d"/llama_cpp/lib/*.so; do log "  $(basename "$so") $(stat -c %s "$so") RUNPATH=$(readelf -d "$so" | sed -n 's/.*RUNPATH.*\[\(.*\)\]/\1/p')"; done
    log "  cuobjdump --list-elf: $(cuobjdump --list-elf "$d"/llama_cpp/lib/libggml-cuda.so | awk '{print $NF}' | sed 's/.*\.\(sm_[0-9a-z]*\)\.cubin/\1/' | sort | uniq -c | tr '\n' ' ')"
    log "  cuobjdump --list-ptx: $(cuobjdump --list-ptx "$d"/llama_cpp/lib/libggml-cuda.so | wc -l) entries"
    # Where the bytes are: each library's big sections, deflated size, and deflated size stripped.
    for so in "$d"/llama_cpp/lib/*.so; do
      strip -o "$work/stripped.so" "$so"
      log "  size $(basename "$so"): raw $(stat -c %s "$so"), deflated $(gzip -6 -c "$so" | wc -c), stripped+deflated $(gzip -6 -c "$work/stripped.so" | wc -c); $(size -A "$so" | awk '$2 > 500000 {printf "%s %d ", $1, $2}')"
    done
    log "  NEEDED outside the wheel: $(for so in "$d"/llama_cpp/lib/*.so; do readelf -d "$so" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'; done | sort -u | while read -r n; do [ -e "$d/llama_cpp/lib/$n" ] || printf '%s ' "$n"; done)"
    $X verify "$w" --cuobjdump "$(command -v cuobjdump)" | tee -a "$out/results.txt"
  done
  [ "${OURS_ONLY:-0}" = 1 ] && exit 0
  pip_arch=${arch}
  t2=$(date +%s.%N)
  CMAKE_ARGS="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$pip_arch" $PY -m pip wheel --no-deps --no-build-isolation -w "$work/pip-$arch" "$SDIST" >"$out/pip-$arch.log" 2>&1
  rc=$?; t3=$(date +%s.%N)
  log "pip wheel CMAKE_CUDA_ARCHITECTURES=$pip_arch: rc=$rc $(python3 -c "print(f'{$t3-$t2:.0f} s')")"
  for w in "$work/pip-$arch"/*.whl; do
    log "pip wheel: $(basename "$w") $(stat -c %s "$w") bytes"
    d=$(mktemp -d); python3 -m zipfile -e "$w" "$d"
    log "  files: $(find "$d" -name '*.so*' | wc -l) shared-library files; libggml-cuda.so copies: $(find "$d" -name 'libggml-cuda.so' | wc -l)"
    log "  cuobjdump --list-elf: $(cuobjdump --list-elf "$d"/llama_cpp/lib/libggml-cuda.so | awk '{print $NF}' | sed 's/.*\.\(sm_[0-9a-z]*\)\.cubin/\1/' | sort | uniq -c | tr '\n' ' ')"
    log "  cuobjdump --list-ptx: $(cuobjdump --list-ptx "$d"/llama_cpp/lib/libggml-cuda.so | wc -l) entries"
  done
  exit 0
fi

if [ "$mode" = run ]; then
  gguf=$(ls -d "${LLAMA_FORGE_STABLE_DIR:-/tmp/llama-forge}"/llama-cpp-python-"$VERSION"-*/src/vendor/llama.cpp/gguf-py | head -1)
  $PY tests/e2e/make_tiny_gguf.py "$work/tiny.gguf" --seed 0 --gguf-py "$gguf" | tee -a "$out/results.txt"
  for who in ours pip; do
    w=$(ls "$work/$who-$arch"/*.whl 2>/dev/null | head -1)
    [ -n "$w" ] || continue
    $PY -m pip uninstall -y -q llama_cpp_python >/dev/null 2>&1
    # A real, offline pip install into the environment that has NVIDIA's runtime wheels:
    # the Requires-Dist lines must resolve against what is installed.
    $PY -m pip install -q --no-index --find-links "$PWD/.dev" "$w" >"$out/install-$who.log" 2>&1 || { log "$who: pip install failed"; cat "$out/install-$who.log"; continue; }
    log "== $who $(basename "$w")"
    (cd /tmp && $PY "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" "$work/tiny.gguf" --tokens 16 --n-gpu-layers -1 --require-gpu-offload --verbose >"$out/smoke-$who-$arch.log" 2>&1); rc=$?
    log "smoke rc=$rc: $(grep -E '^(TOKENS|TOKENS_PER_S|LOAD_S|GPU_OFFLOAD_SUPPORTED):' "$out/smoke-$who-$arch.log" | tr '\n' ' ')"
    grep -E "offloaded|CUDA0|using device|^GGML_MODULES" "$out/smoke-$who-$arch.log" | head -5 | tee -a "$out/results.txt"
    # The same generation on the CPU only: the device token check is GPU tokens == CPU tokens.
    (cd /tmp && $PY "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" "$work/tiny.gguf" --tokens 16 --n-gpu-layers 0 >"$out/smoke-$who-$arch-cpu.log" 2>&1)
    log "cpu-only: $(grep -E '^(TOKENS|GGML_MODULES):' "$out/smoke-$who-$arch-cpu.log" | tr '\n' ' ')"
    for i in 1 2 3; do
      r=$(cd /tmp && $PY "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" "$work/tiny.gguf" --tokens 100 --n-ctx 256 --n-gpu-layers -1 2>/dev/null | grep -E "^(TOKENS_PER_S|LOAD_S):" | tr "\n" " ")
      log "$who run $i: $r"
    done
  done
  $PY -m pip uninstall -y -q llama_cpp_python >/dev/null 2>&1
fi

if [ "$mode" = inspect ]; then
  for w in "$work"/*-"$arch"/*.whl; do
    d=$(mktemp -d); python3 -m zipfile -e "$w" "$d"
    log "== $(basename "$w") $(stat -c %s "$w") bytes; $(find "$d" -name '*.so*' | wc -l) shared-library files"
    for so in $(find "$d" -name '*.so*' | sort); do log "  ${so#$d/} $(stat -c %s "$so") RUNPATH=$(readelf -d "$so" | sed -n 's/.*R.*PATH.*\[\(.*\)\]/\1/p')"; done
    cu=$(find "$d" -name 'libggml-cuda.so' | head -1)
    log "  cuobjdump --list-elf: $(cuobjdump --list-elf "$cu" | awk '{print $NF}' | sed 's/.*\.\(sm_[0-9a-z]*\)\.cubin/\1/' | sort | uniq -c | tr '\n' ' ')"
    log "  cuobjdump --list-ptx: $(cuobjdump --list-ptx "$cu" | awk '{print $NF}' | sed 's/.*\.\(sm_[0-9a-z]*\)\.ptx/\1/' | sort | uniq -c | tr '\n' ' ')"
  done
fi
