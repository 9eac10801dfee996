// File: glr/kernels/stage_dh_scan.cuh
// Stages B1 and B2, the serial reverse scan of the state gradient (reference: local_delta_grad
// and dh_scan_step in glr/reference/chunk_backward.cpp). One CTA per (sequence, value head,
// kStateTile value columns) walks the chunks last to first with D = ∂L/∂(state leaving the chunk)
// in shared memory, starting from d_final_state (or 0):
//   store D                                         → d_states [chunks, HV, K, V] (fla's dh[n])
//   dΔ = scale · A^qkᵀ dO + K̄ D                      → d_delta  [T, HV, V]  (fla's dv2)
//   D ← Diag(e_last) D + scale · Q̄ᵀ dO − Wᵀ dΔ      (no W term without the delta rule)
// and stores the final D as dh0 in the caller's state layout. A^qkᵀ dO runs over i ≥ j only.
#pragma once

#include "glr/kernels/layout.cuh"
#include "glr/tiles/gate_rows.cuh"

namespace kcv::glr::gpu::detail {

struct DhScanShared {
  Tile<kMaxDim, kStateTile> dstate;
  Tile<kChunk, kChunk> aqk;
  Tile<kChunk, kStateTile> d_o, d_delta;
  Tile<kChunk, kMaxDim> kbar, qbar, w;
  float e_last[kMaxDim];
};
static_assert(sizeof(DhScanShared) <= kMaxSharedBytes,
              "DhScanShared: shared storage over the sm_90 limit");

template <GateKind kGate, bool kDelta>
__global__ void __launch_bounds__(kThreads) dh_scan_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  DhScanShared& sm = *reinterpret_cast<DhScanShared*>(smem_raw);
  const SerialCoords sc = serial_coords(p, kStateTile);
  const int hv = sc.hv;
  const int kd = p.key_dim;
  const int vd = p.value_dim;

  fill(sm.dstate, kd, sc.cols, [&](int d, int e) {
    return p.d_final != nullptr ? p.d_final[user_state(p, sc.seq, hv, d, sc.col0 + e)] : 0.0f;
  });
  __syncthreads();
  for (std::int64_t step = 0; step < sc.chunks; ++step) {
    const std::int64_t ci = sc.chunks - 1 - step;  // last chunk first
    const std::int64_t t0 = sc.bos + ci * kChunk;
    const std::int64_t cg = sc.first_chunk + ci;
    const int c = static_cast<int>(sc.eos - t0 < kChunk ? sc.eos - t0 : kChunk);
    for_each_2d(kd, sc.cols, [&](int d, int e) {
      p.d_states[chunk_state(p, cg, hv, d, sc.col0 + e)] = sm.dstate(d, e);
    });
    const GateRows<kGate> gate{p.gate_cum + head_row(p, t0, hv, p.gate_width),
                               head_stride(p, p.gate_width), c - 1};
    const bf16* k = p.k + qk_row(p, t0, hv);
    const bf16* q = p.q + qk_row(p, t0, hv);
    fill(sm.kbar, c, kd,
         [&](int i, int d) { return to_float(k[i * qk_stride(p) + d]) * gate.to_end(i, d); });
    fill(sm.qbar, c, kd,
         [&](int i, int d) { return to_float(q[i * qk_stride(p) + d]) * gate.from_start(i, d); });
    for_each_1d(kd, [&](int d) { sm.e_last[d] = gate.at_end(d); });
    if constexpr (kDelta)
      load_rows(sm.w, p.wmat + head_row(p, t0, hv, kd), head_stride(p, kd), c, kd);
    load_rows(sm.aqk, p.aqk + head_row(p, t0, hv, kChunk), head_stride(p, kChunk), c, c);
    const std::int64_t v_stride = head_stride(p, vd);
    load_rows(sm.d_o, p.d_o + head_row(p, t0, hv, vd) + sc.col0, v_stride, c, sc.cols);
    __syncthreads();
    for_each_2d(c, sc.cols, [&](int j, int e) {  // dΔ = scale·A^qkᵀ dO + K̄ D
      float local = 0.0f;
      for (int i = j; i < c; ++i) local += sm.aqk(i, j) * sm.d_o(i, e);
      float carried = 0.0f;
      for (int d = 0; d < kd; ++d) carried += sm.kbar(j, d) * sm.dstate(d, e);
      sm.d_delta(j, e) = p.scale * local + carried;
    });
    __syncthreads();
    float* d_delta = p.d_delta + head_row(p, t0, hv, vd) + sc.col0;
    for_each_2d(c, sc.cols, [&](int i, int e) { d_delta[i * v_stride + e] = sm.d_delta(i, e); });
    for_each_2d(kd, sc.cols, [&](int d, int e) {  // D ← Diag(e_last) D + scale Q̄ᵀ dO − Wᵀ dΔ
      float out = 0.0f;
      for (int i = 0; i < c; ++i) out += sm.qbar(i, d) * sm.d_o(i, e);
      float acc = sm.e_last[d] * sm.dstate(d, e) + p.scale * out;
      if constexpr (kDelta) {
        float wd = 0.0f;
        for (int i = 0; i < c; ++i) wd += sm.w(i, d) * sm.d_delta(i, e);
        acc -= wd;
      }
      sm.dstate(d, e) = acc;
    });
    __syncthreads();
  }
  if (p.dh0 != nullptr)
    for_each_2d(kd, sc.cols, [&](int d, int e) {
      p.dh0[user_state(p, sc.seq, hv, d, sc.col0 + e)] = sm.dstate(d, e);
    });
}

}  // namespace kcv::glr::gpu::detail
