#!/usr/bin/env bash
# RES-02 on the tensor-core GLR kernels of this build: the ptxas report that
# cmake/keep-compile-output.sh kept beside each object of kcv_glr_dev_cuda (<object>.out), judged
# under the contract of libkcv_glr_mma_candidate.so (no spill, no stack frame, sm_90a's limits).
#   mma_resources.sh KCV CANDIDATE OBJECT...
set -euo pipefail
kcv=$1 candidate=$2
shift 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for object in "$@"; do cat "$object.out"; done > "$log"
grep -q "bytes stack frame" "$log" || { echo "mma_resources: no ptxas report in $*.out"; exit 1; }
"$kcv" verify --candidate "$candidate" --op glr.gdn --gates RES-02 --resources "$log"
