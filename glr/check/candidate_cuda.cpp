// File: glr/check/candidate_cuda.cpp
// libkcv_glr_cuda_candidate.so: the sm_90a GLR kernels as a kcv candidate library. Each call
// uploads the inputs, poisons every output and the whole workspace with 0xFF (NaN in bf16 and
// fp32), runs forward then backward on one stream and downloads the results (device_run.hpp).
// Resources for RES-02 come from the build's ptxas log (kcv verify --resources). The decode ops
// (glr.<member>.decode) run the decode kernel (decode_device.hpp), o poisoned the same way.
#include <algorithm>

#include "check/candidate_abi.hpp"
#include "check/decode_device.hpp"
#include "check/device_run.hpp"

namespace {

constexpr const char* kContract =
    R"({"deterministic": true, "arch": "sm_90a", "budgets": {"spill_bytes": 0, "stack_bytes": 0}})";

const auto kChunk = kcv::glr::check::member_kernels<kcv::glr::check::run_device>(kContract);
const auto kDecode = kcv::glr::check::decode_kernels<kcv::glr::check::run_decode_device>(kContract);

const auto kKernels = [] {
  std::array<kcv_kernel, kChunk.size() + kDecode.size()> all{};
  std::copy(kChunk.begin(), kChunk.end(), all.begin());
  std::copy(kDecode.begin(), kDecode.end(), all.begin() + kChunk.size());
  return all;
}();

}  // namespace

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) {
  *count = static_cast<int32_t>(kKernels.size());
  return kKernels.data();
}
