// File: glr/check/redteam_cpu.cpp
// libkcv_glr_redteam.so (tests only): the emulated GDN kernel (candidate_cpu.cpp) and three
// planted defects, one per gate of the GLR verification, each invisible to the others:
//   redteam.glr.gdn.perturbed_output  o's last element off by 1.0 (CMP-01; far beyond tau)
//   redteam.glr.gdn.stale_output_bit  ht[0]'s lowest mantissa bit taken from what the output
//                                     buffer held before the call (a kernel that reads its
//                                     output before writing it): bits follow the call's buffer
//                                     contents (ORD-02; one fp32 ulp stays inside CMP-01's tau)
//   redteam.glr.gdn.nan_zeroed        NaN in o written as 0 (EXC-01; no NaN reaches CMP-01)
// and the conforming glr.gdn, the twin a replayed counterexample must pass on. For the decode op
// (glr.gdn.decode), the emulated decode kernel and two defects of the state (CMP-01):
//   redteam.glr.gdn.decode.no_decay    the state is never decayed (g read as 0: a = 1)
//   redteam.glr.gdn.decode.bf16_state  the final state rounded once to bf16 (a kernel that keeps
//                                      ht in bf16); o, computed before, is the conforming one
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "check/bf16.hpp"
#include "check/candidate_abi.hpp"
#include "check/decode_abi.hpp"
#include "check/emulator/emulated_decode.hpp"
#include "check/emulator/emulated_device.hpp"

namespace {

using kcv::glr::Member;
using namespace kcv::glr::check;

kcv::Expected<DeviceResults> emulate(const HostInputs& in) { return run_emulated(in, 1); }

void perturb_last(kcv_tensor* out, std::uint32_t) {
  auto* o = static_cast<std::uint16_t*>(out[0].data);
  const std::int64_t last = numel(out[0]) - 1;
  o[last] = float_to_bf16(bf16_to_float(o[last]) + 1.0f);
}

void stale_bit(kcv_tensor* out, std::uint32_t ht0_before) {
  auto* ht = static_cast<std::uint32_t*>(out[1].data);
  ht[0] ^= static_cast<std::uint32_t>(std::popcount(ht0_before) & 1);
}

void zero_nan(kcv_tensor* out, std::uint32_t) {
  auto* o = static_cast<std::uint16_t*>(out[0].data);
  for (std::int64_t i = 0; i < numel(out[0]); ++i)
    if (std::isnan(bf16_to_float(o[i]))) o[i] = 0;
}

template <void (*Mutate)(kcv_tensor*, std::uint32_t)>
int mutant(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
           const kcv_call* call) {
  std::uint32_t ht0_before = 0;  // what the call's ht buffer held before the kernel wrote it
  if (n_out > 1) std::memcpy(&ht0_before, out[1].data, sizeof ht0_before);
  const int rc = run_kernel(Member::kGatedDeltaNet, in, n_in, out, n_out, call, emulate);
  if (rc == 0) Mutate(out, ht0_before);
  return rc;
}

kcv::Expected<DecodeResult> decode_without_decay(const DecodeCall& call) {
  DecodeCall undecayed = call;
  std::fill(undecayed.g.begin(), undecayed.g.end(), 0.0f);
  return run_decode_on_host(undecayed);
}

kcv::Expected<DecodeResult> decode_bf16_state(const DecodeCall& call) {
  auto r = run_decode_on_host(call);
  if (r)
    for (float& x : r->state) x = bf16_to_float(float_to_bf16(x));
  return r;
}

constexpr const char* kContract = R"({"deterministic": true})";

const kcv_kernel kKernels[] = {
    {"glr.gdn", "glr.gdn", kContract, run_member<emulate, Member::kGatedDeltaNet>, nullptr},
    {"redteam.glr.gdn.perturbed_output", "glr.gdn", kContract, mutant<perturb_last>, nullptr},
    {"redteam.glr.gdn.stale_output_bit", "glr.gdn", kContract, mutant<stale_bit>, nullptr},
    {"redteam.glr.gdn.nan_zeroed", "glr.gdn", kContract, mutant<zero_nan>, nullptr},
    {"glr.gdn.decode", "glr.gdn.decode", kContract,
     run_decode_member<run_decode_on_host, Member::kGatedDeltaNet>, nullptr},
    {"redteam.glr.gdn.decode.no_decay", "glr.gdn.decode", kContract,
     run_decode_member<decode_without_decay, Member::kGatedDeltaNet>, nullptr},
    {"redteam.glr.gdn.decode.bf16_state", "glr.gdn.decode", kContract,
     run_decode_member<decode_bf16_state, Member::kGatedDeltaNet>, nullptr},
};

}  // namespace

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) {
  *count = static_cast<int32_t>(sizeof kKernels / sizeof kKernels[0]);
  return kKernels;
}
