#!/usr/bin/env bash
# Benchmark: `cargo xtask wheel` against `pip wheel` of the same sdist with
# equivalent CMAKE_ARGS, on this machine, in one run. Prints a Markdown table.
#
#   bench/cpu_wheel.sh [VERSION]      (default 0.3.16)
#
# Both builds start from a cold build dir and use the same compiler, CMake
# and Ninja (the ones the tool picked: its plan names them); pip gets the
# same CPU baseline defines the plan gives CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
ver=${1:-0.3.16}
py=$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
work=$(mktemp -d /tmp/bench-cpu.XXXXXX)
trap 'rm -rf "$work"' EXIT

cargo build -q -p xtask
plan=$(cargo xtask plan llama-cpp-python --version "$ver" --py "$py" --json)
cmake_bin=$(python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["tools"]["cmake"]["path"])' <<<"$plan")
cmake_bin=${cmake_bin/\$\{CACHE\}/$PWD/vendor/cache}
ninja_bin=$(python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["tools"]["ninja"]["path"])' <<<"$plan")
ninja_bin=${ninja_bin/\$\{CACHE\}/$PWD/vendor/cache}
# The defines pip's build gets: the plan's, minus those naming our work dirs and tools.
cmake_args=$(python3 - "$plan" <<'PY'
import json, sys
p = json.loads(sys.argv[1])
skip = {"CMAKE_MAKE_PROGRAM", "CMAKE_INSTALL_PREFIX", "SKBUILD_PLATLIB_DIR", "CMAKE_C_FLAGS", "CMAKE_CXX_FLAGS"}
print(" ".join(f"-D{d['name']}={d['value']}" for d in p["defines"] if d["name"] not in skip))
PY
)
sdist=$(ls vendor/cache/downloads/*/llama_cpp_python-"$ver".tar.gz 2>/dev/null | head -1 || true)
if [ -z "$sdist" ]; then
  cargo xtask plan llama-cpp-python --version "$ver" --py "$py" >/dev/null
  sdist_url=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["source"]["location"])' <<<"$plan")
  curl -sSfL -o "$work/llama_cpp_python-$ver.tar.gz" "$sdist_url"; sdist="$work/llama_cpp_python-$ver.tar.gz"
fi

python3 -m venv "$work/pipenv"
"$work/pipenv/bin/pip" -q install --upgrade pip scikit-build-core pathspec packaging wheel >/dev/null
export PATH="$(dirname "$cmake_bin"):$(dirname "$ninja_bin"):$PATH"

t0=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/ours" cargo xtask wheel llama-cpp-python --version "$ver" --py "$py" --dist "$work/dist-ours" >"$work/ours.log" 2>&1
t1=$(date +%s.%N)
LLAMA_FORGE_BUILD_DIR="$work/ours" cargo xtask wheel llama-cpp-python --version "$ver" --py "$py" --dist "$work/dist-ours" >"$work/noop.log" 2>&1
t2=$(date +%s.%N)
CMAKE_ARGS="$cmake_args" "$work/pipenv/bin/pip" wheel --no-deps --no-build-isolation -w "$work/dist-pip" "$sdist" >"$work/pip.log" 2>&1
t3=$(date +%s.%N)

ours=$(ls "$work"/dist-ours/*.whl); pipw=$(ls "$work"/dist-pip/*.whl)
size() { stat -c %s "$1"; }
python3 - "$t0" "$t1" "$t2" "$t3" "$(size "$ours")" "$(size "$pipw")" "$ours" "$pipw" "$ver" <<'PY'
import sys, zipfile
t0, t1, t2, t3, so, sp = map(float, sys.argv[1:7])
ours, pipw, ver = sys.argv[7:10]
def libs(w):
    return sorted(i.filename for i in zipfile.ZipFile(w).infolist() if ".so" in i.filename)
print(f"llama-cpp-python {ver}, CPU, {__import__('os').cpu_count()} cores")
print()
print("| | cargo xtask wheel | pip wheel (same CMAKE_ARGS) | ratio |")
print("|---|---|---|---|")
print(f"| build time, cold | {t1-t0:.0f} s | {t3-t2:.0f} s | {(t1-t0)/(t3-t2):.2f} |")
print(f"| wheel size | {so/1e6:.1f} MB | {sp/1e6:.1f} MB | {so/sp:.2f} |")
print(f"| no-op rerun | {t2-t1:.2f} s | - | - |")
print()
print("ours:", " ".join(libs(ours)))
print("pip: ", " ".join(libs(pipw)))
PY
