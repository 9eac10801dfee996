// File: glr/check/candidate_mma_cuda.cpp
// libkcv_glr_mma_candidate.so: the tensor-core GLR kernels of glr/dev (chunked_mma_forward,
// chunked_mma_backward; sm_90a) as a kcv candidate library, glr.la, glr.ssd, glr.deltanet,
// glr.gdn, glr.gla and glr.kda. Each call is adapted to the kernels' K = V = 128
// and dtypes (mma_adapter.hpp: zero padding, widening, fp32 β rounded to bf16) and run by
// run_mma_device with the poisoning of device_run.cpp. Resources for RES-02 come from the build's
// ptxas log of the dev kernels (kcv verify --resources kcv/glr_mma_ptxas.log).
#include "check/candidate_abi.hpp"
#include "check/device_run_mma.hpp"

namespace {

constexpr const char* kContract =
    R"({"deterministic": true, "arch": "sm_90a", "budgets": {"spill_bytes": 0, "stack_bytes": 0}})";

const auto kKernels =
    kcv::glr::check::tensor_core_member_kernels<kcv::glr::check::run_mma_device>(kContract);

}  // namespace

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) {
  *count = static_cast<int32_t>(kKernels.size());
  return kKernels.data();
}
