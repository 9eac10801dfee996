#!/usr/bin/env bash
# File: glr/dev/run_on_h200.sh
# The tensor-core GLR forward and backward (glr/dev/chunked_mma_{forward,backward}.cuh) on the
# H200, in about 4½ minutes, from the repository root, everything written under $OUT (default
# ./glr_dev_out):
#   1. builds glr_dev_check for sm_90a (cmake -S glr: needs only CMake, Ninja, a C++20 host
#      compiler and nvcc) and, beside it, the dev kernels alone with -Xptxas -v
#      (ptxas_dev.txt: registers, spills, stack per kernel; sass_counts.txt when cuobjdump is
#      there: HMMA, LDSM, LDGSTS and local-memory instructions per kernel);
#   2. glr_dev_check: GDN's forward and SSD's backward (dq, dk, dv, dg, dh0) against the fp64
#      chunked reference under the bf16-grade bounds at T ∈ {64, 1000, 8192} (B1, H4,
#      K = V = 128) and one varlen GVA case, value tiles 32 and 64 bitwise equal, 5-run bitwise
#      determinism; DeltaNet's and GDN's backward (dβ too) at T ∈ {64, 1000} and a varlen GVA
#      case with 3-run determinism; then the forward's time (GDN) and forward + backward time
#      (SSD at B1·T8192·H32 and B4·T4096·H16, DeltaNet and GDN at the first) against kcv's
#      CUDA-core kernels in the same process, with the stage profile (each launch of the forward
#      and the backward timed by CUDA events) (check.log, results.tsv);
#   3. fla's forward and forward + backward of GDN, SSD, LA and DeltaNet at the same shapes
#      (glr/dev/time_fla.py) when fla imports (from PYTHONPATH, or installed from the wheels in
#      .whl/ into /tmp/site), within what is left of BUDGET_S (default 260 s), members in the
#      order FLA_MEMBERS gives (default gdn,ssd,la,deltanet) (fla.log, fla.tsv);
#   4. prints the tables last.
# The files under $OUT: env.txt, build.log, ptxas_dev.txt, sass_counts.txt, check.log,
# results.tsv, fla.log, fla.tsv, and sanitize.log with GLR_SANITIZE=1.
#   bash glr/dev/run_on_h200.sh                  # fla's wheels in .whl/ (optional): the fla row
#   GLR_SANITIZE=1 bash glr/dev/run_on_h200.sh   # also compute-sanitizer memcheck and racecheck
#                                                # on two small cases (sanitize.log), before fla
# Exit status: glr_dev_check's (0 = every check passed).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$root/glr_dev_out}
build=${GLR_DEV_BUILD:-$root/build/glr-dev-h200}
budget_s=${BUDGET_S:-260}
mkdir -p "$out"
cd "$root"
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
jobs=$(nproc 2>/dev/null || echo 8)

{
  echo "== $(date -u +%FT%TZ) $(uname -m)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
    --format=csv,noheader || true
  "$nvcc_bin" --version | tail -2
  cmake --version | head -1
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

# 1. build (the -Xptxas -v compile of the dev kernels runs beside the CMake build)
demangle=cat
command -v c++filt > /dev/null && demangle=c++filt
( for f in forward backward; do
    "$nvcc_bin" -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I. -Iinclude \
      -c glr/dev/chunked_mma_$f.cu -o /tmp/chunked_mma_$f.o 2>&1 | $demangle
  done > "$out/ptxas_dev.txt" ) &
ptxas_pid=$!
cmake -S glr -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKCV_CUDA_CHECKS=ON \
  -DKCV_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER="$nvcc_bin" > "$out/build.log" 2>&1
cmake --build "$build" --target glr_dev_check -j"$jobs" >> "$out/build.log" 2>&1
build_status=$?
wait "$ptxas_pid"
echo "[$(elapsed) s] build: exit $build_status"
if [[ $build_status != 0 ]]; then
  grep -E "error" "$out/build.log" | head -30
  exit 1
fi
if command -v cuobjdump > /dev/null; then  # which instructions the products became, per kernel
  cuobjdump -sass /tmp/chunked_mma_forward.o /tmp/chunked_mma_backward.o | $demangle | awk '
    /Function :/ { name = $0; sub(/.*Function : /, "", name) }
    { for (i = 1; i <= NF; ++i) if ($i ~ /^(HMMA|LDSM|LDGSTS|LDL|STL|FFMA)/) {
        op = $i; sub(/\..*/, "", op); n[name " " op]++ } }
    END { for (k in n) print n[k], k }' | sort -k2 > "$out/sass_counts.txt"
fi
grep -E "Compiling entry|registers|spill|smem" "$out/ptxas_dev.txt" \
  | sed -E 's/ptxas info *: //; s/kcv::glr::dev:://g; s/\(kcv::glr::GateKind\)//g' \
  > /tmp/glr_dev_resources.txt

# 2. the checks and the timings
timeout 200 "$build/dev/glr_dev_check" --out "$out" 2>&1 | tee "$out/check.log"
check_status=${PIPESTATUS[0]}
echo "[$(elapsed) s] glr_dev_check: exit $check_status (124: out of time)"
if [[ "${GLR_SANITIZE:-0}" == 1 ]]; then
  for tool in memcheck racecheck; do
    timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 3 \
      "$build/dev/glr_dev_check" --small --out /tmp >> "$out/sanitize.log" 2>&1
    san_status=$?
    echo "[$(elapsed) s] compute-sanitizer $tool: exit $san_status (0 = clean; log: sanitize.log)"
  done
fi

# 3. fla, in the time left
left=$(( budget_s - $(elapsed) ))
export FLA_DISABLE_BACKEND_DISPATCH=1 TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton-cache}
if ! python3 -c "import fla" > /dev/null 2>&1 && ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl \
    > "$out/fla.log" 2>&1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
if (( left > 30 )); then
  timeout "$left" python3 glr/dev/time_fla.py --out "$out/fla.tsv" \
    --members "${FLA_MEMBERS:-gdn,ssd,la,deltanet}" >> "$out/fla.log" 2>&1
  fla_status=$?
  echo "[$(elapsed) s] fla: exit $fla_status (3: fla not importable, 124: out of time)"
else
  echo "fla: skipped (${left} s left)" >> "$out/fla.log"
fi

# 4. the tables
echo
echo "== resources (ptxas, sm_90a; per kernel: registers, spills, stack; smem is dynamic:"
echo "   prepare 111 KB, state_output 151 KB (tile 32) / 175 KB (tile 64), the recompute's state"
echo "   pass without the output 94 / 114 KB (60 / 80 KB without the delta rule),"
echo "   dh_scan 50 / 62 KB (tile 32 / 64; delta rule 96 / 108 KB), grads 157.5 KB (SSD),"
echo "   190.25 KB (GDN), 156.25 KB (LA, DeltaNet), wy_grads 112 KB)"
paste -d' ' - - - < <(grep -E "Compiling entry|Used|spill" /tmp/glr_dev_resources.txt \
  | sed -E "s/Compiling entry function '//; s/' for 'sm_90a'//") | cut -c1-180
if [[ -s $out/sass_counts.txt ]]; then
  echo "== SASS instruction counts (GDN forward, SSD and GDN backward kernels; HMMA = tensor core,"
  echo "   LDSM = ldmatrix, LDGSTS = cp.async, LDL/STL = local memory)"
  grep -E "GateKind\)1, true|(dh_scan|grad)_kernel<\(kcv::glr::GateKind\)1" \
    "$out/sass_counts.txt" | sed -E 's/kcv::glr::dev:://g' | cut -c1-120
fi
echo
sed -n '/^| check |/,$p' "$out/check.log"
echo
echo "fla (pure Triton), same shapes: member, shape, fwd ms, fwd+bwd ms:"
grep -E "^fla	|not importable|skipped" "$out/fla.log" 2>/dev/null || tail -3 "$out/fla.log"
exit "$check_status"
