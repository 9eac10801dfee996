// File: glr/check/candidate_cuda.cpp
// libkcv_glr_cuda_candidate.so: the sm_90a GLR kernels as a kcv candidate library. Each call
// uploads the inputs, poisons every output and the whole workspace with 0xFF (NaN in bf16 and
// fp32), runs forward then backward on one stream and downloads the results (device_run.hpp).
// Resources for RES-02 come from the build's ptxas log (kcv verify --resources).
#include "check/candidate_abi.hpp"
#include "check/device_run.hpp"

namespace {

constexpr const char* kContract =
    R"({"deterministic": true, "arch": "sm_90a", "budgets": {"spill_bytes": 0}})";

const auto kKernels = kcv::glr::check::member_kernels<kcv::glr::check::run_device>(kContract);

}  // namespace

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) {
  *count = static_cast<int32_t>(kKernels.size());
  return kKernels.data();
}
