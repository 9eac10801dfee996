// File: glr/kernels/decode_kernel.cuh
// The body of the decode kernel (decode.cu): one CTA of one warp runs one (sequence, value head)
// token by token, in the delta form the fp64 oracle uses (glr/oracle/token_step.cpp), in fp32:
//   S' = Diag(a) S (a = exp(g_t) per key row),  δ = w ⊙ v − S'^T (b ⊙ k),  S = S' + k δ^T,
//   o_t = scale · S^T q_t,   with b = w = β (delta rule) or b = 0, w = 1.
// Lane l owns the value columns e ≡ l (mod 32): every reduction above runs over the key index d
// inside one column, so a lane never needs another lane's data and the summation order is fixed
// (deterministic, no atomics). The state lives in the caller's fp32 buffer (in/out); q, k and the
// decay of the current token are staged in shared memory (3·K floats). A header so that the
// CPU emulation (glr/check/decode_emulated_test.cpp) runs this very code.
#pragma once

#include <cstdint>

#include "glr/kernels/decode.hpp"

namespace kcv::glr::gpu::detail {

inline constexpr int kDecodeWarp = 32;

__device__ inline std::int64_t decode_state_index(const DecodeParams& p, int d, int e) {
  return p.v_first ? static_cast<std::int64_t>(e) * p.key_dim + d
                   : static_cast<std::int64_t>(d) * p.value_dim + e;
}

// Stages q, k and the decay a of token t (qk head h, value head hv) in shared memory.
__device__ inline void decode_stage_token(const DecodeParams& p, std::int64_t t, int h, int hv,
                                          float* sq, float* sk, float* sa) {
  const std::int64_t qk_row = (t * p.qk_heads + h) * p.key_dim;
  for (int d = static_cast<int>(threadIdx.x); d < p.key_dim; d += kDecodeWarp) {
    sq[d] = p.q[qk_row + d];
    sk[d] = p.k[qk_row + d];
    float a = 1.0f;
    if (p.gate_width == 1) a = expf(p.g[t * p.v_heads + hv]);
    if (p.gate_width > 1) a = expf(p.g[(t * p.v_heads + hv) * p.key_dim + d]);
    sa[d] = a;
  }
}

// One token for one value column e of one head's state s; returns o_t[e].
__device__ inline float decode_column_step(const DecodeParams& p, float* s, int e, float v,
                                           float beta, const float* sq, const float* sk,
                                           const float* sa) {
  float erased = 0.0f;
  for (int d = 0; d < p.key_dim; ++d) {
    const std::int64_t i = decode_state_index(p, d, e);
    const float decayed = sa[d] * s[i];
    s[i] = decayed;
    // A zero erase strength leaves the term out, as the oracle does (a NaN in S' stays out of δ).
    if (p.delta_rule && beta != 0.0f) erased += decayed * (beta * sk[d]);
  }
  const float delta = (p.delta_rule ? beta : 1.0f) * v - erased;
  float acc = 0.0f;
  for (int d = 0; d < p.key_dim; ++d) {
    const std::int64_t i = decode_state_index(p, d, e);
    const float next = s[i] + sk[d] * delta;
    s[i] = next;
    acc += next * sq[d];
  }
  return p.scale * acc;
}

/// CTA `block` (= n·HV + hv) of the decode grid; smem holds 3·K floats.
__device__ inline void decode_block(const DecodeParams& p, std::int64_t block, float* smem) {
  const std::int64_t n = block / p.v_heads;
  const int hv = static_cast<int>(block % p.v_heads);
  const int h = hv / (p.v_heads / p.qk_heads);
  const std::int64_t bos = p.cu_seqlens ? p.cu_seqlens[n] : n * p.seq_len;
  const std::int64_t eos = p.cu_seqlens ? p.cu_seqlens[n + 1] : bos + p.seq_len;
  float* sq = smem;
  float* sk = smem + p.key_dim;
  float* sa = smem + 2 * p.key_dim;
  float* s = p.state + (n * p.v_heads + hv) * p.key_dim * p.value_dim;
  for (std::int64_t t = bos; t < eos; ++t) {
    __syncwarp();  // the previous token's reads of sq/sk/sa are done
    decode_stage_token(p, t, h, hv, sq, sk, sa);
    __syncwarp();
    const float beta = p.delta_rule ? p.beta[t * p.v_heads + hv] : 0.0f;
    const std::int64_t v_row = (t * p.v_heads + hv) * p.value_dim;
    for (int e = static_cast<int>(threadIdx.x); e < p.value_dim; e += kDecodeWarp)
      p.o[v_row + e] = decode_column_step(p, s, e, p.v[v_row + e], beta, sq, sk, sa);
  }
}

}  // namespace kcv::glr::gpu::detail
