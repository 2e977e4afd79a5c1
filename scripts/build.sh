#!/usr/bin/env bash
# Installs the build dependencies (Debian/Ubuntu) and builds gemmforge in build/ (Release).
#   scripts/build.sh            everything: the library, the tools and every test
#   scripts/build.sh TARGET...  only these targets and what they need (e.g. gemmforge_cli)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh"
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$here" -B "$here/build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" > "$here/build.configure.log" 2>&1 || {
  cat "$here/build.configure.log"; exit 1; }
targets=()
[ $# -gt 0 ] && targets=(--target "$@")
cmake --build "$here/build" -j "$(nproc)" "${targets[@]}"
