#!/usr/bin/env bash
# Benchmark: a release of N Python versions from one native build, against one
# wheel, both cold; then the release's no-op rerun. Prints a Markdown table.
#
#   bench/release.sh [N]      (default 5: Python 3.10 to 3.14)
#
# Both runs start from an empty build dir and dist; the source download and the
# pinned tools come from vendor/cache (warm for both).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
ver=0.3.36
pys=$(python3 -c "print(', '.join(f'\"3{10+i}\"' for i in range($n)))")
py1=$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
work=$(mktemp -d /tmp/bench-release.XXXXXX)
trap 'rm -rf "$work"' EXIT

cargo build -q -p xtask
x=target/debug/xtask
cat >"$work/cpu.toml" <<TOML
recipe = "llama-cpp-python"
versions = ["$ver"]
arch = ["cpu"]
python = [$pys]
TOML

t0=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/one" $x wheel llama-cpp-python --version $ver --arch cpu --py "$py1" --dist "$work/dist-one" >"$work/one.log" 2>&1
t1=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/rel" $x release "$work/cpu.toml" --dist "$work/dist-rel" >"$work/rel.log" 2>&1
t2=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/rel" $x release "$work/cpu.toml" --dist "$work/dist-rel" >"$work/noop.log" 2>&1
t3=$(date +%s.%N)
# The same two with the native builds done and the wheels deleted: what is left
# is packaging (and Ninja's no-op), the part that grows with N.
rm "$work"/dist-one/*.whl "$work"/dist-rel/*.whl
LLAMA_FORGE_BUILD_DIR="$work/one" $x wheel llama-cpp-python --version $ver --arch cpu --py "$py1" --dist "$work/dist-one" >"$work/one-warm.log" 2>&1
t4=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/rel" $x release "$work/cpu.toml" --dist "$work/dist-rel" >"$work/rel-warm.log" 2>&1
t5=$(date +%s.%N)

builds=$(grep -c "^building llama-cpp-python" "$work/rel/release-logs/$ver-cpu.log")
wheels=$(ls "$work"/dist-rel/*.whl | wc -l)
python3 - "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$n" "$builds" "$wheels" <<'PY'
import os, sys
t0, t1, t2, t3, t4, t5 = map(float, sys.argv[1:7])
n, builds, wheels = sys.argv[7:10]
one, rel, noop, one_w, rel_w = t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4
print(f"llama-cpp-python CPU, {os.cpu_count()} cores")
print()
print(f"| | time | ratio |")
print(f"|---|---|---|")
print(f"| `wheel --py <host>`, 1 wheel, cold | {one:.0f} s | 1.00 |")
print(f"| `release`, {n} Pythons ({builds} native build, {wheels} wheels), cold | {rel:.0f} s | {rel/one:.2f} |")
print(f"| `release`, no-op rerun | {noop:.2f} s | |")
print(f"| `wheel`, 1 wheel, native build done | {one_w:.1f} s | |")
print(f"| `release`, {n} wheels, native build done | {rel_w:.1f} s | |")
print(f"| packaging {n} wheels instead of 1, relative to the cold wheel | +{rel_w-one_w:.1f} s | {(one+rel_w-one_w)/one:.3f} |")
PY
cat "$work/noop.log"
