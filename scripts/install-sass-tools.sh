#!/usr/bin/env bash
# Makes cuobjdump (and the nvdisasm it runs) available to the compile tests, which disassemble the cubins
# NVRTC builds and check their SASS: wgmma fed by TMA, ldmatrix, vector stores, no local memory. A CUDA
# toolkit installed without them (the runtime and NVRTC alone) gets both from NVIDIA's wheels on PyPI,
# unpacked into .deps/sass-tools. Prints the folder to put on the PATH (nothing when the toolkit's own serve,
# or when they cannot be had: the SASS checks then skip and say why).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
version=13.2.86  # reads the cubins of CUDA 13.0's NVRTC for sm_80 ... sm_90a
folder="$here/.deps/sass-tools"
bin="$folder/nvidia/cu13/bin"

have() { command -v "$1" > /dev/null 2>&1 || [ -x "/usr/local/cuda/bin/$1" ]; }
if have cuobjdump && have nvdisasm; then exit 0; fi
if [ -x "$bin/cuobjdump" ] && [ -x "$bin/nvdisasm" ]; then
  echo "$bin"
  exit 0
fi
python=$(command -v python3 || true)
if [ -z "$python" ] || ! "$python" -m pip --version > /dev/null 2>&1; then
  echo "warning: no cuobjdump and no pip to fetch it: the compile tests will not check SASS" >&2
  exit 0
fi
mkdir -p "$folder"
if ! "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$folder" \
     "nvidia-cuda-cuobjdump==$version" "nvidia-cuda-nvdisasm==$version" >&2; then
  echo "warning: could not install cuobjdump $version from PyPI: the compile tests will not check SASS" >&2
  exit 0
fi
if [ ! -f "$bin/cuobjdump" ] || [ ! -f "$bin/nvdisasm" ]; then
  echo "warning: the cuobjdump $version wheels hold no $bin: the compile tests will not check SASS" >&2
  exit 0
fi
chmod +x "$bin/cuobjdump" "$bin/nvdisasm"
echo "$bin"
