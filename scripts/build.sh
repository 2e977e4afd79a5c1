#!/usr/bin/env bash
# Installs the build dependencies (Debian/Ubuntu) and builds gemmforge in build/ (Release).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh"
cmake -S "$here" -B "$here/build" -DCMAKE_BUILD_TYPE=Release > "$here/build.configure.log" 2>&1 || {
  cat "$here/build.configure.log"; exit 1; }
cmake --build "$here/build" -j "$(nproc)"
