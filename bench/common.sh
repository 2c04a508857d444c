# Sourced by bench scripts (`source "$(dirname "$0")/common.sh" NAME`): strict mode, the
# repo root as the working dir, the pinned 0.3.36 sdist's version and sha256, and from the
# environment (each script's header names them) the Python version (PY), the work dir
# (WORK, else a new /tmp/bench-NAME.XXXXXX, kept), the download cache and the tool (XTASK,
# else a debug build of this checkout).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
ver=0.3.36
sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
py=${PY:-$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')}
work=${WORK:-$(mktemp -d "/tmp/bench-$1.XXXXXX")}
mkdir -p "$work"
export LLAMA_FORGE_CACHE=${LLAMA_FORGE_CACHE:-$repo/vendor/cache}
if [ -z "${XTASK:-}" ]; then
  cargo build -q -p xtask
  XTASK=$repo/target/debug/xtask
fi
