// File: glr/launch/api.cpp
// The public launcher of include/kcv/glr/gpu.hpp: validate, lay out the workspace, fill the
// Params block, then launch the member-independent prologue (sequence index, input prep), the
// member's stage sequence, and for the backward the epilogue (B6, dβ, GVA group sums). Nothing
// here waits for the device.
#include <cstddef>

#include "glr/kernels/pipeline.hpp"
#include "glr/launch/cuda_status.hpp"
#include "glr/launch/member_dispatch.hpp"
#include "glr/launch/validate.hpp"
#include "glr/launch/workspace.hpp"
#include "kcv/glr/gpu.hpp"

namespace kcv::glr::gpu {
namespace {

using detail::Params;

Status prologue(const Dims& d, const Config& cfg, const Inputs& in, const Params& p,
                cudaStream_t stream) {
  KCV_GLR_TRY(detail::launch_index(p, in.cu_seqlens, cfg.cu_seqlens_type, d.seq_len, stream));
  return detail::launch_input_prep(p, in.g, cfg.gate_dtype, in.beta, cfg.beta_dtype, stream);
}

}  // namespace

Expected<std::size_t> forward_workspace_bytes(const Dims& dims, const Config& cfg) {
  if (Status st = detail::validate_dims(dims, cfg); !st) return st.error();
  Params scratch;
  return detail::carve_workspace(dims, detail::extents(dims, cfg), false, nullptr, scratch);
}

Expected<std::size_t> backward_workspace_bytes(const Dims& dims, const Config& cfg) {
  if (Status st = detail::validate_dims(dims, cfg); !st) return st.error();
  Params scratch;
  return detail::carve_workspace(dims, detail::extents(dims, cfg), true, nullptr, scratch);
}

Status validate(const Dims& dims, const Config& cfg, const Inputs& in) {
  return detail::validate_inputs(dims, cfg, in);
}

Status forward(const Dims& dims, const Config& cfg, const Inputs& in, const ForwardOutputs& out,
               void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  KCV_GLR_TRY(detail::validate_inputs(dims, cfg, in));
  KCV_GLR_TRY(detail::validate_outputs(cfg, out));
  const detail::Extents e = detail::extents(dims, cfg);
  Params p = detail::make_params(dims, cfg, e, in);
  Params sizing;
  KCV_GLR_TRY(detail::validate_workspace(workspace, workspace_bytes,
                                         detail::carve_workspace(dims, e, false, nullptr, sizing)));
  detail::carve_workspace(dims, e, false, static_cast<std::byte*>(workspace), p);
  p.o = static_cast<detail::bf16*>(out.o);
  p.final_state = out.final_state;
  KCV_GLR_TRY(prologue(dims, cfg, in, p, stream));
  return detail::for_member(cfg.member, [&]<GateKind kGate, bool kDelta>() {
    return detail::forward_stages<kGate, kDelta>(p, stream);
  });
}

Status backward(const Dims& dims, const Config& cfg, const Inputs& in, const Cotangents& cot,
                const Gradients& grads, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream) {
  KCV_GLR_TRY(detail::validate_inputs(dims, cfg, in));
  KCV_GLR_TRY(detail::validate_grads(cfg, cot, grads));
  const detail::Extents e = detail::extents(dims, cfg);
  Params p = detail::make_params(dims, cfg, e, in);
  Params sizing;
  KCV_GLR_TRY(detail::validate_workspace(workspace, workspace_bytes,
                                         detail::carve_workspace(dims, e, true, nullptr, sizing)));
  detail::carve_workspace(dims, e, true, static_cast<std::byte*>(workspace), p);
  p.d_o = static_cast<const detail::bf16*>(cot.d_o);
  p.d_final = cot.d_final_state;
  p.dv = static_cast<detail::bf16*>(grads.dv);
  p.dh0 = grads.dh0;
  KCV_GLR_TRY(prologue(dims, cfg, in, p, stream));
  KCV_GLR_TRY(detail::for_member(cfg.member, [&]<GateKind kGate, bool kDelta>() {
    return detail::backward_stages<kGate, kDelta>(p, stream);
  }));
  return detail::launch_finalize(p, grads.dg, cfg.gate_dtype, grads.dbeta, cfg.beta_dtype, grads.dq,
                                 grads.dk, stream);
}

}  // namespace kcv::glr::gpu
