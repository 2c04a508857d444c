#!/bin/sh
# CMAKE_CUDA_COMPILER_LAUNCHER for reproducible CUDA objects: runs the nvcc
# command CMake gives it, adding --frandom-seed derived from the object path
# (`-o <obj>`, relative to the build dir, so equal across checkouts). nvcc
# otherwise draws random numbers for generated names (extended lambdas,
# template stubs), and some objects differ from build to build. One seed per
# object, as nvcc's help asks: never the same seed for two files.
#
# --host-file-name=NAME (before the command): the host compile of nvcc's
# `<obj>.cudafe1.cpp` (-objtemp) names its source NAME in the object (the
# STT_FILE symbol the object keeps, through -ffile-prefix-map). sccache runs
# nvcc's steps itself and calls that file `x_0.cudafe1.cpp`: with that NAME the
# object is the same file with or without sccache after this script.
name=""
case "$1" in
  --host-file-name=*) name=${1#--host-file-name=}; shift ;;
esac
out=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
if [ -z "$out" ]; then
  exec "$@"
fi
seed=$(printf '%s' "$out" | cksum | cut -d' ' -f1)
if [ -n "$name" ]; then
  exec "$@" "--frandom-seed=$seed" "-Xcompiler=-ffile-prefix-map=$out.cudafe1.cpp=$name"
fi
exec "$@" "--frandom-seed=$seed"
