#!/usr/bin/env bash
# Sets up a fresh machine (Debian/Ubuntu packages), builds gemmforge and runs every test. Tests labelled
# "gpu" skip, saying why, where no CUDA device is present.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/build.sh"
cd "$here/build"
ctest --output-on-failure -j "$(nproc)" "$@"
