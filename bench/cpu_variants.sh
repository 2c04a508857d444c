#!/usr/bin/env bash
# Benchmark, run by BENCHMARKS.md: compiling only the CPU variants an artifact ships
# (the plan's LLAMA_FORGE_CPU_VARIANTS, read by the recipes' patch of ggml/src/CMakeLists.txt)
# against compiling every variant ggml knows (14 for 0.3.36). Builds the same wheel twice
# from the same sdist, each in its own build dir:
#   1. subset: the recipes as they are;
#   2. all: a copy of the recipes without that patch (LLAMA_FORGE_RECIPES), so ggml
#      builds every variant and the plan sets no LLAMA_FORGE_CPU_VARIANTS.
# MARK=TEXT drops the patches whose text holds TEXT instead (the baseline of another
# trim: MARK='LLAMA_BUILD_COMMON OFF' for the wheel's llama-common).
# Prints each build's wall time and its compile count (ninja's log), then compares
# every file both wheels ship under llama_cpp/lib by sha256; exits 1 if one differs
# or if a library is in one wheel only.
#
#   bench/cpu_variants.sh [ARGS...]   ARGS go to `xtask wheel` (e.g. `--arch 90`)
#
# Environment (all optional, for a machine without internet):
#   XTASK   the tool's binary (default: `cargo build -p xtask`, target/debug/xtask)
#   SDIST   llama_cpp_python-0.3.36.tar.gz (default: the download cache's)
#   PY      Python version of the wheel (default: python3's)
#   WORK    where builds go (default: a new dir in /tmp; kept)
source "$(dirname "$0")/common.sh" variants
sdist=${SDIST:-$LLAMA_FORGE_CACHE/downloads/$sha/llama_cpp_python-$ver.tar.gz}
echo "$sha  $sdist" | sha256sum -c --quiet

# The recipes without the patch whose text holds MARK.
mark=${MARK:-LLAMA_FORGE_CPU_VARIANTS}
mkdir -p "$work/recipes-all"
for f in recipes/*.toml; do
  python3 - "$f" "$work/recipes-all/$(basename "$f")" "$mark" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.compile(r'\[\[(?:release\.)?patch\]\]\n(?:(?!\[\[).)*?\nreason = "[^\n]*"\n', re.S)
dropped = [m for m in block.finditer(text) if sys.argv[3] in m.group(0)]
for m in reversed(dropped):
    text = text[:m.start()] + text[m.end():]
open(sys.argv[2], "w").write(text)
print(f"{sys.argv[1]}: dropped {len(dropped)} patch(es) holding {sys.argv[3]}")
PY
done

build() { # name, extra env...
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" LLAMA_FORGE_BUILD_DIR="$work/build-$name" "$XTASK" wheel llama-cpp-python \
    --version $ver --py "$py" --source "$sdist" --dist "$work/dist-$name" "${ARGS[@]}" \
    >"$work/$name.log" 2>&1 || { tail -40 "$work/$name.log"; exit 1; }
  t1=$(date +%s.%N)
  local log compiles
  log=$(find "$work/build-$name" -name .ninja_log | head -1)
  compiles=$(awk 'NR > 1 && $4 ~ /\.(o|obj)$/ { n[$4] = 1 } END { print length(n) }' "$log")
  printf '%-7s %7.1f s  %4d compiles\n' "$name" "$(awk "BEGIN { print $t1 - $t0 }")" "$compiles"
}
ARGS=("$@")
build subset
build all LLAMA_FORGE_RECIPES="$work/recipes-all"

status=0
for name in subset all; do
  mkdir -p "$work/unpacked-$name"
  python3 -m zipfile -e "$work"/dist-$name/*.whl "$work/unpacked-$name"
done
(cd "$work/unpacked-subset/llama_cpp/lib" && find . -type f | sort) >"$work/libs-subset"
(cd "$work/unpacked-all/llama_cpp/lib" && find . -type f | sort) >"$work/libs-all"
if ! diff -u "$work/libs-subset" "$work/libs-all"; then
  echo "the wheels ship different libraries"; status=1
fi
while read -r f; do
  a=$(sha256sum <"$work/unpacked-subset/llama_cpp/lib/$f" | cut -c1-16)
  b=$(sha256sum <"$work/unpacked-all/llama_cpp/lib/$f" | cut -c1-16)
  if [ "$a" = "$b" ]; then echo "same  $a  $f"; else echo "DIFF  $a $b  $f"; status=1; fi
done <"$work/libs-subset"
ls -l "$work"/dist-*/*.whl
exit $status
