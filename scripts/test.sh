#!/usr/bin/env bash
# Sets up a fresh machine (Debian/Ubuntu packages), builds gemmforge and runs every test. Tests labelled
# "gpu" skip where no CUDA device is present; the reasons they give are printed at the end. Arguments go
# to ctest (e.g. -LE gpu, -LE slow, -R Import).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/build.sh"
# cuobjdump for the compile tests' SASS checks, where the CUDA toolkit lacks it.
sass_tools=$("$here/scripts/install-sass-tools.sh")
[ -n "$sass_tools" ] && export PATH="$sass_tools:$PATH"
cd "$here/build"
status=0
ctest --output-on-failure -j "$(nproc)" "$@" || status=$?
# ctest names skipped tests but not why they skipped; GoogleTest wrote the reason after "Skipped" in the log.
log=Testing/Temporary/LastTest.log
if [ -f "$log" ] && grep -q '^\[  SKIPPED \]' "$log"; then
  echo
  echo "Skipped tests, by reason:"
  awk '
    /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); test = $0; next }
    /: Skipped$/ { reading = 1; reason = ""; next }
    reading && /^\[  SKIPPED \]/ {
      reading = 0
      if (reason == "") reason = "(no reason given)"
      if (!(reason in count)) order[++reasons] = reason
      count[reason]++
      if (!(reason in first)) first[reason] = test
      next
    }
    reading && NF { reason = reason (reason == "" ? "" : " ") $0 }
    END {
      for (i = 1; i <= reasons; i++) {
        r = order[i]
        printf "  %d test(s), e.g. %s:\n    %s\n", count[r], first[r], r
      }
    }' "$log"
fi
exit "$status"
