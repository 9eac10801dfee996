// File: glr/check/candidate_abi.hpp
// The GLR kernels as kcv candidates (kcv_kernel.h): one kernel per member, implementing the GLR
// op glr.<member> of kcv/glr/verify.hpp. A call is forward + backward on host tensors, in the
// op's order:
//   inputs   q, k [T, H, K] bf16; v [T, HV, V] bf16; g [T, HV(, K)] (gated members) and
//            beta [T, HV] (delta rule) in fp32 or bf16; h0 [N, HV, K, V] fp32; dO [T, HV, V]
//            bf16; dht [N, HV, K, V] fp32; cu_seqlens [N + 1] int64
//   outputs  o, ht, dq, dk, dv, (dg), (dbeta), dh0 in the kernels' dtypes
//   params   scale (default K^-1/2), varlen (1: cu_seqlens passed, batch 1; 0: a batch of N equal
//            sequences), cu_int32 (pass cu_seqlens as int32), state_v_first (states [.., V, K])
// The backend runs the HostInputs: the sm_90a kernels on the GPU (device_run.hpp) or the same
// stage kernels compiled as host C++ (emulator/). Tensors must be contiguous.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "check/device_results.hpp"
#include "check/inputs.hpp"
#include "kcv/kcv_kernel.h"

namespace kcv::glr::check {

using Backend = std::function<Expected<DeviceResults>(const HostInputs&)>;

/// Elements of a tensor; whether it is contiguous (row-major, size-1 dims ignored).
std::int64_t numel(const kcv_tensor& t);
bool contiguous(const kcv_tensor& t);
/// The call parameter `name`, or `fallback` when the call has none.
double param(const kcv_call* call, std::string_view name, double fallback);

/// A GLR call's tensors in the ABI's order: q, k, v, g (gated members), beta (delta rule), h0,
/// the call kind's own tensors (the chunk call's dO and dht; none for decode), cu_seqlens.
struct CallTensors {
  const kcv_tensor* q = nullptr;
  const kcv_tensor* k = nullptr;
  const kcv_tensor* v = nullptr;
  const kcv_tensor* g = nullptr;     ///< null for a member without a gate
  const kcv_tensor* beta = nullptr;  ///< null without the delta rule
  const kcv_tensor* h0 = nullptr;
  const kcv_tensor* own = nullptr;  ///< the call kind's own tensors, between h0 and cu_seqlens
  const kcv_tensor* cu = nullptr;
};

/// The call's problem as the launchers take it: dims from q, v and cu_seqlens (param varlen 1:
/// one packed set of sequences; 0: N sequences of equal length), member, scale (param, default
/// K^-1/2) and state layout (param state_v_first); `offsets` is cu_seqlens as passed.
struct CallLayout {
  gpu::Dims dims;
  gpu::Config cfg;
  std::vector<std::int64_t> offsets;
  bool varlen = true;
};

/// Unpacks the inputs of `member`'s call with `n_own` tensors of its own: their count, that every
/// one is contiguous, q, v [T, heads, dim] and cu_seqlens [N + 1] int64. Errors come from `who`.
[[nodiscard]] Expected<CallTensors> call_tensors(Member member, const kcv_tensor* inputs,
                                                 int n_inputs, int n_own, const char* who);
/// The layout of a call whose tensors call_tensors unpacked; an error when cu_seqlens does not
/// run from 0 to T or equal lengths are asked of unequal sequences.
[[nodiscard]] Expected<CallLayout> call_layout(Member member, const CallTensors& t,
                                               const kcv_call* call, const char* who);

/// The call's inputs and parameters as the launcher takes them; an error names the bad tensor.
[[nodiscard]] Expected<HostInputs> host_inputs(Member member, const kcv_tensor* inputs,
                                               int n_inputs, const kcv_call* call);

/// Copies the results into the call's output tensors (same count, dtypes and sizes).
[[nodiscard]] Status write_outputs(const DeviceResults& results, kcv_tensor* outputs,
                                   int n_outputs);

/// Writes `message` into the call's error buffer; returns 1 (a kernel-reported failure).
int fail(const kcv_call* call, const std::string& message);

/// host_inputs, backend, write_outputs; 0 on success. Never throws.
int run_kernel(Member member, const kcv_tensor* inputs, int n_inputs, kcv_tensor* outputs,
               int n_outputs, const kcv_call* call, const Backend& backend);

/// A kcv_run_fn for member M over the backend function `Run` (HostInputs -> DeviceResults).
template <Expected<DeviceResults> (*Run)(const HostInputs&), Member M>
int run_member(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
               const kcv_call* call) {
  return run_kernel(M, in, n_in, out, n_out, call, Run);
}

/// The six members' kernels of a candidate library whose calls go through `Run`, each named
/// and registered as its op (glr.la, glr.ssd, glr.gla, glr.deltanet, glr.gdn, glr.kda).
template <Expected<DeviceResults> (*Run)(const HostInputs&)>
constexpr std::array<kcv_kernel, 6> member_kernels(const char* contract) {
  return {{{"glr.la", "glr.la", contract, run_member<Run, Member::kLinearAttention>, nullptr},
           {"glr.ssd", "glr.ssd", contract, run_member<Run, Member::kSimpleGla>, nullptr},
           {"glr.gla", "glr.gla", contract, run_member<Run, Member::kGla>, nullptr},
           {"glr.deltanet", "glr.deltanet", contract, run_member<Run, Member::kDeltaNet>, nullptr},
           {"glr.gdn", "glr.gdn", contract, run_member<Run, Member::kGatedDeltaNet>, nullptr},
           {"glr.kda", "glr.kda", contract, run_member<Run, Member::kKda>, nullptr}}};
}

/// The six members (glr.la, glr.ssd, glr.deltanet, glr.gdn, glr.gla, glr.kda): the kernels of the
/// tensor-core candidate libraries, which have no decode op.
template <Expected<DeviceResults> (*Run)(const HostInputs&)>
constexpr std::array<kcv_kernel, 6> tensor_core_member_kernels(const char* contract) {
  return {{{"glr.la", "glr.la", contract, run_member<Run, Member::kLinearAttention>, nullptr},
           {"glr.ssd", "glr.ssd", contract, run_member<Run, Member::kSimpleGla>, nullptr},
           {"glr.deltanet", "glr.deltanet", contract, run_member<Run, Member::kDeltaNet>, nullptr},
           {"glr.gdn", "glr.gdn", contract, run_member<Run, Member::kGatedDeltaNet>, nullptr},
           {"glr.gla", "glr.gla", contract, run_member<Run, Member::kGla>, nullptr},
           {"glr.kda", "glr.kda", contract, run_member<Run, Member::kKda>, nullptr}}};
}

}  // namespace kcv::glr::check
