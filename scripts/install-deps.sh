#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages gemmforge builds with; a no-op when they are all present.
# The CUDA toolkit (13.x: nvcc not needed, but NVRTC, cuBLAS, cudart and headers) must already be installed.
set -euo pipefail
packages=(cmake g++ make libsqlitecpp-dev libsqlite3-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
          libgtest-dev gnuplot-nox zlib1g-dev gzip)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "Installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" > /dev/null
fi
if [ ! -e /usr/local/cuda/include/nvrtc.h ] && ! command -v nvcc > /dev/null; then
  echo "warning: no CUDA toolkit found under /usr/local/cuda; CMake will look for one on its own" >&2
fi
