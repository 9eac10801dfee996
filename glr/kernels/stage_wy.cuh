// File: glr/kernels/stage_wy.cuh
// Stage B4 of one (chunk, value head), delta rule only: the WY representation and the VJP of the
// triangular inverse (reference: wy_grads in glr/reference/chunk_backward.cpp and
// unit_lower_inverse_vjp in tril_inverse.cpp), all C×C work in fp32:
//   dT = StrictLower(dW Xᵀ + dΔ Ṽᵀ)       (dΔ Ṽᵀ = dTv from stage B3)
//   dX = Tᵀ dW                           → dx [T, HV, K]
//   dL = −StrictLower(Tᵀ dT Tᵀ)          → dl [T, HV, 64]   (the outer StrictLower is required, §8)
// with X = diag(β)(K ⊙ exp(G)). Every product runs over the triangles where its factors are
// non-zero (T lower, dT strictly lower).
#pragma once

#include "glr/kernels/layout.cuh"
#include "glr/tiles/gate_rows.cuh"

namespace kcv::glr::gpu::detail {

struct WyShared {
  Tile<kChunk, kMaxDim> dw, x;
  Tile<kChunk, kChunk> t, dt, tdt;
};
static_assert(sizeof(WyShared) <= kMaxSharedBytes, "WyShared: shared storage over the sm_90 limit");

template <GateKind kGate>
__global__ void __launch_bounds__(kThreads) wy_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  WyShared& sm = *reinterpret_cast<WyShared*>(smem_raw);
  const ChunkCoords cc = locate_chunk(p, blockIdx.x);
  if (!cc.valid) return;
  const int hv = static_cast<int>(blockIdx.y);
  const int c = cc.rows;
  const int kd = p.key_dim;
  const std::int64_t t0 = cc.t0;
  const std::int64_t k_row = head_row(p, t0, hv, kd);
  const std::int64_t k_stride = head_stride(p, kd);
  const std::int64_t cc_row = head_row(p, t0, hv, kChunk);
  const std::int64_t cc_stride = head_stride(p, kChunk);

  const GateRows<kGate> gate{p.gate_cum + head_row(p, t0, hv, p.gate_width),
                             head_stride(p, p.gate_width), c - 1};
  const bf16* k = p.k + qk_row(p, t0, hv);
  load_rows(sm.dw, p.dw + k_row, k_stride, c, kd);
  fill(sm.x, c, kd, [&](int i, int d) {
    const float beta = p.beta[head_row(p, t0 + i, hv, 1)];
    return beta * (to_float(k[i * qk_stride(p) + d]) * gate.from_start(i, d));
  });
  load_rows(sm.t, p.tmat + cc_row, cc_stride, c, c);
  load_rows(sm.dt, p.dtv + cc_row, cc_stride, c, c);
  __syncthreads();
  for_each_2d(c, c, [&](int i, int j) {  // dT = StrictLower(dW Xᵀ + dTv)
    float acc = 0.0f;
    if (j < i)
      for (int d = 0; d < kd; ++d) acc += sm.dw(i, d) * sm.x(j, d);
    sm.dt(i, j) = j < i ? sm.dt(i, j) + acc : 0.0f;
  });
  for_each_2d(c, kd, [&](int i, int d) {  // dX = Tᵀ dW
    float acc = 0.0f;
    for (int m = i; m < c; ++m) acc += sm.t(m, i) * sm.dw(m, d);
    p.dx[k_row + i * k_stride + d] = acc;
  });
  __syncthreads();
  fill(sm.tdt, c, c, [&](int i, int j) {  // Tᵀ dT: T(m, i) ≠ 0 for m ≥ i, dT(m, j) for m > j
    float acc = 0.0f;
    for (int m = (i > j + 1 ? i : j + 1); m < c; ++m) acc += sm.t(m, i) * sm.dt(m, j);
    return acc;
  });
  __syncthreads();
  for_each_2d(c, kChunk,
              [&](int i, int j) {  // dL = −StrictLower((Tᵀ dT) Tᵀ), T(j, m) ≠ 0 for m ≤ j
                float acc = 0.0f;
                if (j < i)
                  for (int m = 0; m <= j; ++m) acc += sm.tdt(i, m) * sm.t(j, m);
                p.dl[cc_row + i * cc_stride + j] = j < i ? -acc : 0.0f;
              });
}

}  // namespace kcv::glr::gpu::detail
