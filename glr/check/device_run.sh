#!/usr/bin/env bash
# File: glr/check/device_run.sh
# One-shot driver on the H200 (issue 4 items 4-6): installs fla from .whl/ and kcv (this checkout,
# built with the sm_90a kernels) into /tmp/site, runs the Python tests, verify_vs_fla.py and
# bench/glr/bench.py, writing under $OUT (default ./device_out): install.log, pytest.log,
# verify_vs_fla.md, verify.log, bench.md, bench.log; the short tables are printed last.
# Run from the repository root (the .whl folder must be carried):  bash glr/check/device_run.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$root/device_out}
mkdir -p "$out"
cd "$root"
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-16}
export FLA_DISABLE_BACKEND_DISPATCH=1
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
export CUDACXX=${CUDACXX:-$nvcc_bin}
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  rm -rf /tmp/site/kcv /tmp/site/kcv-*  # --target never replaces an existing package
  time python3 -m pip install -v --no-build-isolation --no-deps --no-index --upgrade --target /tmp/site .
} > "$out/install.log" 2>&1
echo "install: exit $? ($(grep -E 'kcv python:' "$out/install.log" | head -1))"
python3 -c "import kcv.glr as g; print('kcv.glr has_cuda =', g.has_cuda())" || {
  tail -40 "$out/install.log"; exit 1; }

(cd /tmp && timeout 120 python3 -m pytest -q -p no:cacheprovider "$root/python/tests") \
  > "$out/pytest.log" 2>&1
echo "pytest: exit $? ($(tail -1 "$out/pytest.log"))"

timeout "${VERIFY_S:-240}" python3 glr/check/verify_vs_fla.py --out "$out/verify_vs_fla.md" \
  > "$out/verify.log" 2>&1
echo "verify_vs_fla: exit $?"
timeout "${BENCH_S:-200}" python3 bench/glr/bench.py --out "$out/bench.md" > "$out/bench.log" 2>&1
echo "bench: exit $?"

echo; tail -n 25 "$out/verify.log"
echo; tail -n 20 "$out/bench.log"
