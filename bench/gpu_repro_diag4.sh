# Same plan, two work dirs at different real paths behind the same alias:
# which ggml-cuda objects differ, and which nvcc intermediate carries the difference.
set -u
. bench/repro_common.sh
wb=/tmp/repro-B/checkout-B-longer-path/.build/$id; mkdir -p $(dirname $wb); rm -rf $wb; cp -a $wa $wb
d=vendor/llama.cpp/ggml/src/ggml-cuda
(cd $wa/build && find $d -name '*.o' | sort | xargs sha256sum) > /tmp/hA
ln -sfn $wb $alias
cd $alias/build
find $d -name '*.o' -delete; t0=$(date +%s); ninja -j16 ggml-cuda >/dev/null 2>&1; echo "B rebuild rc=$? $(( $(date +%s) - t0 )) s"
find $d -name '*.o' | sort | xargs sha256sum > /tmp/hB
diff /tmp/hA /tmp/hB | grep '^<' | awk '{print $3}' > /tmp/dl
echo "A vs B: $(wc -l < /tmp/dl) objects differ"; head -12 /tmp/dl
o=$(head -1 /tmp/dl)
[ -z "$o" ] && exit 0
cmd=$(ninja -t commands $o | tail -1)
nv=${cmd#* }   # drop the launcher: the nvcc command itself (seed added below)
seed=$(printf '%s' "$o" | cksum | cut -d' ' -f1)
for side in A B; do
  w=$wa; [ $side = B ] && w=$wb
  ln -sfn $w $alias; cd $alias/build
  k=/tmp/keep$side; rm -rf $k; mkdir -p $k
  eval "$nv --frandom-seed=$seed -keep -keep-dir $k" > /tmp/keep$side.log 2>&1; echo "keep $side rc=$? $(sha256sum $o | cut -c1-16) ($(ls $k | wc -l) files)"
  tail -3 /tmp/keep$side.log
  eval "env PWD=$alias/build $nv --frandom-seed=$seed" >/dev/null 2>&1; echo "PWD-set $side $(sha256sum $o | cut -c1-16)"
  (cd $alias/build && eval "$nv --frandom-seed=$seed" >/dev/null 2>&1; echo "plain $side $(sha256sum $o | cut -c1-16)")
done
cd /tmp/keepA && for f in $(ls); do
  if cmp -s $f /tmp/keepB/$f; then echo "same $f"; else echo "DIFF $f $(cmp -l $f /tmp/keepB/$f 2>/dev/null | wc -l) bytes"; diff <(strings -a $f) <(strings -a /tmp/keepB/$f) | head -8; fi
done
grep -l "repro-A" /tmp/keepA/* | head
