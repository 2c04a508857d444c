#!/usr/bin/env python3
"""What a first `cargo xtask wheel llama-cpp-python --arch 120` downloads, per item, in MB.

The list comes from the tool itself: `xtask plan llama-cpp-python --arch 120 --json` names
each download (its `downloads`) and the URLs of the source and the build tools (its
`plan`); the pinned toolchain files it names (`toolchains/linux-gcc.toml`,
`toolchains/cuda-<release>.toml`) give the rest of the URLs. Each URL is asked for its size
with an HTTP HEAD (nothing is downloaded), checked against the pin's `size` where the pin
has one. For every wheel (a zip) the central directory is read with a range request, so
the unpacked size is measured too: what the cache holds after the first run is the
downloads plus those trees (the .deb packages and the sdist are counted at their download
size; the build dir is not counted).

    python3 bench/first_run_downloads.py [--xtask target/debug/xtask] [--json]

MB here is 10^6 bytes, as in the README.
"""

import argparse
import json
import re
import struct
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def head_size(url):
    req = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(req, timeout=60) as r:
        return int(r.headers["Content-Length"])


def get_range(url, start, end):
    req = urllib.request.Request(url, headers={"Range": f"bytes={start}-{end}"})
    with urllib.request.urlopen(req, timeout=120) as r:
        if r.status != 206:
            raise RuntimeError(f"{url}: no range request ({r.status})")
        return r.read()


def unpacked_size(url, size):
    """The sum of the uncompressed sizes in a zip's central directory, read remotely."""
    tail_len = min(size, 65536 + 22)
    tail = get_range(url, size - tail_len, size - 1)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0:
        raise RuntimeError(f"{url}: no zip end record")
    cd_size, cd_offset = struct.unpack_from("<II", tail, at + 12)
    entries = struct.unpack_from("<H", tail, at + 10)[0]
    if cd_offset == 0xFFFFFFFF or entries == 0xFFFF:
        loc = tail.rfind(b"PK\x06\x07", 0, at)
        (z64_off,) = struct.unpack_from("<Q", tail, loc + 8)
        z64 = get_range(url, z64_off, z64_off + 55)
        entries, cd_size, cd_offset = struct.unpack_from("<QQQ", z64, 32)
    cd = get_range(url, cd_offset, cd_offset + cd_size - 1)
    total, i = 0, 0
    for _ in range(entries):
        assert cd[i : i + 4] == b"PK\x01\x02", url
        usize = struct.unpack_from("<I", cd, i + 24)[0]
        n, m, k = struct.unpack_from("<HHH", cd, i + 28)
        extra = cd[i + 46 + n : i + 46 + n + m]
        if usize == 0xFFFFFFFF:
            j = 0
            while j < len(extra):
                tag, ln = struct.unpack_from("<HH", extra, j)
                if tag == 1:
                    usize = struct.unpack_from("<Q", extra, j + 4)[0]
                    break
                j += 4 + ln
        total += usize
        i += 46 + n + m + k
    return total


def items(xtask):
    out = subprocess.run(
        [xtask, "plan", "llama-cpp-python", "--arch", "120", "--json"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout
    doc = json.loads(out)
    plan = doc["plan"]
    tools = plan["tools"]
    result = []
    for d in doc["downloads"]:
        what = d["what"]
        urls = []  # (url, pinned size or None)
        if what.startswith("source "):
            urls.append((plan["source"]["location"], None))
        elif " (pinned wheel)" in what:
            name = what.split()[0]
            urls.append((tools[name]["origin"]["url"], None))
        else:
            m = re.search(r"\((toolchains/[^)]+\.toml)\)", what)
            if not m:
                raise SystemExit(f"no URL known for the download `{what}`")
            pins = tomllib.loads((REPO / m.group(1)).read_text())
            if "zig" in pins:  # the pinned GCC: zig's wheel and the Debian packages
                urls.append((pins["zig"]["url"], None))
                mirror = pins["mirrors"][0]
                urls += [(mirror + deb["path"], None) for deb in pins["deb"]]
            else:  # a CUDA pin file: its Linux x86-64 wheels
                urls += [(w["url"], w.get("size")) for w in pins["wheel"]]
        result.append((what, d["bytes"], urls))
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xtask", default=str(REPO / "target/debug/xtask"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for what, planned, urls in items(args.xtask):
        size = unpacked = 0
        for url, pinned in urls:
            n = head_size(url)
            if pinned is not None and pinned != n:
                raise SystemExit(f"{url}: {n} bytes, the pin says {pinned}")
            size += n
            unpacked += unpacked_size(url, n) if url.endswith(".whl") else n
        if planned is not None and planned != size:
            raise SystemExit(f"{what}: {size} bytes, the plan says {planned}")
        rows.append({"what": what, "files": len(urls), "bytes": size, "unpacked": unpacked})
    total = sum(r["bytes"] for r in rows)
    disk = sum(r["bytes"] + r["unpacked"] for r in rows)
    if args.json:
        json.dump({"items": rows, "bytes": total, "cache_bytes": disk}, sys.stdout, indent=1)
        print()
        return
    for r in rows:
        print(f"{r['bytes'] / 1e6:8.1f} MB  {r['unpacked'] / 1e6:8.1f} MB unpacked  {r['files']:3} files  {r['what']}")
    print(f"{total / 1e6:8.1f} MB downloaded in all")
    print(f"{disk / 1e6:8.1f} MB in the cache: the downloads and their unpacked trees")


if __name__ == "__main__":
    main()
