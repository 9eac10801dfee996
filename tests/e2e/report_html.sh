#!/usr/bin/env bash
# File: tests/e2e/report_html.sh
# End-to-end test of `kcv report`: writes the hand-computed store, runs the command with --json
# and --html, checks the terminal summary and the JSON, then renders the page in headless
# Chromium and checks that the RENDERED DOM holds the three figures, each an <svg> with drawn
# elements. Exit 77 (CTest SKIP_RETURN_CODE) when no Chromium is installed.
# Usage: report_html.sh KCV MAKE_STORE WORKDIR
set -u
KCV=$1 MAKE_STORE=$2 WORK=$3
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$WORK" && mkdir -p "$WORK" || fail "cannot create $WORK"
"$MAKE_STORE" "$WORK/store.db" || fail "make_report_store failed"

"$KCV" report "$WORK/store.db" --json "$WORK/report.json" --html "$WORK/report.html" \
  --sample-per-stratum 1 --seed 5 >"$WORK/summary.txt" 2>"$WORK/stderr.txt"
rc=$?
cat "$WORK/summary.txt" "$WORK/stderr.txt"
[ $rc -eq 0 ] || fail "kcv report exited $rc"
grep -q '^strict .* 4/7 (57.1%) .* 2/7 (28.6%)' "$WORK/summary.txt" || fail "headline line"
grep -q 'reverse cases (kcv accepts, another judge rejects): 2' "$WORK/summary.txt" || fail "reverse count"
grep -q 'kernels not ok: 3' "$WORK/summary.txt" || fail "bad kernel count"
grep -q '"schema": "kcv-audit-report"' "$WORK/report.json" || fail "json schema"
grep -q '"kcv_rejects_other_accepts": 2' "$WORK/report.json" || fail "json 2x2"
head -1 "$WORK/summary.txt" | grep -q '^integrity: verified (10 final kernel(s)' || fail "integrity line"
grep -q '"state": "verified"' "$WORK/report.json" || fail "json integrity"
grep -q '<div id="integrity" data-state="verified">' "$WORK/report.html" || fail "html integrity"
if grep -Eq '<script|src=|href=' "$WORK/report.html"; then fail "the page loads something"; fi

CHROMIUM=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then CHROMIUM=$(command -v "$c"); break; fi
done
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: no chromium installed (Debian package chromium)"
  exit 77
fi
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/chromium" \
  --dump-dom "file://$WORK/report.html" >"$WORK/dom.html" 2>"$WORK/chromium.log" \
  || fail "chromium exited $? (log: $WORK/chromium.log)"

# figure ID ELEMENT MIN: the rendered <figure id=ID> holds an <svg> with at least MIN ELEMENTs.
figure() {
  local body
  body=$(sed -n "/<figure id=\"$1\">/,/<\/figure>/p" "$WORK/dom.html")
  [ -n "$body" ] || fail "no figure #$1 in the rendered DOM"
  grep -q '<svg' <<<"$body" || fail "figure #$1 has no <svg>"
  local n
  n=$(grep -o "$2" <<<"$body" | wc -l)
  [ "$n" -ge "$3" ] || fail "figure #$1: $n elements matching '$2', expected >= $3"
  echo "ok: #$1 rendered with $n x $2"
}
figure fig-rigor-gap '<rect[^>]*class="bar"' 8
figure fig-calibration '<rect[^>]*class="bin"' 9
figure fig-differential '<rect[^>]*class="cell"' 24
grep -q 'B/z&lt;x&gt;&amp;"y"/P9\|B/z&lt;x&gt;&amp;&quot;y&quot;/P9' "$WORK/dom.html" \
  || fail "escaped kernel id missing from the rendered page"
echo "PASS"
