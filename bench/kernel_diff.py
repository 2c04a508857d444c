#!/usr/bin/env python3
"""Are two CUDA libraries' kernels the same code? (issue 28: the grouped template instances)

    python3 bench/kernel_diff.py A B [--cuobjdump PATH]

A and B are each a library or object file, or a directory: every `.so` and `.o` under it
(the objects of a build before and after grouping its files).

Reads each library's SASS with `cuobjdump -sass` (needs nvdisasm beside it: a full CUDA
toolkit, as on the GPU machine) and compares it function by function: which kernels only
one has, and for those in both, whether the instruction streams are the same, exactly or
once the addresses into constant banks (`c[0x3][0x120]`) and immediates that are addresses
are set aside (two files compiled as one translation unit share a constant bank, so their
tables sit at other offsets). Names with internal linkage are compared without the part
that names their translation unit. Prints the counts and the first differences; exits 1 if a
kernel is missing or differs in more than addresses.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;")
FUNC = re.compile(r"^\s*Function : (\S+)")
CBANK = re.compile(r"c\[0x[0-9a-f]+\]\[0x[0-9a-f]+\]")
# Immediates: hex, and the floats nvdisasm prints where a constant is loaded with HFMA2
# (`HFMA2 R2, -RZ, RZ, 0, 4.98e-05` is a 32-bit offset read as two halves).
HEX = re.compile(r"0x[0-9a-f]+|-?\d+\.\d+(?:e[-+]?\d+)?")
# A name with internal linkage (a static kernel, an anonymous namespace) carries its
# translation unit's file name and a hash, `36_INTERNAL_70a77f23_6_cpy_cu_bfba63e2`: the
# same kernel from a grouped file has another, so both are read as `_INTERNAL_`.
INTERNAL = re.compile(r"(\d+)_INTERNAL_")


def unit_free(text):
    out, pos = [], 0
    for m in INTERNAL.finditer(text):
        if m.start() < pos:
            continue
        end = m.start(1) + len(m.group(1)) + int(m.group(1))
        out.append(text[pos:m.start()] + "_INTERNAL_")
        pos = end
    return "".join(out) + text[pos:]


def files(path):
    if os.path.isdir(path):
        return sorted(
            os.path.join(d, n) for d, _, names in os.walk(path) for n in names if n.endswith((".so", ".o"))
        )
    return [path]


def functions(cuobjdump, path):
    funcs = collections.defaultdict(list)
    for f in files(path):
        sass(cuobjdump, f, funcs)
    return funcs


def sass(cuobjdump, lib, funcs):
    out = subprocess.run([cuobjdump, "-sass", lib], capture_output=True, text=True, check=True).stdout
    name, body = None, []
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            if name:
                funcs[name].append(body)
            name, body = unit_free(m.group(1)), []
            continue
        m = INSN.match(line)
        if name and m:
            body.append(unit_free(re.sub(r"\s+", " ", m.group(2))))
    if name:
        funcs[name].append(body)


def _sub(insn, subs):
    for pattern in subs:
        insn = pattern.sub("#", insn)
    return insn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    args = ap.parse_args()
    fa, fb = functions(args.cuobjdump, args.a), functions(args.cuobjdump, args.b)
    only_a = sorted(set(fa) - set(fb))
    only_b = sorted(set(fb) - set(fa))
    same = cbank = immediates = differ = 0
    examples = []
    # The distinct bodies of each name: a kernel a header defines is in every object that
    # instantiates it, so grouped files hold fewer copies of the same code.
    level = lambda bodies, *subs: sorted({tuple(_sub(i, subs) for i in body) for body in bodies})
    for name in sorted(set(fa) & set(fb)):
        a, b = fa[name], fb[name]
        if level(a) == level(b):
            same += 1
        elif level(a, CBANK) == level(b, CBANK):
            cbank += 1
        elif level(a, CBANK, HEX) == level(b, CBANK, HEX):
            immediates += 1
        else:
            differ += 1
            if len(examples) < 3:
                x, y = level(a)[0], level(b)[0]
                d = next(((p, q) for p, q in zip(x, y) if p != q), (len(x), len(y)))
                examples.append(f"  {name[:100]}: {d}")
    print(f"{args.a}: {sum(map(len, fa.values()))} kernels ({len(fa)} names); {args.b}: {sum(map(len, fb.values()))} ({len(fb)})")
    print(f"only in the first: {len(only_a)}; only in the second: {len(only_b)}")
    print(f"in both: {same} the same instructions; {cbank} the same but for constant-bank offsets; "
          f"{immediates} the same but for immediates (addresses, offsets); {differ} different")
    for n in (only_a + only_b)[:5]:
        print(f"  missing on one side: {n[:100]}")
    print("\n".join(examples))
    sys.exit(1 if only_a or only_b or differ else 0)


if __name__ == "__main__":
    main()
