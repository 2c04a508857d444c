#!/usr/bin/env python3
"""nvcc's own time per phase, summed over a build: `nvcc --time FILE` appends one CSV row
per phase of each compile (NVCC_APPEND_FLAGS="--time FILE" puts it on every nvcc of a
build). Prints seconds and share per phase (cicc, ptxas, fatbinary, cudafe++, the host
compiler's preprocessing and compile), CMake's own probe compiles left out.

    python3 bench/nvcc_time.py FILE.csv [...]
"""
import collections
import csv
import sys


def phases(path):
    total, count = collections.Counter(), collections.Counter()
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 8 or row[0].startswith("source file") or "CMake" in row[0]:
                continue
            phase = row[1].strip()
            if phase == "nvcc (driver)":
                continue
            # The host compiler's phases carry its name: "g++ (compiling)" -> "host (compiling)".
            if "(" in phase and not phase.startswith(("cicc", "ptxas", "fatbinary", "cudafe")):
                phase = "host " + phase[phase.index("("):]
            try:
                total[phase] += float(row[6]) / 1000
            except ValueError:
                continue
            count[phase] += 1
    return total, count


for path in sys.argv[1:]:
    total, count = phases(path)
    whole = sum(total.values())
    print(f"{path}: {whole:.0f} s in nvcc's phases")
    for phase, secs in total.most_common():
        print(f"  {phase:24s} {secs:8.1f} s {100 * secs / whole:5.1f}%  ({count[phase]} runs)")
