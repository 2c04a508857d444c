# What feeds nvcc's _INTERNAL_<hash> names: the cwd's real path, or the source's?
set -u
root=/tmp/repro-A/checkout-A; mkdir -p $root
cp -r recipes toolchains $root/; mkdir -p $root/vendor/cache/tools; cp -r vendor/cache/tools/patchelf-0.19.3 $root/vendor/cache/tools/
LLAMA_FORGE_ROOT=$root .dev/xtask wheel llama-cpp-python --version 0.3.16 --arch 90 --py 312 --source .dev/llama_cpp_python-0.3.16.tar.gz --dist /tmp/repro-A/dist > $OUT/build-A.log 2>&1
wa=$(ls -d $root/.build/llama-cpp-python-*); id=$(basename $wa)
wb=/tmp/repro-B/checkout-B-longer-path/.build/$id
[ -d $wb ] || { mkdir -p $(dirname $wb); cp -a $wa $wb; }
alias=/tmp/llama-forge/$id
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
