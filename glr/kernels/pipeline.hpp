// File: glr/kernels/pipeline.hpp
// Host entry points of the stage sequences (defined in pipeline.cuh and common.cu). The member
// stages are one template over the gate kind and the delta rule, instantiated once per member in
// member_<name>.cu; the launcher (glr/launch/api.cpp) picks the instantiation.
//   forward:  index, inputs → prepare (F2, F3) → state pass (F4) → output (F5)
//   backward: index, inputs → prepare → state pass (B0, recompute) → dh scan (B1, B2)
//             → V-side grads (B3) → WY VJP (B4, delta rule) → K-side grads (B3–B5)
//             → reverse gate cumsum, dβ cast (B6) and the GVA group sums
// All calls are asynchronous on the stream; Params carries every pointer.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "glr/kernels/params.hpp"
#include "kcv/expected.hpp"
#include "kcv/glr/gpu.hpp"
#include "kcv/glr/member.hpp"

namespace kcv::glr::gpu::detail {

template <GateKind kGate, bool kDelta>
[[nodiscard]] Status forward_stages(const Params& p, cudaStream_t stream);

template <GateKind kGate, bool kDelta>
[[nodiscard]] Status backward_stages(const Params& p, cudaStream_t stream);

/// Sequence bounds and chunk offsets (cu_seqlens may be null: fixed length `fixed_len`).
[[nodiscard]] Status launch_index(const Params& p, const void* cu_seqlens, IndexType type,
                                  std::int64_t fixed_len, cudaStream_t stream);

/// F1 (g may be null) and β to fp32 (beta may be null).
[[nodiscard]] Status launch_input_prep(const Params& p, const void* g, DType g_type,
                                       const void* beta, DType beta_type, cudaStream_t stream);

/// B6 into dg (may be null), dβ into dbeta (may be null), then dq and dk group sums.
[[nodiscard]] Status launch_finalize(const Params& p, void* dg, DType g_type, void* dbeta,
                                     DType beta_type, void* dq, void* dk, cudaStream_t stream);

}  // namespace kcv::glr::gpu::detail
