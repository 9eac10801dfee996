// File: glr/kernels/decode.hpp
// The decode kernel's parameter block and launcher (decode.cu), called by glr/launch/decode.cpp
// after validation. Plain fp32 and int64 pointers: the launcher converts nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kcv::glr::gpu::detail {

struct DecodeParams {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* g = nullptr;     ///< null, [T_total, HV] or [T_total, HV, K]
  const float* beta = nullptr;  ///< null without the delta rule
  const std::int64_t* cu_seqlens = nullptr;
  float* o = nullptr;
  float* state = nullptr;  ///< in/out, [N, HV, K, V] or [N, HV, V, K]
  std::int64_t seq_len = 0;  ///< per sequence without cu_seqlens
  std::int64_t sequences = 0;
  int qk_heads = 1;
  int v_heads = 1;
  int key_dim = 0;
  int value_dim = 0;
  int gate_width = 0;  ///< 0 (none), 1 (scalar) or key_dim (per channel)
  bool delta_rule = false;
  bool v_first = false;  ///< state stored [V, K]
  float scale = 1.0f;
};

/// One warp per (sequence, value head); asynchronous on `stream`.
cudaError_t launch_decode(const DecodeParams& p, cudaStream_t stream);

}  // namespace kcv::glr::gpu::detail
