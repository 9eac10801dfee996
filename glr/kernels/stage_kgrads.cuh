// File: glr/kernels/stage_kgrads.cuh
// Stages B3–B5 over the key dimension of one (chunk, value head): they assemble dq, dk (per value
// head; the GVA group sum follows), dG (w.r.t. the cumulative gate, before the reverse cumsum of
// B6) and dβ from the products of stages B3 (stage_vgrads.cuh) and B4 (stage_wy.cuh). Reference:
// inter_chunk_grads, intra_qk_grads and wy_grads in glr/reference/chunk_backward.cpp, and
// decayed_gram_vjp in decayed_gram.cpp. With E = exp(G), R = exp(G_last − G), γ_ij = exp(G_i −
// G_j):
//   dq_i = scale·E_i ⊙ dq_raw_i + Σ_{j≤i} dA_ij γ_ij k_j
//   dk_i = R_i ⊙ dk_raw_i + Σ_{m≥i} dA_mi γ_mi q_m
//          + β_i E_i ⊙ dX_i + Σ_{j<i} β_i dL_ij γ_ij k_j + Σ_{m>i} β_m dL_mi γ_mi k_m   (delta
//          rule)
//   dβ_i = dβ_v_i + Σ_d k_id E_id dX_id + Σ_{j<i} dL_ij P^kk_ij                        (delta rule)
// and dG is cancellation-free (docs/05_glr.md): the diagonal pairs of the Gram VJPs (γ_ii = 1
// does not depend on G) and the last row's own K̄ ⊙ dk_raw term (R_last = 1) are left out, since
// each is a pair of O(1) terms that cancel exactly and would leave an O(u) residue on a dg that is
// ~e^-30 under strong decay. Per element:
//   q_id E_id scale dq_raw_id − [i ≠ last] k_id R_id dk_raw_id + X_id dX_id
//   + (per-channel gate) q_id·Σ_{j<i}(…) − k_id·Σ_{m>i}(…) for the A^qk and the L Gram VJPs
// plus, on the last valid row, e_last_d · hd_d + Σ_{j<last} k_jd R_jd dk_raw_jd. A scalar gate sums
// the elements of a row and adds the Gram VJPs as row sum minus column sum of dP ⊙ P over the
// strictly lower pairs (P = A^qk with dP = dA, and P = P^kk with dP = diag(β) dL).
#pragma once

#include "glr/kernels/layout.cuh"
#include "glr/tiles/gate_rows.cuh"

namespace kcv::glr::gpu::detail {

struct KGradsShared {
  Tile<kChunk, kMaxDim> q, k, g;
  Tile<kChunk, kMaxDim> gterm;  ///< per-element dG terms
  Tile<kChunk, kChunk> da, dl, gkk, aqk;
  float beta[kChunk];
  float last_col[kMaxDim];
};
static_assert(sizeof(KGradsShared) <= kMaxSharedBytes,
              "KGradsShared: shared storage over the sm_90 limit");

// Where one (chunk, value head) sits in the token-major tensors.
struct KGradsRows {
  ChunkCoords cc;
  int hv = 0;
  std::int64_t k_row = 0, k_stride = 0;
};

// The scalar-gate dG of row i from the C×C terms: row sum minus column sum of dP ⊙ P.
template <bool kDelta>
__device__ float scalar_pair_terms(const KGradsShared& sm, int i, int rows) {
  float s = 0.0f;
  for (int j = 0; j < i; ++j) s += sm.da(i, j) * sm.aqk(i, j);
  for (int m = i + 1; m < rows; ++m) s -= sm.da(m, i) * sm.aqk(m, i);
  if constexpr (kDelta) {
    for (int j = 0; j < i; ++j) s += sm.beta[i] * sm.dl(i, j) * sm.gkk(i, j);
    for (int m = i + 1; m < rows; ++m) s -= sm.beta[m] * sm.dl(m, i) * sm.gkk(m, i);
  }
  return s;
}

// dq, dk of element (i, d) into the workspace; returns its per-element dG term.
template <GateKind kGate, bool kDelta>
__device__ float element_grads(const Params& p, const KGradsRows& r, const KGradsShared& sm,
                               const GateRows<kGate>& gate, int i, int d) {
  const int rows = r.cc.rows;
  const std::int64_t at = r.k_row + i * r.k_stride + d;
  const float e = gate.from_start(i, d);
  const float rr = gate.to_end(i, d);
  const float q_raw = p.dq_raw[at];
  const float k_raw = p.dk_raw[at];
  float q_off = 0.0f;  // A^qk VJP, strictly lower pairs
  for (int j = 0; j < i; ++j) q_off += sm.da(i, j) * sm.k(j, d) * gate.decay(i, j, d);
  float k_off = 0.0f;
  for (int m = i + 1; m < rows; ++m) k_off += sm.da(m, i) * sm.q(m, d) * gate.decay(m, i, d);
  const float dq = p.scale * q_raw * e + (q_off + sm.da(i, i) * sm.k(i, d));
  float dk = k_raw * rr + (k_off + sm.da(i, i) * sm.q(i, d));
  float gt = sm.q(i, d) * e * (p.scale * q_raw);
  if (i != gate.last) gt -= sm.k(i, d) * rr * k_raw;
  if constexpr (kGate == GateKind::kChannel) gt += sm.q(i, d) * q_off - sm.k(i, d) * k_off;
  if constexpr (kDelta) {
    const float dx = p.dx[at];
    float kk_row = 0.0f;  // Gram VJP of L = diag(β) P^kk with dP = diag(β) dL
    for (int j = 0; j < i; ++j) kk_row += sm.dl(i, j) * sm.k(j, d) * gate.decay(i, j, d);
    kk_row *= sm.beta[i];
    float kk_col = 0.0f;
    for (int m = i + 1; m < rows; ++m)
      kk_col += sm.beta[m] * sm.dl(m, i) * sm.k(m, d) * gate.decay(m, i, d);
    dk += sm.beta[i] * e * dx + (kk_row + kk_col);
    gt += sm.beta[i] * (sm.k(i, d) * e) * dx;
    if constexpr (kGate == GateKind::kChannel) gt += sm.k(i, d) * kk_row - sm.k(i, d) * kk_col;
  }
  p.dq_head[at] = dq;
  p.dk_head[at] = dk;
  return gt;
}

template <GateKind kGate, bool kDelta>
__global__ void __launch_bounds__(kThreads) kgrads_kernel(Params p) {
  extern __shared__ float4 smem_raw[];
  KGradsShared& sm = *reinterpret_cast<KGradsShared*>(smem_raw);
  KGradsRows r;
  r.cc = locate_chunk(p, blockIdx.x);
  if (!r.cc.valid) return;
  r.hv = static_cast<int>(blockIdx.y);
  const int rows = r.cc.rows;
  const int kd = p.key_dim;
  const int hv = r.hv;
  const std::int64_t t0 = r.cc.t0;
  r.k_row = head_row(p, t0, hv, kd);
  r.k_stride = head_stride(p, kd);
  const std::int64_t cc_row = head_row(p, t0, hv, kChunk);
  const std::int64_t cc_stride = head_stride(p, kChunk);

  load_rows(sm.q, p.q + qk_row(p, t0, hv), qk_stride(p), rows, kd);
  load_rows(sm.k, p.k + qk_row(p, t0, hv), qk_stride(p), rows, kd);
  if constexpr (kGate != GateKind::kNone)
    load_rows(sm.g, p.gate_cum + head_row(p, t0, hv, p.gate_width), head_stride(p, p.gate_width),
              rows, p.gate_width);
  load_rows(sm.da, p.da + cc_row, cc_stride, rows, rows);
  if constexpr (kGate == GateKind::kScalar)
    load_rows(sm.aqk, p.aqk + cc_row, cc_stride, rows, rows);
  if constexpr (kDelta) {
    load_rows(sm.dl, p.dl + cc_row, cc_stride, rows, rows);
    for_each_1d(kChunk,
                [&](int i) { sm.beta[i] = i < rows ? p.beta[head_row(p, t0 + i, hv, 1)] : 0.0f; });
  }
  __syncthreads();
  const GateRows<kGate> gate = gate_rows<kGate>(sm.g, rows);
  if constexpr (kDelta) {
    fill(sm.gkk, rows, rows,
         [&](int i, int j) { return j < i ? decayed_dot(sm.k, i, sm.k, j, gate, kd) : 0.0f; });
    __syncthreads();
  }
  for_each_2d(rows, kd, [&](int i, int d) {
    sm.gterm(i, d) = element_grads<kGate, kDelta>(p, r, sm, gate, i, d);
  });
  if constexpr (kGate != GateKind::kNone) {
    for_each_1d(kd, [&](int d) {  // the last row's terms through G_last
      float acc = 0.0f;
      for (int j = 0; j < gate.last; ++j)
        acc += sm.k(j, d) * gate.to_end(j, d) * p.dk_raw[r.k_row + j * r.k_stride + d];
      sm.last_col[d] = acc + gate.at_end(d) * p.hd[(r.cc.cg * p.v_heads + hv) * kd + d];
    });
  }
  __syncthreads();
  if constexpr (kGate == GateKind::kChannel) {
    for_each_2d(rows, kd, [&](int i, int d) {
      p.dgate[r.k_row + i * r.k_stride + d] =
          sm.gterm(i, d) + (i == gate.last ? sm.last_col[d] : 0.0f);
    });
  } else if constexpr (kGate == GateKind::kScalar) {
    for_each_1d(rows, [&](int i) {
      float s = 0.0f;
      for (int d = 0; d < kd; ++d) s += sm.gterm(i, d);
      if (i == gate.last)
        for (int d = 0; d < kd; ++d) s += sm.last_col[d];
      p.dgate[head_row(p, t0 + i, hv, 1)] = s + scalar_pair_terms<kDelta>(sm, i, rows);
    });
  }
  if constexpr (kDelta) {
    for_each_1d(rows, [&](int i) {
      float acc = p.dbeta_v[head_row(p, t0 + i, hv, 1)];
      for (int d = 0; d < kd; ++d)
        acc += sm.k(i, d) * gate.from_start(i, d) * p.dx[r.k_row + i * r.k_stride + d];
      for (int j = 0; j < i; ++j) acc += sm.dl(i, j) * sm.gkk(i, j);
      p.dbeta[head_row(p, t0 + i, hv, 1)] = acc;
    });
  }
}

}  // namespace kcv::glr::gpu::detail
