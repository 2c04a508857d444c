# What feeds nvcc's _INTERNAL_<hash> names: the cwd's real path, or the source's?
set -u
. bench/repro_common.sh
wb=/tmp/repro-B/checkout-B-longer-path/.build/$id
[ -d $wb ] || { mkdir -p $(dirname $wb); cp -a $wa $wb; }
d=vendor/llama.cpp/ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir
o=$d/mean.cu.o
ln -sfn $wa $alias; cd $alias/build
cmd=$(ninja -t commands $o | tail -1); nv=${cmd#* }
seed=$(printf '%s' "$o" | cksum | cut -d' ' -f1)
h() { nm $1 | grep -o '_INTERNAL_[0-9a-f]*_[0-9]*_mean_cu_[0-9a-f]*' | head -1; }
for side in A B; do
  w=$wa; [ $side = B ] && w=$wb
  ln -sfn $w $alias; cd $alias/build
  eval "$nv --frandom-seed=$seed" >/dev/null 2>&1; echo "$side base: $(h $o)"
  # 1: other cwd, absolute -o/-MF
  absv=$(echo "$nv" | sed "s| -o $o| -o $alias/build/$o|; s| -MF $o.d| -MF /tmp/x.d|")
  (cd /tmp && eval "$absv --frandom-seed=$seed" >/dev/null 2>&1); echo "$side cwd=/tmp: $(h $o)"
  # 2: the source tree copied to one real stable path
  rm -rf /tmp/stable-src; cp -a $w/src /tmp/stable-src
  sv=$(echo "$nv" | sed "s|$alias/src|/tmp/stable-src|g")
  eval "$sv --frandom-seed=$seed" >/dev/null 2>&1; echo "$side src at /tmp/stable-src: $(h $o) $(sha256sum $o | cut -c1-16)"
  # 3: different seed
  eval "$nv --frandom-seed=12345" >/dev/null 2>&1; echo "$side seed 12345: $(h $o)"
done
