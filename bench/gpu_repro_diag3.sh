# Parallel vs sequential: rebuild the ggml-cuda objects in the same build dir
# with ninja -j16 twice and list objects whose bytes change.
set -u
. bench/repro_common.sh
cd /tmp/llama-forge/$id/build || exit 1
d=vendor/llama.cpp/ggml/src/ggml-cuda
find $d -name '*.cu' -printf '%f\n' 2>/dev/null | sort | uniq -d | head
find /tmp/llama-forge/$id/src/$d -name '*.cu' -printf '%f\n' | sort | uniq -d | head -5
echo "cuda sources: $(find /tmp/llama-forge/$id/src/$d -name '*.cu' | wc -l)"
snap() { find $d -name '*.o' | sort | xargs sha256sum > $1; }
snap /tmp/h0
for round in 1 2; do
  find $d -name '*.o' -delete
  t0=$(date +%s); ninja -j16 ggml-cuda >/dev/null 2>&1; echo "round $round rc=$? $(( $(date +%s) - t0 )) s"
  snap /tmp/h$round
done
echo "build vs round1: $(diff /tmp/h0 /tmp/h1 | grep -c '^<') objects differ"
echo "round1 vs round2: $(diff /tmp/h1 /tmp/h2 | grep -c '^<') objects differ"
diff /tmp/h1 /tmp/h2 | grep '^<' | awk '{print $3}' | head -20 > /tmp/dl
cat /tmp/dl
# those objects again, one at a time
for o in $(head -4 /tmp/dl); do
  cmd=$(ninja -t commands $o | tail -1)
  for i in 1 2; do eval "$cmd" >/dev/null 2>&1; echo "seq $i $o $(sha256sum $o | cut -c1-16)"; done
  grep "$o" /tmp/h1 /tmp/h2 | cut -c1-80
done
