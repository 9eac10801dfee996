#!/usr/bin/env bash
# File: glr/check/run_on_h200.sh
# Builds the sm_90a GLR kernels and glr_check from source on the GPU machine and runs the harness,
# writing everything under $OUT (default ./glr_check_out). Run from the repository root:
#
#   bash glr/check/run_on_h200.sh            # full case list (~2 min of CPU reference on 16 cores)
#   bash glr/check/run_on_h200.sh --quick    # a few small cases
#
# Extra arguments go to glr_check. Set GLR_RACECHECK=1 to also run the tiny case of every member
# under compute-sanitizer --tool racecheck (shared-memory hazards; works on Firecracker machines).
# The glr/ directory is configured on its own (cmake -S glr): it needs only CMake, Ninja, a C++20
# host compiler and nvcc, none of the top-level dependencies (fmt, CLI11, MPFR, ...), and binaries
# built elsewhere may not run on that machine's image.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$root/glr_check_out}
build=$root/build/glrcuda-h200
mkdir -p "$out"
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

{
  echo "== $(date -u +%FT%TZ) $(uname -m)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$nvcc_bin" --version | tail -2
  cmake --version | head -1
} 2>&1 | tee "$out/env.txt"

cmake -S "$root/glr" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKCV_CUDA_CHECKS=ON \
  -DKCV_GLR_RESOURCE_USAGE=ON -DCMAKE_CUDA_COMPILER="$nvcc_bin" 2>&1 | tee "$out/configure.log"
# --resource-usage prints registers, spills, stack and shared memory of every kernel.
cmake --build "$build" --target glr_check -j16 2>&1 | tee "$out/build.log"
demangle=cat
command -v c++filt > /dev/null && demangle=c++filt
grep -E "Function properties|registers|spill|Compiling entry" "$out/build.log" | $demangle \
  > "$out/resources.txt" || true

set +e
"$build/check/glr_check" --out "$out/glr_check.md" "$@" 2>&1 | tee "$out/glr_check.log"
status=${PIPESTATUS[0]}
if [[ "${GLR_RACECHECK:-0}" == 1 ]]; then
  compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 3 \
    "$build/check/glr_check" --tiny --accuracy-only > "$out/racecheck.log" 2>&1
  echo "racecheck: exit $? (0 = no hazard; log: racecheck.log)"
fi
echo "glr_check exit status: $status (report: $out/glr_check.md)"
exit "$status"
