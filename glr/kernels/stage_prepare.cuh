// File: glr/kernels/stage_prepare.cuh
// Stages F2 and F3 of one (chunk, value head), independent of the entering state, so one CTA per
// pair (reference: prepare_chunk in glr/reference/chunk_forward.cpp):
//   A^qk = P(Q, K, inclusive)                       unscaled, stored [T, HV, 64]
//   L = diag(β) P(K, K, strict),  T = (I + L)^{-1}   by 16×16 blocks, stored [T, HV, 64]
//   W = T X,  X = diag(β)(K ⊙ E)                     stored [T, HV, K]
//   U = T Ṽ,  Ṽ = diag(β) V                          stored [T, HV, V]
// (the last three only with the delta rule). Stored rows hold zeros past the chunk's valid
// columns. Products with T run over its lower triangle only.
#pragma once

#include "glr/kernels/layout.cuh"
#include "glr/tiles/gate_rows.cuh"
#include "glr/tiles/tril_inverse.cuh"

namespace kcv::glr::gpu::detail {

struct PrepareShared {
  Tile<kChunk, kMaxDim> q, k, g;
  Tile<kChunk, kMaxDim> x;  ///< X, then Ṽ
  Tile<kChunk, kChunk> l, t, scratch;
  float beta[kChunk];
};
static_assert(sizeof(PrepareShared) <= kMaxSharedBytes,
              "PrepareShared: shared storage over the sm_90 limit");

template <GateKind kGate, bool kDelta>
__global__ void __launch_bounds__(kThreads) prepare_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  PrepareShared& sm = *reinterpret_cast<PrepareShared*>(smem_raw);
  const ChunkCoords cc = locate_chunk(p, blockIdx.x);
  if (!cc.valid) return;
  const int hv = static_cast<int>(blockIdx.y);
  const int c = cc.rows;
  const int kd = p.key_dim;
  const std::int64_t t0 = cc.t0;

  load_rows(sm.q, p.q + qk_row(p, t0, hv), qk_stride(p), c, kd);
  load_rows(sm.k, p.k + qk_row(p, t0, hv), qk_stride(p), c, kd);
  if constexpr (kGate != GateKind::kNone)
    load_rows(sm.g, p.gate_cum + head_row(p, t0, hv, p.gate_width), head_stride(p, p.gate_width), c,
              p.gate_width);
  if constexpr (kDelta)
    for_each_1d(kChunk,
                [&](int i) { sm.beta[i] = i < c ? p.beta[head_row(p, t0 + i, hv, 1)] : 0.0f; });
  __syncthreads();
  const GateRows<kGate> gate = gate_rows<kGate>(sm.g, c);

  float* aqk = p.aqk + head_row(p, t0, hv, kChunk);
  const std::int64_t cc_stride = head_stride(p, kChunk);
  for_each_2d(c, kChunk, [&](int i, int j) {
    aqk[i * cc_stride + j] = j <= i ? decayed_dot(sm.q, i, sm.k, j, gate, kd) : 0.0f;
  });
  if constexpr (kDelta) {
    fill(sm.l, c, c, [&](int i, int j) {
      return j < i ? sm.beta[i] * decayed_dot(sm.k, i, sm.k, j, gate, kd) : 0.0f;
    });
    fill(sm.x, c, kd,
         [&](int i, int d) { return sm.beta[i] * (sm.k(i, d) * gate.from_start(i, d)); });
    invert_unit_lower<kChunk, kSubChunk>(sm.l, sm.t, sm.scratch);  // barriers inside

    float* tmat = p.tmat + head_row(p, t0, hv, kChunk);
    for_each_2d(c, kChunk,
                [&](int i, int j) { tmat[i * cc_stride + j] = j < c ? sm.t(i, j) : 0.0f; });
    float* wmat = p.wmat + head_row(p, t0, hv, kd);
    const std::int64_t k_stride = head_stride(p, kd);
    for_each_2d(c, kd, [&](int i, int d) {
      float acc = 0.0f;
      for (int j = 0; j <= i; ++j) acc += sm.t(i, j) * sm.x(j, d);
      wmat[i * k_stride + d] = acc;
    });
    __syncthreads();  // X is dead; Ṽ takes its place
    const int vd = p.value_dim;
    const bf16* v = p.v + head_row(p, t0, hv, vd);
    const std::int64_t v_stride = head_stride(p, vd);
    fill(sm.x, c, vd, [&](int i, int e) { return sm.beta[i] * to_float(v[i * v_stride + e]); });
    __syncthreads();
    float* umat = p.umat + head_row(p, t0, hv, vd);
    for_each_2d(c, vd, [&](int i, int e) {
      float acc = 0.0f;
      for (int j = 0; j <= i; ++j) acc += sm.t(i, j) * sm.x(j, e);
      umat[i * v_stride + e] = acc;
    });
  }
}

}  // namespace kcv::glr::gpu::detail
