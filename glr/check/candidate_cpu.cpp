// File: glr/check/candidate_cpu.cpp
// libkcv_glr_emulated.so: the GLR kernels as a kcv candidate library whose kernels run the sm_90a
// stage kernels compiled as host C++ (emulator/, one host thread per CTA). The CPU path of the
// GLR verification: `kcv verify --candidate <this library>` checks the kernels' algebra,
// indexing, masking and determinism without a GPU. KCV_GLR_CTA_THREADS=256 in the environment
// runs every CTA on 256 host threads with __syncthreads() as a barrier instead (under
// ThreadSanitizer a missing barrier is then a reported data race). The decode ops
// (glr.<member>.decode) run the decode kernel's body the same way (decode_abi.hpp), 32 host
// threads per CTA.
#include <algorithm>
#include <cstdlib>

#include "check/candidate_abi.hpp"
#include "check/decode_abi.hpp"
#include "check/emulator/emulated_decode.hpp"
#include "check/emulator/emulated_device.hpp"

namespace {

int cta_threads() {
  const char* v = std::getenv("KCV_GLR_CTA_THREADS");
  const int n = v == nullptr ? 1 : std::atoi(v);
  return n >= 1 ? n : 1;
}

kcv::Expected<kcv::glr::check::DeviceResults> emulate(const kcv::glr::check::HostInputs& in) {
  return kcv::glr::check::run_emulated(in, cta_threads());
}

constexpr const char* kContract = R"({"deterministic": true})";

const auto kChunk = kcv::glr::check::member_kernels<emulate>(kContract);
const auto kDecode =
    kcv::glr::check::decode_kernels<kcv::glr::check::run_decode_on_host>(kContract);

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
