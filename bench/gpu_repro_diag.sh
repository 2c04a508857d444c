# Which CUDA objects differ between two checkouts' builds of one plan, and where.
set -u
bash bench/gpu_repro.sh > $OUT/repro.txt 2>&1
a=$(ls -d /tmp/repro-A/checkout-A/.build/llama-cpp-python-*/build); b=$(ls -d /tmp/repro-B/checkout-B/.build/llama-cpp-python-*/build)
n=0
for o in $(cd $a && find . -name '*.o' | sort); do
  cmp -s $a/$o $b/$o || { n=$((n+1)); [ $n -le 5 ] && echo "differs: $o"; }
done
echo "$n objects differ"
ls -la /tmp/llama-forge/
one=$(cd $a && find . -path '*ggml-cuda*' -name '*.o' | sort | head -1)
cmd=$(cd $a && ninja -t commands ${one#./} | tail -1)
echo "$cmd" | head -c 1500; echo
for s in A B; do
  d=$(ls -d /tmp/repro-$s/checkout-$s/.build/llama-cpp-python-*)
  ln -sfn $d /tmp/llama-forge/$(basename $d)
  (cd /tmp/llama-forge/$(basename $d)/build && eval "${cmd/ -c / --compress-mode=none -c }" -o /tmp/nc-$s.o 2>&1 | tail -3)
done
cmp -s /tmp/nc-A.o /tmp/nc-B.o && echo "uncompressed same" || { echo "uncompressed differ"; diff <(strings -a /tmp/nc-A.o) <(strings -a /tmp/nc-B.o) | head -20; }
