#!/usr/bin/env bash
# A CMake compiler launcher: runs the compile command it is given and keeps what the compiler
# printed in <object>.out (the object named by -o). The ptxas report of `--resource-usage` goes
# there instead of the build log; anything else the compiler printed is shown as usual, and all of
# it when the compile fails.
set -uo pipefail
object=
prev=
for arg in "$@"; do
  [[ $prev == -o ]] && object=$arg
  prev=$arg
done
[[ -n $object ]] || exec "$@"
"$@" > "$object.out" 2>&1
rc=$?
if (( rc != 0 )); then
  cat "$object.out"
else
  grep -vE '^ptxas info|bytes stack frame|^    [0-9]+ bytes (gmem|cmem)' "$object.out" || true
fi
exit "$rc"
