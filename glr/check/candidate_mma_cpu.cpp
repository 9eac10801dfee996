// File: glr/check/candidate_mma_cpu.cpp
// libkcv_glr_mma_emulated.so: the tensor-core GLR kernels of glr/dev run on the CPU through their
// host emulation (glr/dev/host_runner.hpp), as a kcv candidate library: glr.la, glr.ssd,
// glr.deltanet, glr.gdn, glr.gla and glr.kda, each call adapted by mma_adapter.hpp exactly as on
// the GPU (run_mma_emulated). The CPU path of the tensor-core kernels through kcv's pipeline: `kcv
// verify --candidate <this library> --grade bf16 --glr-cases small`.
#include "check/candidate_abi.hpp"
#include "check/emulator/emulated_mma.hpp"

namespace {

constexpr const char* kContract = R"({"deterministic": true})";

const auto kKernels =
    kcv::glr::check::tensor_core_member_kernels<kcv::glr::check::run_mma_emulated>(kContract);

}  // namespace

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) {
  *count = static_cast<int32_t>(kKernels.size());
  return kKernels.data();
}
