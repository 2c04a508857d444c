set -u
rm -rf /tmp/repro-A /tmp/repro-B /tmp/llama-forge /tmp/ua /tmp/ub
for side in A B; do
  root=/tmp/repro-$side/checkout-$side; mkdir -p $root
  cp -r recipes toolchains $root/; mkdir -p $root/vendor/cache/tools; cp -r vendor/cache/tools/patchelf-0.19.3 $root/vendor/cache/tools/
  t0=$(date +%s)
  LLAMA_FORGE_ROOT=$root .dev/xtask wheel llama-cpp-python --version 0.3.16 --arch 90 --py 312 --source .dev/llama_cpp_python-0.3.16.tar.gz --dist /tmp/repro-$side/dist > $OUT/repro-$side.log 2>&1
  echo "$side rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/repro-$side.log
done
sha256sum /tmp/repro-*/dist/*.whl
a=$(ls /tmp/repro-A/dist/*.whl); b=$(ls /tmp/repro-B/dist/*.whl)
mkdir -p /tmp/ua /tmp/ub; python3 -m zipfile -e $a /tmp/ua; python3 -m zipfile -e $b /tmp/ub
(cd /tmp/ua && find . -type f | sort | xargs sha256sum) > /tmp/ha; (cd /tmp/ub && find . -type f | sort | xargs sha256sum) > /tmp/hb
diff /tmp/ha /tmp/hb && echo "all files identical"
for f in $(diff /tmp/ha /tmp/hb | awk '/^</{print $3}'); do echo "differs: $f $(cmp -l /tmp/ua/$f /tmp/ub/$f | wc -l) bytes"; done
cu=/tmp/ua/llama_cpp/lib/libggml-cuda.so; strings $cu | grep -c "/tmp/repro" ; strings $cu | grep "/tmp/repro" | head -3
