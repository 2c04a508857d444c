# Sourced by bench/gpu_repro_diag{2..6}.sh (device tool, run from the repo root):
# builds llama-cpp-python 0.3.16 --arch 90 in checkout A, offline from .dev/.
# Sets: root (checkout A), wa (its work dir), id (plan id), alias (stable path).
# diag4-6 point the stable path at a copied work dir with `ln -sfn`: they
# diagnose the layout before 4077105 (stable path = one symlink to the work dir)
# and need an xtask built from before that commit.
root=/tmp/repro-A/checkout-A; mkdir -p $root
cp -r recipes toolchains $root/; mkdir -p $root/vendor/cache/tools; cp -r vendor/cache/tools/patchelf-0.19.3 $root/vendor/cache/tools/
t0=$(date +%s)
LLAMA_FORGE_ROOT=$root .dev/xtask wheel llama-cpp-python --version 0.3.16 --arch 90 --py 312 --source .dev/llama_cpp_python-0.3.16.tar.gz --dist /tmp/repro-A/dist > $OUT/build-A.log 2>&1
echo "build rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/build-A.log
wa=$(ls -d $root/.build/llama-cpp-python-*); id=$(basename $wa)
alias=/tmp/llama-forge/$id
