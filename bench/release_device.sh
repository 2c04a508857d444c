#!/usr/bin/env bash
# bench/release.sh for the GPU machine (device tool, no cargo, no internet): the
# stripped binary and the 0.3.16 sdist come in .dev/. Times one wheel against a
# release of N Pythons, both cold, then the release's no-op rerun and both again
# with the native builds done (what is left is packaging).
set -euo pipefail
n=${1:-5}
ver=0.3.16
sdist=$PWD/.dev/llama_cpp_python-$ver.tar.gz
pys=$(python3 -c "print(', '.join(f'\"3{10+i}\"' for i in range($n)))")
work=$(mktemp -d /tmp/bench-release.XXXXXX)
root=$work/checkout; mkdir -p $root/vendor/cache; cp -r recipes toolchains $root/
x="env LLAMA_FORGE_ROOT=$root $PWD/.dev/xtask"
cat >"$work/cpu.toml" <<TOML
recipe = "llama-cpp-python"
versions = ["$ver"]
arch = ["cpu"]
python = [$pys]
source = "$sdist"
TOML
command -v ccache >/dev/null && echo "note: ccache is on PATH (the plan sets GGML_CCACHE=OFF)"
t0=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/one" $x wheel llama-cpp-python --version $ver --arch cpu --py 312 --source $sdist --dist "$work/dist-one" >"$OUT/one.log" 2>&1
t1=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/rel" $x release "$work/cpu.toml" --dist "$work/dist-rel" >"$OUT/rel.log" 2>&1
t2=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/rel" $x release "$work/cpu.toml" --dist "$work/dist-rel" >"$OUT/noop.log" 2>&1
t3=$(date +%s.%N)
rm "$work"/dist-one/*.whl "$work"/dist-rel/*.whl
LLAMA_FORGE_BUILD_DIR="$work/one" $x wheel llama-cpp-python --version $ver --arch cpu --py 312 --source $sdist --dist "$work/dist-one" >"$OUT/one-warm.log" 2>&1
t4=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/rel" $x release "$work/cpu.toml" --dist "$work/dist-rel" >"$OUT/rel-warm.log" 2>&1
t5=$(date +%s.%N)
builds=$(grep -c "^building llama-cpp-python" "$work/rel/release-logs/$ver-cpu.log")
wheels=$(ls "$work"/dist-rel/*.whl | wc -l)
(cd "$work/dist-rel" && sha256sum -c --quiet SHA256SUMS && echo "SHA256SUMS ok")
python3 - "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$n" "$builds" "$wheels" <<'PY'
import os, sys
t0, t1, t2, t3, t4, t5 = map(float, sys.argv[1:7])
n, builds, wheels = sys.argv[7:10]
one, rel, noop, one_w, rel_w = t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4
print(f"llama-cpp-python CPU, {os.cpu_count()} cores")
print(f"| `wheel --py 312`, 1 wheel, cold | {one:.1f} s | 1.00 |")
print(f"| `release`, {n} Pythons ({builds} native build, {wheels} wheels), cold | {rel:.1f} s | {rel/one:.3f} |")
print(f"| `release`, no-op rerun | {noop:.2f} s | |")
print(f"| `wheel`, 1 wheel, native build done | {one_w:.1f} s | |")
print(f"| `release`, {n} wheels, native build done | {rel_w:.1f} s | |")
PY
tail -8 "$OUT/noop.log"
