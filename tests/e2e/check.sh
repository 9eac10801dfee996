#!/usr/bin/env bash
# File: tests/e2e/check.sh
# Runs one command and checks its exit code and output, for CTest: one line per failed check,
# the command's whole output on failure. Python-free on purpose (the C++ build needs no Python).
#   check.sh --rc N [--match ERE]... [--no-match ERE]... [--lines N] -- command args...
# --match / --no-match: extended regexes on stdout+stderr; --lines: exact stdout line count.
set -u
rc_want="" ; lines_want="" ; matches=() ; no_matches=()
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --rc) rc_want="$2"; shift 2 ;;
    --match) matches+=("$2"); shift 2 ;;
    --no-match) no_matches+=("$2"); shift 2 ;;
    --lines) lines_want="$2"; shift 2 ;;
    *) echo "check.sh: unknown option $1" >&2; exit 99 ;;
  esac
done
shift
out_file=$(mktemp); err_file=$(mktemp)
trap 'rm -f "$out_file" "$err_file"' EXIT
"$@" >"$out_file" 2>"$err_file"
rc=$?
ok=1
fail() { echo "FAILED: $*"; ok=0; }
[[ -n "$rc_want" && "$rc" != "$rc_want" ]] && fail "exit code $rc, expected $rc_want"
(( rc >= 128 )) && fail "killed by signal $((rc - 128))"
for m in "${matches[@]+"${matches[@]}"}"; do
  cat "$out_file" "$err_file" | grep -Eq -- "$m" || fail "output does not match /$m/"
done
for m in "${no_matches[@]+"${no_matches[@]}"}"; do
  cat "$out_file" "$err_file" | grep -Eq -- "$m" && fail "output matches /$m/"
done
if [[ -n "$lines_want" ]]; then
  n=$(wc -l <"$out_file")
  [[ "$n" != "$lines_want" ]] && fail "stdout has $n lines, expected $lines_want"
fi
if (( ok == 0 )); then
  echo "command: $*"; echo "--- stdout"; cat "$out_file"; echo "--- stderr"; cat "$err_file"
  exit 1
fi
exit 0
