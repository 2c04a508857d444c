#!/usr/bin/env bash
# GPU-machine benchmark and proof run (see BENCHMARKS.md). Runs from the repo
# root of a copy that carries .dev/ (xtask binary, the 0.3.16 sdist, wheels the
# machine lacks) and vendor/cache/tools/patchelf-*. No network needed.
#
#   bench/gpu_wheel.sh build ARCH   # ours vs pip wheel for ARCH: time, size, cuobjdump, NEEDED
#   bench/gpu_wheel.sh run ARCH     # install each wheel, load the tiny model on the GPU, tokens + tok/s
#   bench/gpu_wheel.sh doctor ARCH  # `xtask doctor` on this GPU with our ARCH wheel installed in a fresh venv
#
# VERSION (default 0.3.16) picks the release, SDIST its sdist (default .dev/llama_cpp_python-$VERSION.tar.gz,
# which may be a trimmed copy), OURS_ONLY=1 skips the pip wheel baseline; in run
# mode WHO="old ours" runs the wheels in $work/old-ARCH and $work/ours-ARCH (two builds of ours).
# CUDA=13.5 builds ours with `--cuda 13.5` (hermetic, from the pinned wheels in $LLAMA_FORGE_CACHE's
# downloads) into ours-ARCH-cuda13.5; in run mode it installs that wheel into a fresh venv
# (--system-site-packages) with its runtime wheels taken from the download cache, so the
# system Python keeps its own CUDA runtime for the default build's run.
# Writes everything under $OUT (or /tmp/gpu-out).
set -uo pipefail
mode=$1; arch=$2
out=${OUT:-/tmp/gpu-out}; mkdir -p "$out"
export LLAMA_FORGE_ROOT=$PWD
X=$PWD/.dev/xtask
tag=${CUDA:+-cuda$CUDA}
cuda_args=${CUDA:+--cuda $CUDA}
# HOST_CC=/usr/bin/g++: the machine's compiler (the offline GPU machine cannot fetch the
# pinned toolchain's packages).
host_cc=${HOST_CC:+--host-cc $HOST_CC}
VERSION=${VERSION:-0.3.16}
SDIST=${SDIST:-$PWD/.dev/llama_cpp_python-$VERSION.tar.gz}
PY=$(command -v python3)
pyv=$($PY -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
work=/tmp/gpu-work; mkdir -p "$work"
log() { echo "$*" | tee -a "$out/results.txt"; }

if [ "$mode" = build ]; then
  log "== machine: $(nvidia-smi -L | head -1); $(nproc) cores; $(nvcc --version | tail -2 | head -1); $(gcc --version | head -1); $(cmake --version | head -1)"
  t0=$(date +%s.%N)
  $X wheel llama-cpp-python --version "$VERSION" --arch "$arch" --py "$pyv" --source "$SDIST" $cuda_args $host_cc --dist "$work/ours-$arch$tag" >"$out/ours-$arch$tag.log" 2>&1
  rc=$?; t1=$(date +%s.%N)
  log "ours --arch $arch $cuda_args: rc=$rc $(python3 -c "print(f'{$t1-$t0:.0f} s')")"
  tail -15 "$out/ours-$arch$tag.log"
  for w in "$work/ours-$arch$tag"/*.whl; do
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
    $X verify "$w" | tee -a "$out/results.txt"
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
  gguf=$(for d in "${LLAMA_FORGE_STABLE_DIR:-/tmp/llama-forge}"/src-*/src; do grep -qx "Version: $VERSION" "$d/PKG-INFO" 2>/dev/null && echo "$d/vendor/llama.cpp/gguf-py"; done | head -1)
  $PY tests/e2e/make_tiny_gguf.py "$work/tiny.gguf" --seed 0 --gguf-py "$gguf" | tee -a "$out/results.txt"
  links="--find-links $PWD/.dev"
  target=()
  if [ -n "$tag" ]; then
    # The CUDA release's own runtime wheels, in a dir of their own on PYTHONPATH (the system
    # Python keeps its CUDA runtime): the wheel and the two runtime wheels it requires.
    links="$links $(for d in "${LLAMA_FORGE_CACHE:-$PWD/vendor/cache}"/downloads/*/; do printf -- '--find-links %s ' "$d"; done)"
    site=$work/site$tag; rm -rf "$site"
    target=(--target "$site" --no-deps $($PY -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
print(" ".join(l.split(": ", 1)[1].replace(" ", "") for l in z.read(meta).decode().splitlines() if l.startswith("Requires-Dist: nvidia-")))' "$(ls "$work/ours-$arch$tag"/*.whl | head -1)"))
    export PYTHONPATH=$site
  fi
  for who in ${WHO:-ours pip}; do
    w=$(ls "$work/$who-$arch$tag"/*.whl 2>/dev/null | head -1)
    [ -n "$w" ] || continue
    $PY -m pip uninstall -y -q llama_cpp_python >/dev/null 2>&1
    # A real, offline pip install into the environment that has NVIDIA's runtime wheels:
    # the Requires-Dist lines must resolve against what is installed.
    $PY -m pip install -q --no-index $links "${target[@]}" "$w" >"$out/install-$who$tag.log" 2>&1 || { log "$who: pip install failed"; cat "$out/install-$who$tag.log"; continue; }
    log "== $who $(basename "$w") ($PY; $($PY -m pip list 2>/dev/null | grep -E '^nvidia-(cuda-runtime|cublas) ' | tr -s ' ' | tr '\n' ' '))"
    (cd /tmp && $PY "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" "$work/tiny.gguf" --tokens 16 --n-gpu-layers -1 --require-gpu-offload --verbose >"$out/smoke-$who-$arch$tag.log" 2>&1); rc=$?
    log "smoke rc=$rc: $(grep -E '^(TOKENS|TOKENS_PER_S|LOAD_S|GPU_OFFLOAD_SUPPORTED):' "$out/smoke-$who-$arch$tag.log" | tr '\n' ' ')"
    grep -E "offloaded|CUDA0|using device|^GGML_MODULES" "$out/smoke-$who-$arch$tag.log" | head -5 | tee -a "$out/results.txt"
    # The same generation on the CPU only: the device token check is GPU tokens == CPU tokens.
    (cd /tmp && $PY "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" "$work/tiny.gguf" --tokens 16 --n-gpu-layers 0 >"$out/smoke-$who-$arch$tag-cpu.log" 2>&1)
    log "cpu-only: $(grep -E '^(TOKENS|GGML_MODULES):' "$out/smoke-$who-$arch$tag-cpu.log" | tr '\n' ' ')"
    for i in 1 2 3; do
      r=$(cd /tmp && $PY "$OLDPWD/tests/e2e/smoke_llama_cpp_python.py" "$work/tiny.gguf" --tokens 100 --n-ctx 256 --n-gpu-layers -1 2>/dev/null | grep -E "^(TOKENS_PER_S|LOAD_S):" | tr "\n" " ")
      log "$who$tag run $i: $r"
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

# `cargo xtask doctor` on this GPU with our wheel for ARCH installed (no deps, from the
# wheel file only) in a fresh venv: its text and JSON reports and its exit code.
if [ "$mode" = doctor ]; then
  for w in "$work/ours-$arch$tag"/*.whl; do
    v=$work/doctor-venv-$arch$tag; rm -rf "$v"; $PY -m venv "$v"
    "$v/bin/python" -m pip install -q --no-deps --no-index "$w" >"$out/doctor-pip-$arch$tag.log" 2>&1
    $X doctor --python "$v/bin/python" >"$out/doctor-$arch$tag.txt" 2>&1; rc=$?
    $X doctor --python "$v/bin/python" --json >"$out/doctor-$arch$tag.json" 2>/dev/null
    log "doctor with $(basename "$w") installed: exit $rc"
    cat "$out/doctor-$arch$tag.txt"
  done
fi
