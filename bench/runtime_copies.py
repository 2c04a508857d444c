#!/usr/bin/env python3
"""What the C++ runtime linked into each library costs (issue 28, "CPU wheel size").

    NINJA=<ninja> python3 bench/runtime_copies.py BUILD_DIR LIB.so...

For each library (a target path in BUILD_DIR's build.ninja, e.g. bin/libllama.so), its
link line from `ninja -t commands` is run again into a temp dir, once as built and once
with -Wl,--gc-sections (dropped if already there), each with -Wl,-Map; the map's input
sections in file-backed output sections are summed by origin: libstdc++.a, libgcc, the
library's own objects. The build dir is not changed.
"""
import collections
import os
import re
import shlex
import subprocess
import sys
import tempfile


def origins(map_path):
    lines = open(map_path).read().split("\n")
    start = lines.index("Linker script and memory map")
    total, out, pending = collections.Counter(), None, None
    for line in lines[start:]:
        m = re.match(r"^(\.\S+)(\s+0x[0-9a-f]+\s+0x[0-9a-f]+.*)?$", line)
        if m:
            out = m.group(1)
            continue
        m = re.match(r"^ (\.\S+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)", line)
        if m:
            size, origin = int(m.group(2), 16), m.group(3)
        else:
            if re.match(r"^ (\.\S+)$", line):
                pending = True
                continue
            m = re.match(r"^\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)", line)
            if not (m and pending):
                pending = None
                continue
            size, origin, pending = int(m.group(1), 16), m.group(2), None
        if out in (".bss", ".tbss") or (out or "").startswith((".debug", ".comment")):
            continue
        kind = "libstdc++" if "libstdc++" in origin else "libgcc" if "libgcc" in origin else (
            "linker/crt" if "/sysroot/" in origin or origin.endswith(".so") else "own")
        total[kind] += size
    return total


def main():
    build, libs = sys.argv[1], sys.argv[2:]
    ninja = os.environ.get("NINJA", "ninja")
    tmp = tempfile.mkdtemp(prefix="runtime-copies.")
    print(f"{'library':32s} {'libstdc++ as built':>18s} {'with --gc-sections':>18s} {'own code':>10s}")
    for lib in libs:
        cmd = subprocess.run([ninja, "-C", build, "-t", "commands", lib], capture_output=True,
                             text=True, check=True).stdout.strip().splitlines()[-1]
        cmd = cmd.strip(": &")
        row = []
        for gc in (False, True):
            words = [w for w in shlex.split(cmd) if not (w == "-Wl,--gc-sections" and not gc)]
            out_at = words.index("-o")
            name = os.path.basename(lib)
            words[out_at + 1] = os.path.join(tmp, name)
            mp = os.path.join(tmp, f"{name}.{int(gc)}.map")
            words[out_at:out_at] = [f"-Wl,-Map,{mp}"] + (["-Wl,--gc-sections"] if gc else [])
            subprocess.run(words, cwd=build, check=True)
            row.append(origins(mp))
        print(f"{lib:32s} {row[0]['libstdc++'] / 1024:15.0f} KB {row[1]['libstdc++'] / 1024:15.0f} KB"
              f" {row[0]['own'] / 1024:7.0f} KB")


main()
