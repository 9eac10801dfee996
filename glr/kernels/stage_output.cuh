// File: glr/kernels/stage_output.cuh
// Stage F5, the output of one (chunk, value head, kOutTile value columns) (reference:
// chunk_output in glr/reference/chunk_forward.cpp):
//   O = scale · (Q̄ H + A^qk Δ),  Q̄ = Q ⊙ exp(G)
// with H the state entering the chunk and Δ from stage F4; A^qk Δ runs over j ≤ i only, so a
// token's output never reads a later token. o is stored in bf16.
#pragma once

#include "glr/kernels/layout.cuh"
#include "glr/tiles/gate_rows.cuh"

namespace kcv::glr::gpu::detail {

struct OutputShared {
  Tile<kChunk, kMaxDim> qbar;
  Tile<kMaxDim, kOutTile> h;
  Tile<kChunk, kChunk> aqk;
  Tile<kChunk, kOutTile> delta;
};
static_assert(sizeof(OutputShared) <= kMaxSharedBytes,
              "OutputShared: shared storage over the sm_90 limit");

template <GateKind kGate>
__global__ void __launch_bounds__(kThreads) output_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  OutputShared& sm = *reinterpret_cast<OutputShared*>(smem_raw);
  const ChunkCoords cc = locate_chunk(p, blockIdx.x);
  if (!cc.valid) return;
  const int hv = static_cast<int>(blockIdx.y);
  const int col0 = static_cast<int>(blockIdx.z) * kOutTile;
  const int cols = p.value_dim - col0 < kOutTile ? p.value_dim - col0 : kOutTile;
  const int c = cc.rows;
  const int kd = p.key_dim;
  const int vd = p.value_dim;
  const std::int64_t t0 = cc.t0;

  const GateRows<kGate> gate{p.gate_cum + head_row(p, t0, hv, p.gate_width),
                             head_stride(p, p.gate_width), c - 1};
  const bf16* q = p.q + qk_row(p, t0, hv);
  fill(sm.qbar, c, kd,
       [&](int i, int d) { return to_float(q[i * qk_stride(p) + d]) * gate.from_start(i, d); });
  fill(sm.h, kd, cols,
       [&](int d, int e) { return p.states[chunk_state(p, cc.cg, hv, d, col0 + e)]; });
  load_rows(sm.aqk, p.aqk + head_row(p, t0, hv, kChunk), head_stride(p, kChunk), c, c);
  const std::int64_t v_stride = head_stride(p, vd);
  load_rows(sm.delta, p.delta + head_row(p, t0, hv, vd) + col0, v_stride, c, cols);
  __syncthreads();
  bf16* o = p.o + head_row(p, t0, hv, vd) + col0;
  for_each_2d(c, cols, [&](int i, int e) {
    float inter = 0.0f;
    for (int d = 0; d < kd; ++d) inter += sm.qbar(i, d) * sm.h(d, e);
    float intra = 0.0f;
    for (int j = 0; j <= i; ++j) intra += sm.aqk(i, j) * sm.delta(j, e);
    o[i * v_stride + e] = from_float<bf16>(p.scale * (inter + intra));
  });
}

}  // namespace kcv::glr::gpu::detail
