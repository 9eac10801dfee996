#!/usr/bin/env bash
# An audit of a few ids on a GPU machine with the host and the GPU watched beside it: runs
# scripts/device-audit (same knobs: AUDIT_JOBS, AUDIT_DEADLINE_S, AUDIT_ARGS, ...) with
# `vmstat 10` and `nvidia-smi dmon -s u -d 10` running, then prints bench/audit/figures.py over
# the store and timings, and keeps the candidates' ninja logs (each build's seconds per
# compiled file) from the build cache. Everything lands in one archive, $OUT/watched.tgz
# (OUT defaults to ./device_out):
#   AUDIT_JOBS=6 AUDIT_ARGS="--ids-from docs/audit/contention-sample/ids.txt" \
#     bash bench/audit/watched_audit.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$root/device_out}
mkdir -p "$out/watched"
w=$out/watched
vmstat -t 10 > "$w/vmstat.txt" 2>&1 &
vm=$!
dmon=""
if command -v nvidia-smi > /dev/null; then
  nvidia-smi dmon -s u -d 10 > "$w/dmon.txt" 2>&1 &
  dmon=$!
fi
OUT=$w bash "$root/scripts/device-audit" > "$w/audit.log" 2>&1
rc=$?
kill $vm ${dmon:+$dmon} 2> /dev/null
cd "$root"
store=${AUDIT_STORE:-out/audit/audit.db}
python3 bench/audit/figures.py --cold "$store" "$w/timings.jsonl" > "$w/figures.txt" 2>&1
cp "$store" "$w/audit.db" 2> /dev/null
# the build directories' ninja logs: .ninja_log lines are start ms, end ms, mtime, target, hash
cache=${AUDIT_CACHE_DIR:-/tmp/kcv-cache}
find "$cache" -name .ninja_log 2> /dev/null | while read -r log; do
  echo "# ${log#"$cache"/}"
  cat "$log"
done > "$w/ninja_logs.txt"
tar czf "$out/watched.tgz" -C "$out" watched
echo "watched audit: device-audit exit $rc; $(grep -c . "$w/timings.jsonl" 2> /dev/null) timing line(s)"
cat "$w/figures.txt"
exit $rc
