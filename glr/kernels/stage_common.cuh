// File: glr/kernels/stage_common.cuh
// The stages every member shares, with no gate-kind or delta-rule parameter:
//   index_kernel     sequence bounds and chunk offsets from cu_seqlens (or a fixed length), on
//                    the device so the host never waits; bounds are clamped to be non-decreasing
//                    and inside [0, tokens], so even a malformed cu_seqlens cannot make a stage
//                    index outside its tensors (the launcher checks a host copy when it has one);
//   gate_prep_kernel F1, the chunk-local inclusive cumsum of g (fp32, natural log), and β to fp32;
//   gate_grad_kernel B6, the chunk-local reverse cumsum dg_t = Σ_{s ≥ t, same chunk} dG_s, in g's
//                    dtype; also writes dβ in β's dtype;
//   group_sum_kernel dq, dk summed over each GVA group in value-head order, to bf16.
// Cumsums run serially down a chunk, one thread per gate column: a fixed order.
#pragma once

#include <cstdint>

#include "glr/kernels/layout.cuh"
#include "glr/tiles/block_loops.cuh"
#include "glr/tiles/convert.cuh"

namespace kcv::glr::gpu::detail {

template <typename Index>
__global__ void index_kernel(Params p, const Index* cu_seqlens, std::int64_t fixed_len) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  std::int64_t begin = 0;
  std::int64_t chunks = 0;
  p.bounds[0] = 0;
  p.chunk_offsets[0] = 0;
  for (std::int64_t n = 0; n < p.sequences; ++n) {
    std::int64_t end =
        cu_seqlens != nullptr ? static_cast<std::int64_t>(cu_seqlens[n + 1]) : (n + 1) * fixed_len;
    end = end < begin ? begin : (end > p.tokens ? p.tokens : end);
    chunks += (end - begin + kChunk - 1) / kChunk;
    p.bounds[n + 1] = end;
    p.chunk_offsets[n + 1] = chunks;
    begin = end;
  }
}

template <typename GateT, typename BetaT>
__global__ void gate_prep_kernel(Params p, const GateT* g, const BetaT* beta) {
  const ChunkCoords cc = locate_chunk(p, blockIdx.x);
  if (!cc.valid) return;
  const int hv = static_cast<int>(blockIdx.y);
  const int w = p.gate_width;
  if (g != nullptr)
    for_each_1d(w, [&](int col) {
      float running = 0.0f;
      for (int i = 0; i < cc.rows; ++i) {
        const std::int64_t at = head_row(p, cc.t0 + i, hv, w) + col;
        running += to_float(g[at]);
        p.gate_cum[at] = running;
      }
    });
  if (beta != nullptr)
    for_each_1d(cc.rows, [&](int i) {
      const std::int64_t at = head_row(p, cc.t0 + i, hv, 1);
      p.beta[at] = to_float(beta[at]);
    });
}

template <typename GateT, typename BetaT>
__global__ void gate_grad_kernel(Params p, GateT* dg, BetaT* dbeta) {
  const ChunkCoords cc = locate_chunk(p, blockIdx.x);
  if (!cc.valid) return;
  const int hv = static_cast<int>(blockIdx.y);
  const int w = p.gate_width;
  if (dg != nullptr)
    for_each_1d(w, [&](int col) {
      float running = 0.0f;
      for (int i = cc.rows - 1; i >= 0; --i) {
        const std::int64_t at = head_row(p, cc.t0 + i, hv, w) + col;
        running += p.dgate[at];
        dg[at] = from_float<GateT>(running);
      }
    });
  if (dbeta != nullptr)
    for_each_1d(cc.rows, [&](int i) {
      const std::int64_t at = head_row(p, cc.t0 + i, hv, 1);
      dbeta[at] = from_float<BetaT>(p.dbeta[at]);
    });
}

/// One CTA per (token, q/k head): out[t, h, d] = Σ_{j < group} per_head[t, h·group + j, d].
__global__ void group_sum_kernel(Params p, const float* per_head, bf16* out) {
  const std::int64_t t = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y);
  const int kd = p.key_dim;
  for_each_1d(kd, [&](int d) {
    float acc = 0.0f;
    for (int j = 0; j < p.group; ++j) acc += per_head[head_row(p, t, h * p.group + j, kd) + d];
    out[(t * p.qk_heads + h) * kd + d] = from_float<bf16>(acc);
  });
}

}  // namespace kcv::glr::gpu::detail
