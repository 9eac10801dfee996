// File: glr/kernels/stage_state.cuh
// Stage F4, the serial inter-chunk state pass (reference: chunk_delta and chunk_next_state in
// glr/reference/chunk_forward.cpp, the loop in chunked.cpp). One CTA per (sequence, value head,
// kStateTile value columns) walks the sequence's chunks in order, holding its K × kStateTile slice
// of the fp32 state S in shared memory (state columns are independent, so the V split is exact):
//   store S as the state entering the chunk                          → states [chunks, HV, K, V]
//   Δ = U − W S (delta rule) or Δ = V                                → delta  [T, HV, V]
//   S ← Diag(e_last) S + K̄ᵀ Δ,  K̄ = K ⊙ exp(G_last − G)
// S starts from h0 (or 0) and ends in final_state, in the caller's state layout.
// The backward reruns this stage to rebuild the states and Δ bit for bit.
#pragma once

#include "glr/kernels/layout.cuh"
#include "glr/tiles/gate_rows.cuh"

namespace kcv::glr::gpu::detail {

struct StateShared {
  Tile<kMaxDim, kStateTile> s;
  Tile<kChunk, kMaxDim> w, kbar;
  Tile<kChunk, kStateTile> delta;
  float e_last[kMaxDim];
};
static_assert(sizeof(StateShared) <= kMaxSharedBytes,
              "StateShared: shared storage over the sm_90 limit");

template <GateKind kGate, bool kDelta>
__global__ void __launch_bounds__(kThreads) state_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  StateShared& sm = *reinterpret_cast<StateShared*>(smem_raw);
  const SerialCoords sc = serial_coords(p, kStateTile);
  const int hv = sc.hv;
  const int kd = p.key_dim;
  const int vd = p.value_dim;

  fill(sm.s, kd, sc.cols, [&](int d, int e) {
    return p.h0 != nullptr ? p.h0[user_state(p, sc.seq, hv, d, sc.col0 + e)] : 0.0f;
  });
  __syncthreads();
  for (std::int64_t ci = 0; ci < sc.chunks; ++ci) {
    const std::int64_t t0 = sc.bos + ci * kChunk;
    const std::int64_t cg = sc.first_chunk + ci;
    const int c = static_cast<int>(sc.eos - t0 < kChunk ? sc.eos - t0 : kChunk);
    for_each_2d(kd, sc.cols, [&](int d, int e) {
      p.states[chunk_state(p, cg, hv, d, sc.col0 + e)] = sm.s(d, e);
    });
    const GateRows<kGate> gate{p.gate_cum + head_row(p, t0, hv, p.gate_width),
                               head_stride(p, p.gate_width), c - 1};
    const bf16* k = p.k + qk_row(p, t0, hv);
    fill(sm.kbar, c, kd,
         [&](int i, int d) { return to_float(k[i * qk_stride(p) + d]) * gate.to_end(i, d); });
    for_each_1d(kd, [&](int d) { sm.e_last[d] = gate.at_end(d); });
    const std::int64_t v_stride = head_stride(p, vd);
    if constexpr (kDelta) {
      load_rows(sm.w, p.wmat + head_row(p, t0, hv, kd), head_stride(p, kd), c, kd);
      load_rows(sm.delta, p.umat + head_row(p, t0, hv, vd) + sc.col0, v_stride, c, sc.cols);
      __syncthreads();
      for_each_2d(c, sc.cols, [&](int i, int e) {  // Δ = U − W S
        float ws = 0.0f;
        for (int d = 0; d < kd; ++d) ws += sm.w(i, d) * sm.s(d, e);
        sm.delta(i, e) -= ws;
      });
    } else {
      load_rows(sm.delta, p.v + head_row(p, t0, hv, vd) + sc.col0, v_stride, c, sc.cols);
    }
    __syncthreads();
    float* delta = p.delta + head_row(p, t0, hv, vd) + sc.col0;
    for_each_2d(c, sc.cols, [&](int i, int e) { delta[i * v_stride + e] = sm.delta(i, e); });
    for_each_2d(kd, sc.cols, [&](int d, int e) {  // S ← Diag(e_last) S + K̄ᵀ Δ
      float acc = sm.e_last[d] * sm.s(d, e);
      for (int i = 0; i < c; ++i) acc += sm.kbar(i, d) * sm.delta(i, e);
      sm.s(d, e) = acc;
    });
    __syncthreads();
  }
  if (p.final_state != nullptr)
    for_each_2d(kd, sc.cols, [&](int d, int e) {
      p.final_state[user_state(p, sc.seq, hv, d, sc.col0 + e)] = sm.s(d, e);
    });
}

}  // namespace kcv::glr::gpu::detail
