#!/usr/bin/env bash
# Issue 28, the CUDA compile levers one object at a time: where nvcc's time goes (its own
# --time CSV: cicc, ptxas, fatbinary, the host compile) for one ggml-cuda object, compiled
# the way a build compiled it and with each lever, one after the other on the same machine;
# and whether the device code stays the same (the decompressed cubins compared).
#
#   bench/nvcc_levers.sh CMDFILE...
#
# Each CMDFILE holds one nvcc command line of a build (`ninja -t commands` of libggml-cuda,
# with `-MD -MT .. -MF ..` removed and the object path replaced by OUT). Needs cuobjdump
# beside nvcc. Output under $OUT (or /tmp/nvcc-levers).
set -euo pipefail
out=${OUT:-/tmp/nvcc-levers}; mkdir -p "$out"
variants=(
  "as built|"
  "compress balance|-compress-mode=balance"
  "compress none|-compress-mode=none"
  "host -O2|-Xcompiler=-O2"
  "host -O1|-Xcompiler=-O1"
)
for cmdfile in "$@"; do
  base=$(cat "$cmdfile")
  nvcc=${base%% *}
  name=$(basename "$cmdfile" .cmd)
  for v in "${variants[@]}"; do
    label=${v%%|*}; extra=${v#*|}
    tag=$(echo "$label" | tr ' ' '_' | tr -d -- '-')
    obj=$out/$name.$tag.o; csv=$out/$name.$tag.csv; rm -f "$csv"
    cmd=${base//-compress-mode=size/}
    [ "${extra#-compress}" = "$extra" ] && cmd="$cmd -compress-mode=size"
    t0=$(date +%s.%N)
    eval "${cmd/ OUT/ $obj} $extra --time $csv"
    t1=$(date +%s.%N)
    # The device code: every cubin, decompressed by cuobjdump, hashed.
    d=$(mktemp -d); (cd "$d" && "${nvcc%/nvcc}/cuobjdump" -xelf all "$obj" >/dev/null)
    cubins=$(cat "$d"/*.cubin | sha256sum | cut -c1-16); rm -rf "$d"
    phases=$(awk -F' *, *' 'NR>1 && $2 != "nvcc (driver)" {t[$2]+=$7} END {for (p in t) printf "%s=%.1f ", p, t[p]/1000}' "$csv")
    printf '%-22s %-18s wall %6.1f s  object %9d B  cubins %s  %s\n' "$name" "$label" \
      "$(echo "$t1 - $t0" | bc)" "$(stat -c %s "$obj")" "$cubins" "$phases" | tee -a "$out/results.txt"
  done
done
