# Is the CUDA object difference true nondeterminism? Build once, then recompile
# one ggml-cuda object several times in the same dir with the same command.
set -u
. bench/repro_common.sh
ls -la /tmp/llama-forge/ | head
cd /tmp/llama-forge/$id/build || exit 1
for obj in mean.cu.o concat.cu.o; do
  o=$(find . -name $obj | head -1); o=${o#./}
  cmd=$(ninja -t commands $o | tail -1)
  echo "== $o"; echo "$cmd" | head -c 3000; echo
  cp $o /tmp/orig.o
  for i in 1 2 3; do
    eval "$cmd" >/dev/null 2>&1; cp $o /tmp/run$i.o; sha256sum $o | cut -c1-16
  done
  # Without the launcher, with the seed given directly
  for mode in none size; do
    for i in 1 2; do
      c2=$(echo "$cmd" | sed "s/-compress-mode=[a-z]*/-compress-mode=$mode/")
      eval "$c2" >/dev/null 2>&1; echo "compress=$mode run$i $(sha256sum $o | cut -c1-16)"
    done
  done
  # keep intermediates twice and diff them
  for i in 1 2; do
    rm -rf /tmp/keep$i; mkdir -p /tmp/keep$i
    c3=$(echo "$cmd" | sed "s|-c |-keep -keep-dir /tmp/keep$i -c |")
    eval "$c3" >/dev/null 2>&1
  done
  (cd /tmp/keep1 && for f in $(ls); do cmp -s $f /tmp/keep2/$f && echo "same $f" || echo "DIFF $f $(cmp -l $f /tmp/keep2/$f 2>/dev/null | wc -l)"; done)
  ls /tmp/keep2 | head -40
done
