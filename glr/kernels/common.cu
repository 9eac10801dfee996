// File: glr/kernels/common.cu
// Launchers of the member-independent stages (stage_common.cuh): sequence index, input prep
// (F1 and β to fp32), and the finishing steps of the backward (B6, dβ cast, GVA group sums).
// The caller's g and β dtypes are template parameters here and nowhere else: every later stage
// reads the fp32 copies in the workspace.
#include "glr/kernels/launch_stage.cuh"
#include "glr/kernels/pipeline.hpp"
#include "glr/kernels/stage_common.cuh"
#include "glr/launch/cuda_status.hpp"

namespace kcv::glr::gpu::detail {
namespace {

dim3 chunk_grid(const Params& p) {
  return dim3(static_cast<unsigned>(p.chunk_bound), static_cast<unsigned>(p.v_heads));
}

template <typename GateT, typename BetaT>
cudaError_t input_prep(const Params& p, const void* g, const void* beta, cudaStream_t stream) {
  return launch(gate_prep_kernel<GateT, BetaT>, chunk_grid(p), 0, stream, p,
                static_cast<const GateT*>(g), static_cast<const BetaT*>(beta));
}

template <typename GateT, typename BetaT>
cudaError_t gate_grad(const Params& p, void* dg, void* dbeta, cudaStream_t stream) {
  return launch(gate_grad_kernel<GateT, BetaT>, chunk_grid(p), 0, stream, p,
                static_cast<GateT*>(dg), static_cast<BetaT*>(dbeta));
}

// Calls f.template operator()<GateT, BetaT>() for the two runtime dtypes.
template <typename F>
cudaError_t with_types(DType g_type, DType beta_type, F&& f) {
  const bool g32 = g_type == DType::kFloat32;
  const bool b32 = beta_type == DType::kFloat32;
  if (g32 && b32) return f.template operator()<float, float>();
  if (g32) return f.template operator()<float, bf16>();
  if (b32) return f.template operator()<bf16, float>();
  return f.template operator()<bf16, bf16>();
}

}  // namespace

Status launch_index(const Params& p, const void* cu_seqlens, IndexType type, std::int64_t fixed_len,
                    cudaStream_t stream) {
  if (type == IndexType::kInt32)
    KCV_GLR_CUDA(launch(index_kernel<std::int32_t>, dim3(1), 0, stream, p,
                        static_cast<const std::int32_t*>(cu_seqlens), fixed_len));
  else
    KCV_GLR_CUDA(launch(index_kernel<std::int64_t>, dim3(1), 0, stream, p,
                        static_cast<const std::int64_t*>(cu_seqlens), fixed_len));
  return {};
}

Status launch_input_prep(const Params& p, const void* g, DType g_type, const void* beta,
                         DType beta_type, cudaStream_t stream) {
  if (g == nullptr && beta == nullptr) return {};
  KCV_GLR_CUDA(with_types(g_type, beta_type, [&]<typename GateT, typename BetaT>() {
    return input_prep<GateT, BetaT>(p, g, beta, stream);
  }));
  return {};
}

Status launch_finalize(const Params& p, void* dg, DType g_type, void* dbeta, DType beta_type,
                       void* dq, void* dk, cudaStream_t stream) {
  if (dg != nullptr || dbeta != nullptr)
    KCV_GLR_CUDA(with_types(g_type, beta_type, [&]<typename GateT, typename BetaT>() {
      return gate_grad<GateT, BetaT>(p, dg, dbeta, stream);
    }));
  const dim3 grid(static_cast<unsigned>(p.tokens), static_cast<unsigned>(p.qk_heads));
  KCV_GLR_CUDA(launch(group_sum_kernel, grid, 0, stream, p, p.dq_head, static_cast<bf16*>(dq)));
  KCV_GLR_CUDA(launch(group_sum_kernel, grid, 0, stream, p, p.dk_head, static_cast<bf16*>(dk)));
  return {};
}

}  // namespace kcv::glr::gpu::detail
