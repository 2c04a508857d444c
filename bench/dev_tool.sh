# Sourced by the device bench scripts (build_speed.sh, cpu_dispatch.sh): dev_tool NAME
# prints the path of the tool carried as .dev/NAME, or of .dev/NAME.xz unpacked to
# /tmp/dev-tool-NAME (the carry's 64 MiB limit: a stripped debug build is 20 MB, 4 MB in xz).
# Each call unpacks again: call it once per tool.
dev_tool() {
  local p=$PWD/.dev/$1
  if [ ! -x "$p" ]; then
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$p.xz" "/tmp/dev-tool-$1"
    chmod +x "/tmp/dev-tool-$1"; p=/tmp/dev-tool-$1
  fi
  echo "$p"
}
# dev_recipes NAME prints the recipe dir that goes with the tool NAME: .dev/NAME-recipes
# where it exists (`git archive` of the commit's recipes/, for the build before a change),
# else the tree's recipes/.
dev_recipes() {
  if [ -d "$PWD/.dev/$1-recipes" ]; then echo "$PWD/.dev/$1-recipes"; else echo "$PWD/recipes"; fi
}
