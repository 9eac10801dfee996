#!/usr/bin/env bash
# File: tests/e2e/replay_roundtrip.sh
# `kcv verify` on a broken kernel exits 1, prints a `kcv replay ...` line and writes JSON and
# JUnit reports; running that exact line (it is shell-quoted) reproduces the failure: exit 1 and
# "reproduced". The same probe run on a correct kernel of the same op passes, and replay says
# loudly that the failure did NOT reproduce (exit 3).
#   replay_roundtrip.sh KCV LIB KERNEL CORRECT_KERNEL WORKDIR [VERIFY_ARG...]
# Extra arguments go to `kcv verify` (a GLR kernel's case list and gates, say).
set -u
kcv=$1 lib=$2 kernel=$3 correct=$4 work=$5
shift 5
extra=("$@")
rm -rf "$work" && mkdir -p "$work"
die() { echo "FAILED: $*"; for f in "$work"/*.txt; do echo "--- $f"; cat "$f"; done; exit 1; }

"$kcv" verify --candidate "$lib" --kernel "$kernel" --no-large "${extra[@]}" \
  --json "$work/report.json" --junit "$work/report.xml" >"$work/verify.txt" 2>&1
rc=$?
[[ $rc == 1 ]] || die "kcv verify exited $rc, expected 1"
grep -q '"schema_version": 1' "$work/report.json" || die "no JSON report with schema_version 1"
grep -q '<testsuites' "$work/report.xml" || die "no JUnit report"
grep -q '<failure' "$work/report.xml" || die "JUnit report has no <failure>"

line=$(grep -m1 -E '^[[:space:]]*kcv replay ' "$work/verify.txt" | sed -E 's/^[[:space:]]*kcv //')
[[ -n "$line" ]] || die "kcv verify printed no 'kcv replay' line"
eval "set -- $line"  # the line is single-quoted for a POSIX shell
"$kcv" "$@" >"$work/replay.txt" 2>&1
rc=$?
[[ $rc == 1 ]] || die "kcv replay exited $rc, expected 1"
grep -q 'reproduced' "$work/replay.txt" || die "kcv replay did not say 'reproduced'"

probe="${*: -1}"  # the token is the line's last word
"$kcv" replay --candidate "$lib:$correct" --probe "$probe" >"$work/not_reproduced.txt" 2>&1
rc=$?
[[ $rc == 3 ]] || die "kcv replay on $correct exited $rc, expected 3"
grep -q 'did NOT reproduce' "$work/not_reproduced.txt" || die "kcv replay on $correct did not say 'did NOT reproduce'"
echo "replayed: kcv $line"
