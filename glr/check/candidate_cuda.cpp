// File: glr/check/candidate_cuda.cpp
// libkcv_glr_cuda_candidate.so: the sm_90a GLR kernels as a kcv candidate library. Each call
// uploads the inputs, poisons every output and the whole workspace with 0xFF (NaN in bf16 and
// fp32), runs forward then backward on one stream and downloads the results (device_run.hpp).
// Resources for RES-02 come from the build's ptxas log (kcv verify --resources).
#include "check/candidate_abi.hpp"
#include "check/device_run.hpp"

namespace {

using kcv::glr::Member;
using kcv::glr::check::run_device;
using kcv::glr::check::run_member;

constexpr const char* kContract =
    R"({"deterministic": true, "arch": "sm_90a", "budgets": {"spill_bytes": 0}})";

const kcv_kernel kKernels[] = {
    {"glr.la", "glr.la", kContract, run_member<run_device, Member::kLinearAttention>, nullptr},
    {"glr.ssd", "glr.ssd", kContract, run_member<run_device, Member::kSimpleGla>, nullptr},
    {"glr.gla", "glr.gla", kContract, run_member<run_device, Member::kGla>, nullptr},
    {"glr.deltanet", "glr.deltanet", kContract, run_member<run_device, Member::kDeltaNet>, nullptr},
    {"glr.gdn", "glr.gdn", kContract, run_member<run_device, Member::kGatedDeltaNet>, nullptr},
    {"glr.kda", "glr.kda", kContract, run_member<run_device, Member::kKda>, nullptr},
};

}  // namespace

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) {
  *count = static_cast<int32_t>(sizeof kKernels / sizeof kKernels[0]);
  return kKernels;
}
