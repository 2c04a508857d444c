# Does an absolute (alias-based) -o make the 9 path-dependent objects equal?
set -u
. bench/repro_common.sh
wb=/tmp/repro-B/checkout-B-longer-path/.build/$id
[ -d $wb ] || { mkdir -p $(dirname $wb); cp -a $wa $wb; }
d=vendor/llama.cpp/ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir
for name in mean binbcast unary; do
  o=$d/$name.cu.o
  ln -sfn $wa $alias; cd $alias/build
  cmd=$(ninja -t commands $o | tail -1); nv=${cmd#* }
  seed=$(printf '%s' "$o" | cksum | cut -d' ' -f1)
  abs=$(echo "$nv" | sed "s| -o $o| -o $alias/build/$o|")
  for side in A B; do
    w=$wa; [ $side = B ] && w=$wb
    ln -sfn $w $alias; cd $alias/build
    eval "$nv --frandom-seed=$seed" >/dev/null 2>&1; echo "$name rel-o $side $(sha256sum $o | cut -c1-16)"
    eval "$abs --frandom-seed=$seed" >/dev/null 2>&1; echo "$name abs-o $side $(sha256sum $o | cut -c1-16)"
    if [ $name = mean ]; then
      eval "$nv --frandom-seed=$seed -keep" >/dev/null 2>&1; ls -la $d | grep -v '\.o$\|\.d$' | grep mean | head; 
      strings -a $o | grep -i "repro\|llama-forge\|INTERNAL" | head -5
      nm $o | grep -i internal | head -3
    fi
  done
done
