// File: glr/kernels/stage_vgrads.cuh
// Stage B3, the products over the value dimension of one (chunk, value head), in three phases
// that reuse the shared tiles (reference: inter_chunk_grads, intra_qk_grads, chunk_gradients and
// the Ṽ part of wy_grads in glr/reference/chunk_backward.cpp). H = state entering the chunk,
// dH = ∂L/∂(state leaving it), dΔ from stage B2:
//   1. dq_raw = dO Hᵀ;  dW = −dΔ Hᵀ (delta rule);  without the delta rule dv = dΔ (Δ = V)
//   2. dk_raw = Δ dHᵀ;  hd_d = Σ_v H_dv dH_dv;  dA = scale · Tril_incl(dO Δᵀ)   (w.r.t. the
//      unscaled A^qk)
//   3. (delta rule) dTv = StrictLower(dΔ Ṽᵀ);  dṼ = Tᵀ dΔ;  dv = β ⊙ dṼ;  dβ_v = Σ_v v ⊙ dṼ
// The K-side stage (stage_kgrads.cuh) turns dq_raw, dk_raw, dW, hd, dA, dTv into dq, dk, dG, dβ.
#pragma once

#include "glr/kernels/layout.cuh"
#include "glr/tiles/tile.cuh"

namespace kcv::glr::gpu::detail {

struct VGradsShared {
  Tile<kMaxDim, kMaxDim> state;  ///< H, then dH
  Tile<kChunk, kMaxDim> a;       ///< dO, then v
  Tile<kChunk, kMaxDim> b;       ///< dΔ
  Tile<kChunk, kMaxDim> c;       ///< Δ, then dṼ
  Tile<kChunk, kChunk> t;
  float beta[kChunk];
};
static_assert(sizeof(VGradsShared) <= kMaxSharedBytes,
              "VGradsShared: shared storage over the sm_90 limit");

// Where one (chunk, value head) sits in the token-major tensors.
struct VGradsRows {
  ChunkCoords cc;
  int hv = 0;
  std::int64_t k_row = 0, v_row = 0, cc_row = 0;  ///< row 0 in [T,HV,K], [T,HV,V], [T,HV,64]
  std::int64_t k_stride = 0, v_stride = 0, cc_stride = 0;  ///< their row strides
};

// Phase 3 (delta rule): dTv, dṼ = Tᵀ dΔ, dv, dβ_v. Expects dΔ in sm.b.
__device__ inline void vgrads_wy_phase(const Params& p, const VGradsRows& r, VGradsShared& sm) {
  const int rows = r.cc.rows;
  const int vd = p.value_dim;
  load_rows(sm.a, p.v + r.v_row, r.v_stride, rows, vd);
  load_rows(sm.t, p.tmat + r.cc_row, r.cc_stride, rows, rows);
  for_each_1d(kChunk, [&](int i) {
    sm.beta[i] = i < rows ? p.beta[head_row(p, r.cc.t0 + i, r.hv, 1)] : 0.0f;
  });
  __syncthreads();
  for_each_2d(rows, kChunk, [&](int i, int j) {  // dTv = StrictLower(dΔ vᵀ) diag(β)
    float acc = 0.0f;
    if (j < i)
      for (int e = 0; e < vd; ++e) acc += sm.b(i, e) * sm.a(j, e);
    p.dtv[r.cc_row + i * r.cc_stride + j] = sm.beta[j] * acc;
  });
  fill(sm.c, rows, vd, [&](int i, int e) {  // dṼ = Tᵀ dΔ (T lower: m ≥ i)
    float acc = 0.0f;
    for (int m = i; m < rows; ++m) acc += sm.t(m, i) * sm.b(m, e);
    return acc;
  });
  __syncthreads();
  for_each_2d(rows, vd, [&](int i, int e) {
    p.dv[r.v_row + i * r.v_stride + e] = from_float<bf16>(sm.beta[i] * sm.c(i, e));
  });
  for_each_1d(rows, [&](int i) {
    float acc = 0.0f;
    for (int e = 0; e < vd; ++e) acc += sm.a(i, e) * sm.c(i, e);
    p.dbeta_v[head_row(p, r.cc.t0 + i, r.hv, 1)] = acc;
  });
}

template <bool kDelta>
__global__ void __launch_bounds__(kThreads) vgrads_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  VGradsShared& sm = *reinterpret_cast<VGradsShared*>(smem_raw);
  VGradsRows r;
  r.cc = locate_chunk(p, blockIdx.x);
  if (!r.cc.valid) return;
  r.hv = static_cast<int>(blockIdx.y);
  const int rows = r.cc.rows;
  const int kd = p.key_dim;
  const int vd = p.value_dim;
  r.k_row = head_row(p, r.cc.t0, r.hv, kd);
  r.v_row = head_row(p, r.cc.t0, r.hv, vd);
  r.cc_row = head_row(p, r.cc.t0, r.hv, kChunk);
  r.k_stride = head_stride(p, kd);
  r.v_stride = head_stride(p, vd);
  r.cc_stride = head_stride(p, kChunk);
  const std::int64_t cg = r.cc.cg;
  const int hv = r.hv;

  // Phase 1: H, dO, dΔ.
  fill(sm.state, kd, vd, [&](int d, int e) { return p.states[chunk_state(p, cg, hv, d, e)]; });
  load_rows(sm.a, p.d_o + r.v_row, r.v_stride, rows, vd);
  load_rows(sm.b, p.d_delta + r.v_row, r.v_stride, rows, vd);
  __syncthreads();
  for_each_2d(rows, kd, [&](int i, int d) {  // dq_raw = dO Hᵀ
    float acc = 0.0f;
    for (int e = 0; e < vd; ++e) acc += sm.a(i, e) * sm.state(d, e);
    p.dq_raw[r.k_row + i * r.k_stride + d] = acc;
  });
  if constexpr (kDelta) {
    for_each_2d(rows, kd, [&](int i, int d) {  // dW = −dΔ Hᵀ
      float acc = 0.0f;
      for (int e = 0; e < vd; ++e) acc += sm.b(i, e) * sm.state(d, e);
      p.dw[r.k_row + i * r.k_stride + d] = -acc;
    });
  } else {
    for_each_2d(rows, vd, [&](int i, int e) {  // dv = dΔ
      p.dv[r.v_row + i * r.v_stride + e] = from_float<bf16>(sm.b(i, e));
    });
  }
  __syncthreads();

  // Phase 2: dH, Δ.
  fill(sm.state, kd, vd, [&](int d, int e) { return p.d_states[chunk_state(p, cg, hv, d, e)]; });
  load_rows(sm.c, p.delta + r.v_row, r.v_stride, rows, vd);
  __syncthreads();
  for_each_2d(rows, kd, [&](int i, int d) {  // dk_raw = Δ dHᵀ
    float acc = 0.0f;
    for (int e = 0; e < vd; ++e) acc += sm.c(i, e) * sm.state(d, e);
    p.dk_raw[r.k_row + i * r.k_stride + d] = acc;
  });
  for_each_1d(kd, [&](int d) {  // hd = Σ_v H ⊙ dH
    float acc = 0.0f;
    for (int e = 0; e < vd; ++e) acc += p.states[chunk_state(p, cg, hv, d, e)] * sm.state(d, e);
    p.hd[(cg * p.v_heads + hv) * kd + d] = acc;
  });
  for_each_2d(rows, kChunk, [&](int i, int j) {  // dA = scale · Tril_incl(dO Δᵀ)
    float acc = 0.0f;
    if (j <= i)
      for (int e = 0; e < vd; ++e) acc += sm.a(i, e) * sm.c(j, e);
    p.da[r.cc_row + i * r.cc_stride + j] = p.scale * acc;
  });
  if constexpr (kDelta) {
    __syncthreads();
    vgrads_wy_phase(p, r, sm);
  }
}

}  // namespace kcv::glr::gpu::detail
