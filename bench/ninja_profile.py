#!/usr/bin/env python3
"""Where a build's time goes, from Ninja's own log (issue 28: profile every build).

    python3 bench/ninja_profile.py ours=BUILD_DIR [pip=BUILD_DIR ...]

Each BUILD_DIR holds a `.ninja_log` (ours: the work dir's `build/`, `build/vendor/llama.cpp/` for the archive; a pip build: the
scikit-build-core build dir, kept with `-C build-dir=...`). For the last Ninja run in
each log it prints, side by side: wall time, CPU-seconds, parallelism; CPU-seconds by
group (CUDA template instances, other CUDA, CPU backend variants, libraries, tools,
links); the 10 slowest steps; and the critical path: the longest chain of steps through the
build graph (`ninja -t query`; NINJA, else `ninja` on PATH), the wall time no number of
cores beats. Times are Ninja's, in seconds.
"""
import os
import re
import subprocess
import sys

GROUPS = [
    ("CUDA template instances", lambda t: "template-instances" in t),
    ("CUDA, other", lambda t: t.endswith(".cu.o")),
    ("CPU backend variants", lambda t: re.search(r"ggml-cpu-[^/]+\.dir/", t) is not None),
    ("links", lambda t: not t.endswith(".o")),
    ("tools, examples, common", lambda t: re.search(r"(^|/)(tools|examples|common)/", t) is not None),
    ("libraries (C/C++)", lambda t: True),
]


def last_run(path):
    """{target: (start_ms, end_ms)} of the log's last Ninja run (a run's entries are
    appended as steps end; a new run starts where the end times drop). A step with several
    outputs has a line for each (the same times and command hash): it counts once, under
    its first output named relative to the build dir."""
    runs, prev_end = [[]], -1
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            start, end, _mtime, target, cmd = line.rstrip("\n").split("\t")
            start, end = int(start), int(end)
            if end < prev_end:
                runs.append([])
            prev_end = end
            runs[-1].append((target, start, end, cmd))
    steps = {}
    for t, s, e, cmd in runs[-1]:
        kept = steps.get((s, e, cmd))
        if kept is None or (kept.startswith("/") and not t.startswith("/")):
            steps[(s, e, cmd)] = t
    return {t: (s, e) for (s, e, _), t in steps.items()}


def group(target):
    return next(name for name, test in GROUPS if test(target))


def inputs(ninja, build_dir, target):
    """The direct inputs of `target` (`ninja -t query`), phony targets expanded."""
    out = subprocess.run([ninja, "-C", build_dir, "-t", "query", target],
                         capture_output=True, text=True).stdout
    got, section = [], None
    for line in out.splitlines():
        s = line.strip()
        if line.startswith("  ") and not line.startswith("    "):
            section = s.split(":", 1)[0]  # "input: RULE", "outputs:"
        elif section == "input" and line.startswith("    "):
            got.append(s.lstrip("|").strip())  # explicit, `| implicit`, `|| order-only`
    return list(dict.fromkeys(got))


def critical_path(ninja, build_dir, steps):
    """The longest chain of steps by their own times, each waiting on the one before
    through the build graph (order-only dependencies and phony targets included): what
    no number of cores makes faster. Last step first."""
    memo_in, memo_deps, memo_long = {}, {}, {}

    def direct(t):
        if t not in memo_in:
            memo_in[t] = inputs(ninja, build_dir, t)
        return memo_in[t]

    def deps(t):
        # The logged steps `t` waits on, found through unlogged nodes (phony, sources).
        if t in memo_deps:
            return memo_deps[t]
        memo_deps[t] = []  # a cycle guard; Ninja graphs have none
        found, todo, seen = set(), list(direct(t)), set()
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            if i in steps:
                found.add(i)
            elif not os.path.isabs(i):  # a source file has no inputs
                todo.extend(direct(i))
        memo_deps[t] = sorted(found)
        return memo_deps[t]

    def longest(t):
        if t not in memo_long:
            s, e = steps[t]
            best = max(deps(t), key=longest, default=None)
            memo_long[t] = ((e - s) + (longest(best)[0] if best else 0), best)
        return memo_long[t]

    sys.setrecursionlimit(10000)
    end = max(steps, key=lambda t: longest(t)[0])
    path = [end]
    while longest(path[-1])[1]:
        path.append(longest(path[-1])[1])
    return path


def short(t, n=60):
    return t if len(t) <= n else "..." + t[-(n - 3):]


def main():
    ninja = os.environ.get("NINJA", "ninja")
    builds = [a.split("=", 1) for a in sys.argv[1:]]
    if not builds or any(len(b) != 2 for b in builds):
        sys.exit(__doc__)
    profiles = {}
    for label, d in builds:
        steps = last_run(os.path.join(d, ".ninja_log"))
        if not steps:
            sys.exit(f"{d}/.ninja_log: no steps in its last run")
        wall = (max(e for _, e in steps.values()) - min(s for s, _ in steps.values())) / 1000
        cpu = sum(e - s for s, e in steps.values()) / 1000
        by = {}
        for t, (s, e) in steps.items():
            by.setdefault(group(t), [0, 0])
            by[group(t)][0] += (e - s) / 1000
            by[group(t)][1] += 1
        profiles[label] = (d, steps, wall, cpu, by)

    labels = [b[0] for b in builds]
    print(f"{'':28}" + "".join(f"{l:>22}" for l in labels))
    print(f"{'steps':28}" + "".join(f"{len(profiles[l][1]):>22}" for l in labels))
    print(f"{'wall (s)':28}" + "".join(f"{profiles[l][2]:>22.1f}" for l in labels))
    print(f"{'CPU-seconds':28}" + "".join(f"{profiles[l][3]:>22.1f}" for l in labels))
    print(f"{'parallelism (CPU/wall)':28}" + "".join(f"{profiles[l][3] / max(profiles[l][2], 1e-9):>22.2f}" for l in labels))
    print("\nCPU-seconds by group (steps)")
    for name, _ in GROUPS:
        cells = []
        for l in labels:
            cpu, n = profiles[l][4].get(name, [0, 0])
            cells.append(f"{cpu:>15.1f} ({n:>4})")
        print(f"  {name:26}" + "".join(cells))
    for l in labels:
        d, steps, *_ = profiles[l]
        print(f"\n{l}: the 10 slowest steps (s)")
        for t in sorted(steps, key=lambda t: steps[t][0] - steps[t][1])[:10]:
            s, e = steps[t]
            print(f"  {(e - s) / 1000:8.1f}  {short(t, 90)}")
        path = critical_path(ninja, d, steps)
        total = sum(steps[t][1] - steps[t][0] for t in path) / 1000
        print(f"{l}: critical path, {len(path)} steps, {total:.1f} s: no number of cores builds it faster (last first)")
        for t in path:
            s, e = steps[t]
            print(f"  {(e - s) / 1000:8.1f}  ends {e / 1000:8.1f}  {short(t, 80)}")


if __name__ == "__main__":
    main()
