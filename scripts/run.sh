#!/usr/bin/env bash
# The main job on a fresh machine: install, build, then tune the detected GPU on the FP32 shape suite
# and benchmark it against cuBLAS. Without a GPU it says so and shows what works without one.
# Options are passed to `gemmforge tune` (e.g. --time 600, --max-evals 200).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# Without a GPU only the gemmforge tool runs here: the worker, benchmarks and tests are not built.
gpu=0
if { command -v nvidia-smi > /dev/null && nvidia-smi -L 2> /dev/null | grep -q '^GPU'; } ||
   compgen -G '/dev/nvidia[0-9]*' > /dev/null; then
  gpu=1
fi
if [ "$gpu" = 1 ]; then
  "$here/scripts/build.sh"
else
  echo "No GPU found (nvidia-smi lists none, no /dev/nvidia*): building only the gemmforge tool"
  "$here/scripts/build.sh" gemmforge_cli
fi
gf="$here/build/bin/gemmforge"
shapes="$here/shapes/fp32-suite.txt"
"$gf" devices
if [ "$gpu" = 1 ] && "$gf" devices --json | grep -q '"uuid"'; then
  "$gf" tune --shapes "$shapes" "$@"
  "$gf" bench --shapes "$shapes" --plot "$here/build/bench.svg"
  "$gf" report --top 3
  echo "Results: the database at \${GEMMFORGE_DB:-~/.cache/gemmforge/gemmforge.db}; the ratio plot: build/bench.svg."
else
  cat <<MSG

No GPU here, so nothing can be tuned or timed. What works without one:
MSG
  set -x
  "$gf" space --template sgemm_tf32x3 --shape 4096x4096x4096 --arch sm_90
  "$gf" compile --template sgemm_tf32x3 --seed 0 --arch sm_90 --shape 4096x4096x4096
  "$gf" query --shape 4096x4096x4096 --device-name "NVIDIA H200"
fi
