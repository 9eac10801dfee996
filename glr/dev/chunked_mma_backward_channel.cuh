// File: glr/dev/chunked_mma_backward_channel.cuh
// The gradient kernel of a per-channel gate without the delta rule (GLA), grad_kernel's sibling
// (chunked_mma_backward.cuh): one CTA (16 warps, kGradGroups column groups) per
// (chunk slot, value head), warp w + 4h rows 16w..16w+15 of the chunk; H the bf16 state entering
// the chunk, dS = dh[slot], G the chunk-local cumulative log-decay per key channel, E = e^G, R =
// e^{G_last − G}, Q̄ = bf16(Q ⊙ E) and K̄ = bf16(K ⊙ R) the prepare kernel's:
//   dv = scale·A^qkᵀ dO + K̄ dS                                       (A^qk from the forward)
//   dP = bf16(scale·Tril_incl(dO Vᵀ))                           (the gate sits inside the Gram)
//   dq = scale·E ⊙ (dO Hᵀ) + [dP's Gram VJP],  dk = R ⊙ (V dSᵀ) + [dP's Gram VJP]
// The Gram VJP is formed as the forward forms A^qk (prepare_channel, glr/reference/
// decayed_gram.cpp): dq_id = Σ_{j≤i} dP_ij k_jd Γ_ijd, dk_jd = Σ_{i≥j} dP_ij q_id Γ_ijd with
// Γ_ijd = e^{G_id − G_jd},
//   off the diagonal 16×16 blocks, on tensor cores, with n the first row of i's block:
//     dq_i += e^{G_i − G_n} ⊙ Σ_{j<n} dP_ij·bf16(k_j ⊙ e^{G_n − G_j})   (ChannelGram::k_anchored)
//     dk_j += Σ_{n>j} e^{G_n − G_j} ⊙ Σ_{i in n's block} dP_ij·bf16(q_i ⊙ e^{G_i − G_n})
//   (both factors at most 1 for a decaying gate), the factor after the product in fp32;
//   on the diagonal blocks per pair on CUDA cores, dP_ij k_jd Γ_ijd in fp32 (no operand rounded:
//   fewer roundings than the contract's per-pair operands), j < i; the pair i = j (dP_ii k_i,
//   dP_ii q_i) after dg's row terms are taken.
// dg per channel in the reference's form (glr/reference/chunk_backward.cpp, the emulation of
// precision-contract.md §6):
//   dg_t,d = Σ_{s=t..last} (q_sd dq'_sd − [s < last] k_sd dk'_sd)
//            + e_last,d·⟨H_d, dS_d⟩ + Σ_{s<last} k_sd·(R ⊙ V dSᵀ)_sd
// dq', dk' without the pairs i = j. The Gram VJP's diagonal blocks of both sides are one pass
// (gram_vjp_diagonal) over dq and dk in fp32 tiles; the row terms then go through dq's tile, and
// thread d sums channel d's column in a fixed order.
//
// Shared memory (214.5 KB, one CTA per multiprocessor), each tile written only after the barrier
// that ends the last read of what it replaces:
//   phase (barrier after)            vo (34 KB)                    hs (74 KB)
//   A  dv, dP, inter terms    (1)    V, dO                         H, dS
//   B  dk_inter out; anchors  (2)    dk's inter-chunk term (fp32)  Q, K anchored (ChannelGram)
//   C  boundary; dq off-diag  (3)    read by thread d              read; dq written (fp32)
//   D  dk off-diag (4); diagonals (5) dk (fp32)                    read; dq summed
//   E  row terms; dq, dk out  (6)    read                          row terms (dq's tile)
//   F  dg                                                          read by thread d
// dk's inter-chunk term waits in the tile while dq's intra-chunk terms are formed, so that one
// 128-column accumulator is live at a time.
#pragma once

#include <cstdint>

#include "glr/dev/chunked_mma_backward.hpp"
#include "glr/dev/chunked_mma_forward.cuh"

namespace kcv::glr::dev {

using gpu::detail::copy_rows_async_fixed;
using gpu::detail::for_each_pair_slice;

/// fp32 row terms of a chunk, [row][channel]; rows padded by 8 floats so that a warp's stores of
/// an accumulator (8 rows, 4 column pairs) fall on at most two lanes per bank.
using ChannelRowTerms = float[kMmaChunk][kMmaDim + 8];
/// G per key channel, [row][channel], rows padded by 8 floats for the same reason: the 8-byte
/// loads of (G_id, G_i,d+1) at a warp's accumulator coordinates (gate_pair) fall on distinct banks
/// within each half-warp, where 128-float rows put a column's 8 rows on one bank. The per-pair
/// sums' 16-byte loads (load_gate8) put rows j and j + 4 on the same banks: a two-way conflict at
/// most, where the accumulator loads, the more frequent, have none.
using ChannelGate = float[kMmaChunk][kMmaDim + 8];

/// (G_id, G_i,d+1), d even: one 8-byte load.
struct GatePair {
  float lo, hi;
};
__device__ __forceinline__ GatePair gate_pair(const ChannelGate& g, int i, int d) {
  GatePair x;
  arch::load_f32x2(&g[i][d], x.lo, x.hi);
  return x;
}

struct GradChannelStorage {
  SmemBf16<kMmaChunk, kMmaDim> q, k;
  union Vo {
    struct {
      SmemBf16<kMmaChunk, kMmaDim> v, d_o;
    } in;
    ChannelRowTerms terms;
  } vo;
  union Hs {
    struct {
      SmemBf16<kMmaDim, kMmaDim> h;   ///< bf16 state entering the chunk
      SmemBf16<kMmaDim, kMmaDim> ds;  ///< bf16 ∂L/∂(state leaving the chunk)
    } state;
    struct {
      ChannelGram gram;    ///< Q and K anchored (the forward's operands of A^qk)
      ChannelRowTerms dq;  ///< dq before the Gram VJP's diagonal blocks, then the row terms
    } vjp;
  } hs;
  SmemBf16<kMmaChunk, kMmaDim> kbar;  ///< K̄ = bf16(K ⊙ R) (the prepare kernel's)
  SmemBf16<kMmaChunk, kMmaChunk> a;   ///< A^qk (bf16, the prepare kernel's)
  SmemBf16<kMmaChunk, kMmaChunk> dp;  ///< bf16(scale·Tril_incl(dO Vᵀ))
  alignas(16) ChannelGate g;          ///< G per channel (rows in 16-byte stores)
  float hd[kMmaDim];                  ///< ⟨H_d, dS_d⟩
  float boundary[kMmaDim];  ///< e_last,d·⟨H_d, dS_d⟩ + Σ_{s<last} k_sd (R ⊙ V dSᵀ)_sd
};
static_assert(sizeof(GradChannelStorage::Vo) == 2 * sizeof(SmemBf16<kMmaChunk, kMmaDim>),
              "GradChannelStorage: the row terms take exactly V's and dO's place");
static_assert(sizeof(GradChannelStorage) <= 227 * 1024, "GradChannelStorage: over the sm_90 limit");

/// f.template operator()<kN8>() for kN8 = 0, 4, .. below N/8: the 32-column slices of an N-column
/// accumulator, each slice's fragment indices constants.
template <int N, typename F>
__device__ __forceinline__ void for_each_slice32(F&& f) {
  static_assert(N == 32 || N == 64 || N == 128, "for_each_slice32: 32, 64 or 128 columns");
  f.template operator()<0>();
  if constexpr (N > 32) f.template operator()<4>();
  if constexpr (N > 64) {
    f.template operator()<8>();
    f.template operator()<12>();
  }
}

/// The row side of a per-channel gate's Gram VJP (the file comment) off the diagonal blocks, for
/// row block w (rows r0 = 16w..) and the N columns c0.. of the calling warp's accumulator:
/// acc_i += Σ_{j<r0} dP_ij b_j ⊙ Γ_ij, as dP[r0.., 0..r0) times row block w's anchored B rows
/// (`gram.k_anchored`), then row i's factor e^{G_i − G_r0}, 32 columns at a time (nothing for
/// w = 0). The diagonal block's pairs are gram_vjp_diagonal's.
template <int N>
__device__ __forceinline__ void gram_vjp_rows(AccTile<16, N>& acc,
                                              const SmemBf16<kMmaChunk, kMmaChunk>& dp,
                                              const ChannelGram& gram, const ChannelGate& g, int w,
                                              int c0) {
  const int r0 = 16 * w;
  if (w > 0)
    for_each_slice32<N>([&]<int kN8>() {
      AccTile<16, 32> part;
      zero(part);
      mma_acc<AStore::kRowMajor, BStore::kKMajor>(part, dp, r0, gram.k_anchored, c0 + 8 * kN8, 0, w,
                                                  2, anchored_keys_row(w));
      for_each_pair_slice<kN8>(acc, part,
                               [&](int il, int d, float& x0, float& x1, float& y0, float& y1) {
                                 const GatePair gi = gate_pair(g, r0 + il, c0 + d);
                                 const GatePair gn = gate_pair(g, r0, c0 + d);
                                 x0 += y0 * arch::exp_approx(gi.lo - gn.lo);
                                 x1 += y1 * arch::exp_approx(gi.hi - gn.hi);
                               });
    });
}

/// The column side off the diagonal blocks, for row block w and the N columns c0..: acc_j +=
/// Σ_{i in later blocks} dP_ij a_i ⊙ Γ_ij for the rows j = r0..: for each later row block b,
/// dP[16b.., r0..]ᵀ times the A rows anchored at 16b (`gram.q_anchored`: a_i ⊙ e^{G_i − G_16b}),
/// then row j's factor e^{G_16b − G_j}.
template <int N>
__device__ __forceinline__ void gram_vjp_columns(AccTile<16, N>& acc,
                                                 const SmemBf16<kMmaChunk, kMmaChunk>& dp,
                                                 const ChannelGram& gram, const ChannelGate& g,
                                                 int w, int c0) {
  const int r0 = 16 * w;
  for (int b = w + 1; b < kMmaChunk / 16; ++b)
    for_each_slice32<N>([&]<int kN8>() {
      AccTile<16, 32> part;
      zero(part);
      mma_acc<AStore::kTransposed, BStore::kKMajor>(part, dp, r0, gram.q_anchored, c0 + 8 * kN8, b,
                                                    b + 1);
      for_each_pair_slice<kN8>(acc, part,
                               [&](int il, int d, float& x0, float& x1, float& y0, float& y1) {
                                 const GatePair gj = gate_pair(g, r0 + il, c0 + d);
                                 const GatePair gn = gate_pair(g, 16 * b, c0 + d);
                                 x0 += y0 * arch::exp_approx(gn.lo - gj.lo);
                                 x1 += y1 * arch::exp_approx(gn.hi - gj.hi);
                               });
    });
}

/// The diagonal blocks of both sides of the Gram VJP, per pair in fp32 on CUDA cores, each
/// e^{G_id − G_jd} formed once for the two terms it enters (a per-fragment loop over the warps'
/// accumulators formed it once per side, with half the lanes idle at each pair, i ≤ j). `rows` and
/// `cols` hold the sides' off-diagonal sums (fp32, the warps' accumulators stored); thread (b, d),
/// kMmaDim threads per row block b, adds row block b's pairs j < i in channel d,
///   rows[i][d] += dP_ij b_jd Γ_ijd   for each i, j ascending
///   cols[j][d] += dP_ij a_id Γ_ijd   for each j, i ascending
/// (with `row_side` false, the column side alone). The pair i = j is not added here; e^{G_i − G_j}
/// is never formed above the diagonal (it may overflow there). A warp's threads share (i, j) and
/// differ in d, so every branch is the warp's and the tiles' rows are read by consecutive words.
template <int kThreads>
__device__ __forceinline__ void gram_vjp_diagonal(ChannelRowTerms& rows, ChannelRowTerms& cols,
                                                  const SmemBf16<kMmaChunk, kMmaChunk>& dp,
                                                  const SmemBf16<kMmaChunk, kMmaDim>& a_rows,
                                                  const SmemBf16<kMmaChunk, kMmaDim>& b_rows,
                                                  const ChannelGate& g, bool row_side = true) {
  static_assert(kThreads == (kMmaChunk / 16) * kMmaDim, "gram_vjp_diagonal: a thread a (block, d)");
  arch::cta_for(kThreads, [&](int t) {
    const int r0 = 16 * (t / kMmaDim);
    const int d = t % kMmaDim;
    float col[15], bj[15], gj[15];  // row r0 + jl's column sum, b_jd and G_jd
    KCV_GLR_UNROLL
    for (int jl = 0; jl < 15; ++jl) {
      col[jl] = cols[r0 + jl][d];
      bj[jl] = b_rows.at(r0 + jl, d);
      gj[jl] = g[r0 + jl][d];
    }
    KCV_GLR_ROLLED
    for (int il = 1; il < 16; ++il) {
      const int i = r0 + il;
      const float gi = g[i][d];
      const float ai = a_rows.at(i, d);
      float row = rows[i][d];
      KCV_GLR_UNROLL
      for (int jl = 0; jl < 15; ++jl) {
        if (jl < il) {
          const float pij = dp.at(i, r0 + jl);
          const float e = arch::exp_approx(gi - gj[jl]);
          if (row_side) row += pij * bj[jl] * e;
          col[jl] += pij * ai * e;
        }
      }
      rows[i][d] = row;
    }
    KCV_GLR_UNROLL
    for (int jl = 0; jl < 15; ++jl) cols[r0 + jl][d] = col[jl];
  });
}

/// A_i ⊙ e^{G_i − G_n} for every row i, n = 16⌊i/16⌋, into gram.q_anchored, CTA-wide, 8 elements
/// per 16-byte load and store: the column side's anchored operand.
__device__ __forceinline__ void form_anchored_rows(ChannelGram& gram,
                                                   const SmemBf16<kMmaChunk, kMmaDim>& a,
                                                   const ChannelGate& g) {
  constexpr int kPieces = kMmaDim / 8;
  arch::cta_for(kMmaChunk * kPieces, [&](int idx) {
    const int i = idx / kPieces;
    const int d = 8 * (idx % kPieces);
    const int n = i & ~15;
    std::uint32_t x[4];
    arch::load_u32x4(a.ptr(i, d), x);
    for (int h = 0; h < 4; ++h) {
      const int ch_d = d + 2 * h;
      x[h] = arch::pack_bf16x2(
          arch::unpack_bf16(x[h], 0) * arch::exp_approx(g[i][ch_d] - g[n][ch_d]),
          arch::unpack_bf16(x[h], 1) * arch::exp_approx(g[i][ch_d + 1] - g[n][ch_d + 1]));
    }
    arch::store_u32x4(gram.q_anchored.ptr(i, d), x);
  });
}

/// The gradient kernel of a per-channel gate (the file comment); grid (chunk slots, value heads),
/// as grad_kernel's, kGradThreads threads. With the delta rule (KDA) it reads Δ where V
/// stands, leaves dv to wy_channel_kernel (the scan formed dΔ) and dk in its fp32 part, to which
/// wy_channel_kernel adds the WY terms.
template <bool kDelta>
__global__ void __launch_bounds__(kGradThreads, 1) grad_channel_kernel(MmaBackwardParams bp) {
  constexpr int kThreads = kGradThreads;
  const MmaForwardParams& p = bp.fwd;
  GradChannelStorage& sm = arch::shared_storage<GradChannelStorage>();
  const ChunkRef ch = locate_slot(p, blockIdx.x);
  if (!ch.valid) return;
  const std::int64_t slot = blockIdx.x;
  const int hv = static_cast<int>(blockIdx.y);
  const int c = ch.rows;
  const std::int64_t qk_stride = static_cast<std::int64_t>(p.qk_heads) * kMmaDim;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;

  // Two groups of copies: phase A's tiles first; Q and K, first read in phase B, land while
  // phase A computes (the CTA is alone on its multiprocessor: no other CTA's work hides a wait).
  if constexpr (kDelta)  // Δ where the members without the delta rule have V
    copy_rows_async_fixed<kThreads>(sm.vo.in.v, p.delta + slot_block(p, slot, hv, kMmaDim), kMmaDim,
                                    kMmaChunk);
  else
    copy_rows_async_fixed<kThreads>(sm.vo.in.v, p.v + v_row(p, ch.t0, hv), v_stride, c);
  copy_rows_async_fixed<kThreads>(sm.vo.in.d_o, bp.d_o + v_row(p, ch.t0, hv), v_stride, c);
  copy_rows_async_fixed<kThreads>(sm.hs.state.h, p.states + state_block(p, slot, hv), kMmaDim,
                                  kMmaDim);
  copy_rows_async_fixed<kThreads>(sm.hs.state.ds, bp.dh + state_block(p, slot, hv), kMmaDim,
                                  kMmaDim);
  if constexpr (!kDelta) {  // K̄ and A^qk for dv
    copy_rows_async_fixed<kThreads>(sm.kbar, p.kbar + slot_block(p, slot, hv, kMmaDim), kMmaDim,
                                    kMmaChunk);
    copy_rows_async_fixed<kThreads>(sm.a, p.a + slot_block(p, slot, hv, kMmaChunk), kMmaChunk,
                                    kMmaChunk);
  }
  arch::cp_async_commit();
  copy_rows_async_fixed<kThreads>(sm.q, p.q + qk_row(p, ch.t0, hv), qk_stride, c);
  copy_rows_async_fixed<kThreads>(sm.k, p.k + qk_row(p, ch.t0, hv), qk_stride, c);
  arch::cp_async_commit();
  // G as the prepare kernel forms it.
  load_channel_gate<kThreads>(sm.g, p, ch.t0, hv, c);
  __syncthreads();
  sum_channel_gate(sm.g, [](int, float) {});
  arch::cp_async_wait<1>();
  __syncthreads();  // phase A's tiles have landed; G is complete

  const int w = arch::warp_id() % (kMmaChunk / 16);  // row block
  const int group = arch::warp_id() / (kMmaChunk / 16);
  const int c0 = kGroupCols * group;  // the group's first column
  const int r0 = 16 * w;
  const int last = c - 1;
  using GroupAcc = AccTile<16, kGroupCols>;
  // A. dv = scale·A^qkᵀ dO (k-steps w..3: A^qk is lower triangular) + K̄ dS (with the delta rule
  // wy_channel_kernel forms dv).
  if constexpr (!kDelta) {
    GroupAcc local, carried;
    zero(local);
    zero(carried);
    mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(
        local, sm.a, r0, sm.vo.in.d_o, c0, w, kMmaChunk / 16);
    mma_acc<AStore::kRowMajor, BStore::kKMajor>(carried, sm.kbar, r0, sm.hs.state.ds, c0, 0,
                                                kMmaDim / 16);
    zip(local, carried, [&](float& x, float y) { x = p.scale * x + y; });
    store_rows(local, bp.dv + v_row(p, ch.t0, hv) + c0, v_stride, r0, c, StoreBf16Pair{});
  }
  // dP = bf16(scale·Tril_incl(dO Vᵀ)), rows r0.., the 16-column blocks p ≡ group (mod the
  // groups): computed for p ≤ w, zero above the diagonal and past the end.
  for (int pc = group; pc < kMmaChunk / 16; pc += kGradGroups) {
    AccTile<16, 16> da;
    zero(da);
    if (pc <= w)
      mma_acc<AStore::kRowMajor, BStore::kNMajor>(da, sm.vo.in.d_o, r0, sm.vo.in.v, 16 * pc, 0,
                                                  kMmaDim / 16);
    for_each_pair(da, [&](int il, int jl, float& x0, float& x1) {
      const int i = r0 + il;
      const int j = 16 * pc + jl;
      const float p0 = j <= i && i < c ? p.scale * x0 : 0.0f;
      const float p1 = j + 1 <= i && i < c ? p.scale * x1 : 0.0f;
      arch::store_u32(sm.dp.ptr(i, j), arch::pack_bf16x2(p0, p1));
    });
  }
  // The inter-chunk terms: dq = scale·E ⊙ (dO Hᵀ), dk = R ⊙ (V dSᵀ).
  GroupAcc dq, dk;
  zero(dq);
  zero(dk);
  mma_acc<AStore::kRowMajor, BStore::kNMajor>(dq, sm.vo.in.d_o, r0, sm.hs.state.h, c0, 0,
                                              kMmaDim / 16);
  mma_acc<AStore::kRowMajor, BStore::kNMajor>(dk, sm.vo.in.v, r0, sm.hs.state.ds, c0, 0,
                                              kMmaDim / 16);
  const bool key_decay = bp.fault != BackwardFault::kKeyWithoutDecay;
  for_each_pair(dq, [&](int il, int d, float& x0, float& x1) {
    const GatePair gi = gate_pair(sm.g, r0 + il, c0 + d);
    x0 *= p.scale * arch::exp_approx(gi.lo);
    x1 *= p.scale * arch::exp_approx(gi.hi);
  });
  for_each_pair(dk, [&](int il, int d, float& x0, float& x1) {
    const int i = r0 + il;
    if (!key_decay && i < c) return;
    const GatePair gi = gate_pair(sm.g, i, c0 + d), gl = gate_pair(sm.g, kMmaChunk - 1, c0 + d);
    x0 *= arch::exp_approx(gl.lo - gi.lo);
    x1 *= arch::exp_approx(gl.hi - gi.hi);
  });
  // ⟨H_d, dS_d⟩, thread d over row d in column order (H at the chunk's entry; the state leaving
  // it is not read), eight columns of each per 16-byte load.
  arch::cta_for(kMmaDim, [&](int d) {
    float s = 0.0f;
    for (int e = 0; e < kMmaDim; e += 8) {
      std::uint32_t h8[4], ds8[4];
      arch::load_u32x4(sm.hs.state.h.ptr(d, e), h8);
      arch::load_u32x4(sm.hs.state.ds.ptr(d, e), ds8);
      KCV_GLR_UNROLL
      for (int x = 0; x < 8; ++x)
        s += arch::unpack_bf16(h8[x / 2], x % 2) * arch::unpack_bf16(ds8[x / 2], x % 2);
    }
    sm.hd[d] = s;
  });
  arch::cp_async_wait<0>();
  __syncthreads();  // (1) H, dS, V and dO read for the last time; Q and K have landed

  // B. dk's inter-chunk term into the fp32 tile (V's and dO's place), each element by the lane
  // that holds it, so that dk's registers are free while dq's intra-chunk terms are formed; the
  // anchored operands in H's and dS's place.
  for_each_pair(dk, [&](int il, int d, float& x0, float& x1) {
    sm.vo.terms[r0 + il][c0 + d] = x0;
    sm.vo.terms[r0 + il][c0 + d + 1] = x1;
  });
  form_anchored_rows(sm.hs.vjp.gram, sm.q, sm.g);
  form_anchored_keys(sm.hs.vjp.gram, sm.k, sm.g);
  __syncthreads();  // (2) dk's inter-chunk term and the anchored operands complete

  // C. The boundary term of channel d by thread d, rows in order: e_last,d·⟨H_d, dS_d⟩ +
  // Σ_{s<last} k_sd·dk_inter_sd.
  arch::cta_for(kMmaDim, [&](int d) {
    float key = 0.0f;
    for (int s = 0; s < last; ++s) key += sm.k.at(s, d) * sm.vo.terms[s][d];
    const float e_last = arch::exp_approx(sm.g[kMmaChunk - 1][d]);
    sm.boundary[d] =
        bp.fault == BackwardFault::kBoundaryAtEntry ? sm.hd[d] : e_last * sm.hd[d] + key;
  });
  // dq: the Gram VJP's row side off the diagonal blocks, then dq into its tile.
  gram_vjp_rows(dq, sm.dp, sm.hs.vjp.gram, sm.g, w, c0);
  for_each_pair(dq, [&](int il, int dl, float& x0, float& x1) {
    sm.hs.vjp.dq[r0 + il][c0 + dl] = x0;
    sm.hs.vjp.dq[r0 + il][c0 + dl + 1] = x1;
  });
  __syncthreads();  // (3) the boundary terms complete: dk's tile takes its column side

  // D. dk: its inter-chunk term and the Gram VJP's column side off the diagonal blocks, back into
  // its tile by the lane that holds each element; then the diagonal blocks of both sides at once
  // (gram_vjp_diagonal: each e^{G_i − G_j} formed once for dq's and dk's term).
  for_each_pair(dk, [&](int il, int dl, float& x0, float& x1) {
    x0 = sm.vo.terms[r0 + il][c0 + dl];
    x1 = sm.vo.terms[r0 + il][c0 + dl + 1];
  });
  gram_vjp_columns(dk, sm.dp, sm.hs.vjp.gram, sm.g, w, c0);
  for_each_pair(dk, [&](int il, int dl, float& x0, float& x1) {
    sm.vo.terms[r0 + il][c0 + dl] = x0;
    sm.vo.terms[r0 + il][c0 + dl + 1] = x1;
  });
  __syncthreads();  // (4) both sides' off-diagonal sums complete
  gram_vjp_diagonal<kThreads>(sm.hs.vjp.dq, sm.vo.terms, sm.dp, sm.q, sm.k, sm.g,
                              bp.fault != BackwardFault::kDropIntraDiagonal);
  __syncthreads();  // (5) dq and dk complete in their tiles

  // E. Row terms q_i·dq'_i − [i < last] k_i·dk'_i per channel into dq's tile, each element by the
  // lane that holds it (dq, then dk, one accumulator at a time); the pair i = j and dq and dk
  // out.
  const auto store = [&](GroupAcc& acc, bf16* out_bf16, float* out_part, bool part) {
    if (!part) {
      store_rows(acc, out_bf16 + c0, qk_stride, r0, c, StoreBf16Pair{});
    } else {  // a pair per 8-byte store
      store_rows(acc, out_part + c0, v_stride, r0, c,
                 [](float* at, float x0, float x1) { arch::store_f32x2(at, x0, x1); });
    }
  };
  ChannelRowTerms& terms = sm.hs.vjp.dq;
  for_each_pair(dq, [&](int il, int dl, float& x0, float& x1) {
    const int i = r0 + il;
    const int d = c0 + dl;
    x0 = terms[i][d];
    x1 = terms[i][d + 1];
    const bool valid = i < c;
    terms[i][d] = valid ? sm.q.at(i, d) * x0 : 0.0f;
    terms[i][d + 1] = valid ? sm.q.at(i, d + 1) * x1 : 0.0f;
    const float pii = sm.dp.at(i, i);
    x0 += pii * sm.k.at(i, d);
    x1 += pii * sm.k.at(i, d + 1);
  });
  store(dq, bp.dq + qk_row(p, ch.t0, hv),
        bp.dq_part != nullptr ? bp.dq_part + v_row(p, ch.t0, hv) : nullptr, p.group > 1);
  for_each_pair(dk, [&](int il, int dl, float& x0, float& x1) {
    const int i = r0 + il;
    const int d = c0 + dl;
    x0 = sm.vo.terms[i][d];
    x1 = sm.vo.terms[i][d + 1];
    if (i < last) {
      terms[i][d] -= sm.k.at(i, d) * x0;
      terms[i][d + 1] -= sm.k.at(i, d + 1) * x1;
    }
    const float pii = sm.dp.at(i, i);
    x0 += pii * sm.q.at(i, d);
    x1 += pii * sm.q.at(i, d + 1);
  });
  store(dk, bp.dk + qk_row(p, ch.t0, hv),
        bp.dk_part != nullptr ? bp.dk_part + v_row(p, ch.t0, hv) : nullptr, p.group > 1 || kDelta);
  __syncthreads();  // (6) the row terms complete

  // F. dg_t,d = boundary_d + Σ_{s = last..t} row term, thread d, rows from the last.
  arch::cta_for(kMmaDim, [&](int d) {
    float running = sm.boundary[d];
    for (int t = last; t >= 0; --t) {
      running += terms[t][d];
      bp.dg[((ch.t0 + t) * p.v_heads + hv) * kMmaDim + d] = running;
    }
  });
}

}  // namespace kcv::glr::dev
