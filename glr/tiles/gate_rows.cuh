// File: glr/tiles/gate_rows.cuh
// The log-space gate of one chunk as the stages read it (gdn-spec.md §3): G = the chunk-local
// inclusive cumsum of g (natural log, fp32, ≤ 0 and non-increasing down the chunk), one column
// for a scalar gate, key_dim columns for a per-channel gate, none without a gate. GateRows views G
// of one (chunk, value head) wherever it lies: a shared-memory tile or the global workspace, both
// as a base pointer and a row stride. Every factor the stages need has an exponent ≤ 0:
//   from_start(i, d) = exp(G_i),  to_end(i, d) = exp(G_last − G_i),  at_end(d) = exp(G_last),
//   decay(i, j, d)   = exp(G_i − G_j) for i ≥ j,
// where `last` is the chunk's last valid row. Without a gate every factor is exactly 1 and G is
// never read. Callers evaluate these only for valid rows (a select, never a multiply by a mask:
// a padded row's G is not a cumsum, and exp of it may overflow, §3.2).
//
// decayed_dot is the one "decayed Gram" entry P_ij = Σ_d a_id b_jd exp(G_id − G_jd) (the
// reference's decayed_gram.hpp): the decay factors out of the sum for scalar gates and sits inside
// it for per-channel gates. The per-channel form uses the exact per-pair exponent (the reference
// checks that its anchored 16×16 blocks equal exactly this); anchoring is a tensor-core concern.
#pragma once

#include <cstdint>

#include "glr/tiles/tile.cuh"
#include "kcv/glr/member.hpp"

namespace kcv::glr::gpu::detail {

template <GateKind kGate>
struct GateRows {
  const float* base = nullptr;  ///< G of the chunk's row 0 for this value head
  std::int64_t row_stride = 0;  ///< floats from one row of G to the next
  int last = 0;                 ///< last valid row of the chunk

  __device__ __forceinline__ float log_cum(int i, int d) const {
    if constexpr (kGate == GateKind::kNone) {
      return 0.0f;
    } else if constexpr (kGate == GateKind::kScalar) {
      (void)d;
      return base[i * row_stride];
    } else {
      return base[i * row_stride + d];
    }
  }
  __device__ __forceinline__ float factor(float exponent) const {
    if constexpr (kGate == GateKind::kNone) {
      (void)exponent;
      return 1.0f;
    } else {
      return expf(exponent);
    }
  }
  __device__ __forceinline__ float from_start(int i, int d) const { return factor(log_cum(i, d)); }
  __device__ __forceinline__ float to_end(int i, int d) const {
    return factor(log_cum(last, d) - log_cum(i, d));
  }
  __device__ __forceinline__ float at_end(int d) const { return factor(log_cum(last, d)); }
  __device__ __forceinline__ float decay(int i, int j, int d) const {
    return factor(log_cum(i, d) - log_cum(j, d));
  }
};

/// GateRows of a G tile in shared memory (column 0 holds a scalar gate).
template <GateKind kGate, int kRows, int kCols>
__device__ __forceinline__ GateRows<kGate> gate_rows(const Tile<kRows, kCols>& g, int rows) {
  return GateRows<kGate>{g.data, Tile<kRows, kCols>::kStride, rows - 1};
}

/// P_ij = Σ_{d < dims} a(i, d) b(j, d) exp(G_id − G_jd); i ≥ j, both valid rows.
template <GateKind kGate, int kRows, int kCols>
__device__ __forceinline__ float decayed_dot(const Tile<kRows, kCols>& a, int i,
                                             const Tile<kRows, kCols>& b, int j,
                                             const GateRows<kGate>& gate, int dims) {
  float acc = 0.0f;
  if constexpr (kGate == GateKind::kChannel) {
    for (int d = 0; d < dims; ++d) acc += a(i, d) * b(j, d) * gate.decay(i, j, d);
    return acc;
  } else {
    for (int d = 0; d < dims; ++d) acc += a(i, d) * b(j, d);
    return acc * gate.decay(i, j, 0);
  }
}

}  // namespace kcv::glr::gpu::detail
