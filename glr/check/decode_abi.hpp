// File: glr/check/decode_abi.hpp
// The decode kernel as kcv candidates (kcv_kernel.h): one kernel per member, implementing the GLR
// decode op glr.<member>.decode of kcv/glr/verify.hpp, as kcv.glr's fused_recurrent_* ops call
// it (python/kcv/glr/_autograd.py, _decode_cuda). A call, in the op's order:
//   inputs   q, k [T, H, K] and v [T, HV, V] in bf16, fp16 or fp32 (one dtype); g [T, HV(, K)]
//            (gated members) and beta [T, HV] (delta rule) in fp32 or bf16; h0 [N, HV, K, V]
//            fp32 (zeros: no initial state); cu_seqlens [N + 1] int64
//   outputs  o [T, HV, V] in q's dtype, ht [N, HV, K, V] fp32
//   params   scale (default K^-1/2), varlen (1: cu_seqlens passed; 0: a batch of N equal
//            sequences), state_v_first (states [.., V, K])
// Every input is widened to fp32 exactly (what the kernel takes), the state starts as h0, and o
// is rounded once, to nearest even, from the kernel's fp32 into q's dtype. The backend runs the
// DecodeCall: the decode kernel on the GPU (decode_device.hpp) or its body on the CPU
// (emulator/emulated_decode.hpp). Tensors must be contiguous.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "glr/kernels/decode.hpp"
#include "kcv/expected.hpp"
#include "kcv/glr/gpu.hpp"
#include "kcv/kcv_kernel.h"

namespace kcv::glr::check {

/// One decode call in host memory, fp32 throughout.
struct DecodeCall {
  gpu::Dims dims;
  gpu::Config cfg;
  std::vector<float> q, k, v, g, beta;  ///< g, beta empty when the member has none
  std::vector<float> state;             ///< h0 on entry
  std::vector<std::int64_t> cu;         ///< cu_seqlens when varlen, else empty
  std::int64_t o_size = 0;              ///< T·HV·V
  std::size_t device_offset = 0;        ///< as HostInputs::device_offset (ORD-02)
};

/// What a backend returns: o in fp32 and the final state.
struct DecodeResult {
  std::vector<float> o;
  std::vector<float> state;
};

using DecodeBackend = std::function<Expected<DecodeResult>(const DecodeCall&)>;

/// The call's inputs widened to fp32; an error names the bad tensor.
[[nodiscard]] Expected<DecodeCall> decode_call(Member member, const kcv_tensor* inputs,
                                               int n_inputs, const kcv_call* call);

/// The validated parameter block over the call's host buffers (o and state: the result's).
[[nodiscard]] Expected<gpu::detail::DecodeParams> host_params(const DecodeCall& call,
                                                              DecodeResult& result);

/// decode_call, backend, o rounded into q's dtype and ht copied out; 0 on success. Never throws.
int run_decode_kernel(Member member, const kcv_tensor* inputs, int n_inputs, kcv_tensor* outputs,
                      int n_outputs, const kcv_call* call, const DecodeBackend& backend);

/// A kcv_run_fn for member M over the backend function `Run`.
template <Expected<DecodeResult> (*Run)(const DecodeCall&), Member M>
int run_decode_member(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                      const kcv_call* call) {
  return run_decode_kernel(M, in, n_in, out, n_out, call, Run);
}

/// The six members' decode kernels of a candidate library whose calls go through `Run`, each
/// named and registered as its op (glr.la.decode, ..., glr.kda.decode).
template <Expected<DecodeResult> (*Run)(const DecodeCall&)>
constexpr std::array<kcv_kernel, 6> decode_kernels(const char* contract) {
  return {{{"glr.la.decode", "glr.la.decode", contract,
            run_decode_member<Run, Member::kLinearAttention>, nullptr},
           {"glr.ssd.decode", "glr.ssd.decode", contract,
            run_decode_member<Run, Member::kSimpleGla>, nullptr},
           {"glr.gla.decode", "glr.gla.decode", contract, run_decode_member<Run, Member::kGla>,
            nullptr},
           {"glr.deltanet.decode", "glr.deltanet.decode", contract,
            run_decode_member<Run, Member::kDeltaNet>, nullptr},
           {"glr.gdn.decode", "glr.gdn.decode", contract,
            run_decode_member<Run, Member::kGatedDeltaNet>, nullptr},
           {"glr.kda.decode", "glr.kda.decode", contract, run_decode_member<Run, Member::kKda>,
            nullptr}}};
}

}  // namespace kcv::glr::check
