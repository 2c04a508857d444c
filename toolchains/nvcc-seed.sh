#!/bin/sh
# CMAKE_CUDA_COMPILER_LAUNCHER for reproducible CUDA objects: runs the nvcc
# command CMake gives it, adding --frandom-seed derived from the object path
# (`-o <obj>`, relative to the build dir, so equal across checkouts). nvcc
# otherwise draws random numbers for generated names (extended lambdas,
# template stubs), and some objects differ from build to build. One seed per
# object, as nvcc's help asks: never the same seed for two files.
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
exec "$@" "--frandom-seed=$seed"
