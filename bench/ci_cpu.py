#!/usr/bin/env python3
"""Where a CI run's CPU went, by lane and by test, from process accounting (issue 29).

    touch /tmp/ci.pacct && accton /tmp/ci.pacct     # as root, before `.ci/run`
    CI=true bash .ci/run > /tmp/ci.log; accton off
    dump-acct /tmp/ci.pacct > /tmp/ci.dump          # `acct` package
    python3 bench/ci_cpu.py /tmp/ci.dump [/tmp/ci.log]

Every process that ended during the run is one record of `dump-acct` (name, user and
system CPU in ticks of 1/100 s, pid, parent pid, start time). The script rebuilds the
process tree (a pid's parent is the latest process of that pid started before it) and
charges each process's CPU to the `it` test binary above it, that is to a lane of
`.ci/test` (`.ci/test` starts one `it` per lane: the one with more CPU below it, the
real builds', is taken for `real`, the other for `rest`), and within a lane to the direct child
of `it` that started it: one tool run, pip, qemu or cargo run of one test. With the
run's log (`.ci/run`'s lines stamped `HH:MM:SS <lane> test <name> ... ok`), each such
child is named by the test that was running when it started. What no `it` process
started (the crate build, clippy, `.ci/run`'s installs) is `outside`.

Prints the CPU-minutes of each lane and of `outside`, by program, then the tests that
used the most CPU with their largest programs.
"""
import collections
import datetime
import re
import sys


def records(dump):
    out = []
    with open(dump) as f:
        for line in f:
            f_ = [x.strip() for x in line.split("|")]
            if len(f_) < 15:
                continue
            start = datetime.datetime.strptime(f_[14], "%a %b %d %H:%M:%S %Y")
            out.append(
                {
                    "comm": f_[0],
                    "cpu": (float(f_[2]) + float(f_[3])) / 100.0,
                    "pid": int(f_[9]),
                    "ppid": int(f_[10]),
                    "start": start,
                }
            )
    return out


def parents(recs):
    by_pid = collections.defaultdict(list)
    for i, r in enumerate(recs):
        by_pid[r["pid"]].append(i)
    par = []
    for r in recs:
        best = None
        for j in by_pid.get(r["ppid"], []):
            if recs[j]["start"] <= r["start"] + datetime.timedelta(seconds=1) and (
                best is None or recs[j]["start"] > recs[best]["start"]
            ):
                best = j
        par.append(best)
    return par


def test_spans(log):
    """{lane: [(end time, test name)]} from the run's stamped `... ok` lines."""
    spans = collections.defaultdict(list)
    if not log:
        return spans
    pat = re.compile(r"^(\d\d:\d\d:\d\d) (\w+) test (\S+) \.\.\. (ok|FAILED|ignored)")
    with open(log, errors="replace") as f:
        for line in f:
            m = pat.match(line)
            if m:
                spans[m.group(2)].append((m.group(1), m.group(3)))
    return spans


def test_at(spans, lane, start):
    """The test of `lane` running at `start`: the first to end after it (a process
    started in the second a test ended belongs to the next test)."""
    hms = start.strftime("%H:%M:%S")
    for end, name in spans.get(lane, []):
        if end > hms:
            return name
    return "?"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    recs = records(sys.argv[1])
    spans = test_spans(sys.argv[2] if len(sys.argv) > 2 else None)
    par = parents(recs)
    its = [i for i, r in enumerate(recs) if r["comm"].startswith("it-")]
    # The `it` with the most CPU below it runs the real builds: lane `real`.
    child_of = {}
    for i in range(len(recs)):
        chain, j = [], i
        while j is not None and len(chain) < 100:
            chain.append(j)
            if j in its:
                break
            j = par[j]
        if j in its:
            child_of[i] = (j, chain[-2] if len(chain) > 1 else None)
    cpu_under = collections.Counter()
    for i, (it, _) in child_of.items():
        cpu_under[it] += recs[i]["cpu"]
    ranked = sorted(its, key=lambda i: -cpu_under[i])
    lane = {}
    if len(ranked) >= 2:
        lane[ranked[0]], lane[ranked[1]] = "real", "rest"
    for i in ranked[2:]:
        lane[i] = "it%d" % i

    by_lane = collections.defaultdict(collections.Counter)
    by_test = collections.defaultdict(collections.Counter)
    for i, r in enumerate(recs):
        if i in child_of:
            it, child = child_of[i]
            name = lane[it]
            by_lane[name][r["comm"]] += r["cpu"]
            if child is not None:
                t = test_at(spans, name, recs[child]["start"]) if spans else recs[child][
                    "start"
                ].strftime("%H:%M:%S")
                by_test[(name, t)][r["comm"]] += r["cpu"]
        else:
            by_lane["outside"][r["comm"]] += r["cpu"]

    total = sum(sum(c.values()) for c in by_lane.values())
    print(f"CPU in all: {total / 60:.1f} CPU-min ({len(recs)} processes)")
    for name in ("real", "rest", "outside"):
        c = by_lane.get(name, collections.Counter())
        top = ", ".join(f"{k} {v / 60:.1f}" for k, v in c.most_common(5))
        print(f"  {name:8} {sum(c.values()) / 60:6.1f} CPU-min: {top}")
    print("\nby test (CPU-min; the lane; its largest programs):")
    rows = sorted(by_test.items(), key=lambda kv: -sum(kv[1].values()))
    for (name, t), c in rows[:25]:
        top = ", ".join(f"{k} {v / 60:.1f}" for k, v in c.most_common(3))
        print(f"  {sum(c.values()) / 60:6.1f}  {name:5} {t}: {top}")


if __name__ == "__main__":
    main()
