// File: glr/dev/chunked_mma_wy_channel.cuh
// wy_channel_kernel: the WY representation's and the triangular inverse's VJPs under a per-channel
// gate with the delta rule (KDA), wy_grad_kernel's sibling (chunked_mma_backward.cuh). One CTA
// (16 warps, grad_channel_kernel's groups) per (chunk slot, value head), warp w + 4h rows
// 16w..16w+15 and, of each product, feature columns 32h.. or the 16-column block h of the chunk's
// columns; with G per key channel,
// E = e^G, X = bf16(β (K ⊙ E)), Ṽ = bf16(β V), L = β ⊙ P(K, K) strictly lower (the decay inside
// the Gram, P_ij = Σ_d k_id k_jd e^{G_id − G_jd}), T = (I + L)⁻¹ (the precision emulation's
// wy_backward, glr/tests/support/precision_emulation_backward.cpp):
//   dW = −dΔ Hᵀ;  dṼ = Tᵀ dΔ;  dX = Tᵀ dW;  dT = StrictLower(dW Xᵀ + dΔ Ṽᵀ)
//   dL = −StrictLower(Tᵀ dT Tᵀ);  M = bf16(β ⊙ dL)
//   dv = β ⊙ dṼ;  dβ = Σ_e v·dṼ + Σ_d e k·dX + Σ_j dL_ij P_ij
//   dk += β E ⊙ dX + [M's Gram VJP through P(K, K): its row side and its column side]
//   dg_t,d += Σ_{s≥t} (x_sd dX_sd + k_sd (da_sd − db_sd))     (da, db the VJP's two sides)
// P's off-diagonal blocks come from the forward's anchored operands on tensor cores, its diagonal
// blocks from the workspace (gram_diag: the prepare kernel's per-pair sums, in channel order,
// kept by the training step's forward); the VJP's two sides are
// gram_vjp_rows and gram_vjp_columns (chunked_mma_backward_channel.cuh) off the diagonal blocks
// and gram_vjp_diagonal on them, both sides at once, with K on both.
// grad_channel_kernel<true> wrote dk's output part (fp32, dk_part) and dg's own terms; this kernel
// adds to both, each element by its one owner.
//
// Shared memory (each tile written only after the barrier that ends the last read of what it
// replaces):
//   phase (barrier after)        a.wide (34 KB)    a.narrow (17 KB)   a.dd, a.dw      b (112 KB)
//   1 dW                (A)      H                 V lands            dΔ, dW written
//   2 dṼ, dv, X, Ṽ, dX  (B)      X, Ṽ written      V read
//   3 dT                (C)      X, Ṽ read         dT written         read
//   4 Y                 (D)      Y written         dT read
//   5 dL, M             (E)      Y read                                               (over a)
//   6 anchors; P's diagonal copied (F)                                                written
//   7 P, dβ; the Gram VJP's off-diagonal blocks (G)                                   sides written
//   8 its diagonal blocks   (H)                                                       sides summed
//   9 dk, dβ, dg out
#pragma once

#include <cstdint>

#include "glr/dev/chunked_mma_backward_channel.cuh"
#include "glr/dev/wy_phases.cuh"

namespace kcv::glr::dev {

using gpu::detail::add_to_row;
using gpu::detail::RowPartials;
using gpu::detail::store_partials;

struct WyChannelStorage {
  SmemBf16<kMmaChunk, kMmaDim> k;
  SmemBf16<kMmaChunk, kMmaChunk> t;  ///< bf16(T) (the prepare kernel's)
  SmemBf16<kMmaChunk, kMmaChunk> m;  ///< bf16(β ⊙ dL), strictly lower
  alignas(16) ChannelGate g;         ///< G per channel (rows in 16-byte loads)
  ChannelRowTerms rows;              ///< this kernel's row terms of dg (fp32)
  union Scratch {
    struct A {                          // phases 1–5
      SmemBf16<kMmaChunk, kMmaDim> dd;  ///< bf16 dΔ (the scan's)
      SmemBf16<kMmaChunk, kMmaDim> dw;  ///< bf16(dW)
      union Wide {
        SmemBf16<kMmaDim, kMmaDim> h;  ///< bf16 state entering the chunk
        struct {
          SmemBf16<kMmaChunk, kMmaDim> x, vt;  ///< X, Ṽ (the prepare kernel's values)
        } xv;
        SmemBf16<kMmaChunk, kMmaChunk> y;  ///< bf16(Tᵀ dT)
      } wide;
      union Narrow {
        SmemBf16<kMmaChunk, kMmaDim> v;
        SmemBf16<kMmaChunk, kMmaChunk> dt;  ///< bf16(dT), strictly lower
      } narrow;
    } a;
    struct B {           // phases 6–9
      ChannelGram gram;  ///< K_i ⊙ e^{G_i − G_n} (q_anchored) and the anchored keys
      alignas(16) float p_diag[kMmaChunk][16];  ///< P_ij, j < i on i's diagonal block (column
                                                ///< j − 16⌊i/16⌋), the prepare kernel's
      ChannelRowTerms row_side, column_side;    ///< the Gram VJP's two sides (fp32)
    } b;
  } u;
  float beta[kMmaChunk];                       ///< β, 0 past the end
  float beta_part[kGradGroups][kMmaChunk][4];  ///< dβ, one partial per group and lane of a quad
};
static_assert(sizeof(WyChannelStorage) <= 227 * 1024, "WyChannelStorage: over the sm_90 limit");

/// The WY kernel of a per-channel gate with the delta rule (the file comment); grid (chunk slots,
/// value heads), as wy_grad_kernel's, kGradThreads threads.
__global__ void __launch_bounds__(kGradThreads, 1) wy_channel_kernel(MmaBackwardParams bp) {
  constexpr int kThreads = kGradThreads;
  const MmaForwardParams& p = bp.fwd;
  WyChannelStorage& sm = arch::shared_storage<WyChannelStorage>();
  const ChunkRef ch = locate_slot(p, blockIdx.x);
  if (!ch.valid) return;
  const std::int64_t slot = blockIdx.x;
  const int hv = static_cast<int>(blockIdx.y);
  const int c = ch.rows;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;
  auto& a = sm.u.a;

  copy_wy_operands<kThreads>(sm.k, a.narrow.v, a.wide.h, a.dd, sm.t, bp, ch, slot, hv);
  arch::cta_for(kMmaChunk, [&](int i) {
    sm.beta[i] = i < c ? bf16_to_float(p.beta[(ch.t0 + i) * p.v_heads + hv]) : 0.0f;
  });
  load_channel_gate<kThreads>(sm.g, p, ch.t0, hv, c);
  __syncthreads();
  sum_channel_gate(sm.g, [](int, float) {});
  arch::cp_async_wait<1>();  // dΔ and H; T, V, K may still be in flight
  __syncthreads();           // dΔ, H, β and G are complete

  const int w = arch::warp_id() % (kMmaChunk / 16);  // row block
  const int group = arch::warp_id() / (kMmaChunk / 16);
  const int c0 = kGroupCols * group;  // the group's first feature column
  const int r0 = 16 * w;
  using GroupAcc = AccTile<16, kGroupCols>;
  RowPartials beta_part;
  zero(beta_part);
  GroupAcc acc;
  // 1. dW = −dΔ Hᵀ (Hᵀ as an n-major B operand).
  zero(acc);
  mma_acc<AStore::kRowMajor, BStore::kNMajor>(acc, a.dd, r0, a.wide.h, c0, 0, kMmaDim / 16);
  for_each_pair(acc, [&](int il, int d, float& x0, float& x1) {
    arch::store_u32(a.dw.ptr(r0 + il, c0 + d), arch::pack_bf16x2(-x0, -x1));
  });
  arch::cp_async_wait<0>();
  __syncthreads();  // (A) dW complete; H read for the last time; T, V, K have landed
  // dṼ = Tᵀ dΔ (k-steps w..3: T is lower triangular); dv = β ⊙ dṼ, dβ += v·dṼ.
  zero(acc);
  mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(acc, sm.t, r0, a.dd,
                                                                             c0, w, kMmaChunk / 16);
  bf16* dv = bp.dv + v_row(p, ch.t0, hv) + c0;
  for_each_pair(acc, [&](int il, int el, float& x0, float& x1) {
    const int i = r0 + il;
    const int e = c0 + el;
    add_to_row(beta_part, il, el, a.narrow.v.at(i, e) * x0 + a.narrow.v.at(i, e + 1) * x1);
    x0 *= sm.beta[i];
    x1 *= sm.beta[i];
  });
  store_rows(acc, dv, v_stride, r0, c, StoreBf16Pair{});
  // 2. X = bf16(β (K ⊙ E)) and Ṽ = bf16(β V) where H was, the prepare kernel's values.
  {
    constexpr int kPieces = kMmaDim / 8;
    arch::cta_for(kMmaChunk * kPieces, [&](int idx) {
      const int i = idx / kPieces;
      const int d = 8 * (idx % kPieces);
      std::uint32_t kw[4], vw[4];
      arch::load_u32x4(sm.k.ptr(i, d), kw);
      arch::load_u32x4(a.narrow.v.ptr(i, d), vw);
      for (int h = 0; h < 4; ++h) {
        const int ch_d = d + 2 * h;
        kw[h] = arch::pack_bf16x2(
            sm.beta[i] * (arch::unpack_bf16(kw[h], 0) * arch::exp_approx(sm.g[i][ch_d])),
            sm.beta[i] * (arch::unpack_bf16(kw[h], 1) * arch::exp_approx(sm.g[i][ch_d + 1])));
        vw[h] = arch::pack_bf16x2(sm.beta[i] * arch::unpack_bf16(vw[h], 0),
                                  sm.beta[i] * arch::unpack_bf16(vw[h], 1));
      }
      arch::store_u32x4(a.wide.xv.x.ptr(i, d), kw);
      arch::store_u32x4(a.wide.xv.vt.ptr(i, d), vw);
    });
  }
  // dX = Tᵀ dW; dk = β E ⊙ dX, dβ += E k·dX, dg's row term x·dX (x = β (k ⊙ e) in fp32, as the
  // reference's wy_grads and the precision emulation take it; X's tile holds it rounded for the
  // products, a rounding the contract declares there only).
  GroupAcc& dk = acc;
  zero(dk);
  mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(dk, sm.t, r0, a.dw, c0,
                                                                             w, kMmaChunk / 16);
  for_each_pair(dk, [&](int il, int dl, float& x0, float& x1) {
    const int i = r0 + il;
    const int d = c0 + dl;
    const GatePair gi = gate_pair(sm.g, i, d);
    const float e0 = arch::exp_approx(gi.lo), e1 = arch::exp_approx(gi.hi);
    const float k0 = sm.k.at(i, d), k1 = sm.k.at(i, d + 1);
    add_to_row(beta_part, il, dl, k0 * e0 * x0 + k1 * e1 * x1);
    sm.rows[i][d] = sm.beta[i] * (k0 * e0) * x0;
    sm.rows[i][d + 1] = sm.beta[i] * (k1 * e1) * x1;
    x0 *= sm.beta[i] * e0;
    x1 *= sm.beta[i] * e1;
  });
  __syncthreads();  // (B) X, Ṽ complete; V read for the last time
  // 3. dT = StrictLower(dW Xᵀ + dΔ Ṽᵀ), the group's 16-column block.
  wy_solve_dt<1>(a.narrow.dt, a.dw, a.wide.xv.x, a.dd, a.wide.xv.vt, c, w, group);
  __syncthreads();  // (C) dT complete; X, Ṽ, dW and dΔ read for the last time
  // 4. Y = Tᵀ dT (k-steps w..3), the group's 16-column block.
  wy_solve_y<1>(a.wide.y, sm.t, a.narrow.dt, w, group);
  __syncthreads();  // (D) Y complete; dT read for the last time
  // 5. dL = −StrictLower(Y Tᵀ) (k-steps 0..w), the group's 16-column block, kept for dβ;
  // M = bf16(β ⊙ dL).
  static_assert(kGradGroups == kMmaChunk / 16, "one 16-column block of dL per group");
  const int j0 = 16 * group;
  AccTile<16, 16> dl;
  zero(dl);
  if (group <= w) mma_acc<AStore::kRowMajor, BStore::kNMajor>(dl, a.wide.y, r0, sm.t, j0, 0, w + 1);
  for_each_pair(dl, [&](int il, int jl, float& x0, float& x1) {
    const int i = r0 + il;
    const int j = j0 + jl;
    x0 = j < i && i < c ? -x0 : 0.0f;
    x1 = j + 1 < i && i < c ? -x1 : 0.0f;
    arch::store_u32(sm.m.ptr(i, j), arch::pack_bf16x2(sm.beta[i] * x0, sm.beta[i] * x1));
  });
  __syncthreads();  // (E) M complete; Y read for the last time: the scratch takes the anchors
  // 6. P's diagonal blocks as the prepare kernel summed them (gram_diag: per pair, in channel
  // order), copied while K_i ⊙ e^{G_i − G_n} and the anchored keys are formed.
  auto& b = sm.u.b;
  gpu::detail::copy_floats_async_fixed<kThreads, kMmaChunk * 16>(
      &b.p_diag[0][0], p.gram_diag + slot_block(p, slot, hv, 16));
  arch::cp_async_commit();
  form_anchored_rows(b.gram, sm.k, sm.g);
  form_anchored_keys(b.gram, sm.k, sm.g);
  arch::cp_async_wait<0>();
  __syncthreads();  // (F) the anchored operands and P's diagonal complete
  // 7. dβ += Σ_j dL_ij P_ij: P's off-diagonal blocks from the anchored operands (the group's
  // block j0.., when it lies left of the row's diagonal block).
  {
    AccTile<16, 16> kk;
    zero(kk);
    if (group < w)
      mma_acc<AStore::kRowMajor, BStore::kNMajor>(kk, b.gram.q_anchored, r0, b.gram.k_anchored,
                                                  anchored_keys_row(w) + j0, 0, kMmaDim / 16);
    if (bp.fault != BackwardFault::kBetaWithoutGram)
      for_each_pair(kk, dl, [&](int il, int jl, float& x0, float& x1, float& y0, float& y1) {
        const int i = r0 + il;
        const int j = j0 + jl;
        // P_ij for j < i (the pairs dL has; a select, so that no product reaches the others)
        const auto term = [&](int jj, float x, float y) {
          if (jj >= i) return 0.0f;
          return y * (jj < r0 ? x : b.p_diag[i][jj - r0]);
        };
        add_to_row(beta_part, il, jl, term(j, x0, y0) + term(j + 1, x1, y1));
      });
  }
  // M's Gram VJP through P(K, K), its row side and its column side: the off-diagonal blocks on
  // tensor cores, each side stored (fp32) once summed; then the diagonal blocks of both at once
  // (gram_vjp_diagonal: each e^{G_i − G_j} formed once for the two sides); then dk gets both and
  // dg's row term k ⊙ (da − db), each side read back into one accumulator in turn.
  const bool key_solve = bp.fault != BackwardFault::kKeyWithoutSolve;
  GroupAcc side;
  if (key_solve) {
    const auto keep = [&](ChannelRowTerms& tile) {
      for_each_pair(side, [&](int il, int dl, float& x0, float& x1) {
        tile[r0 + il][c0 + dl] = x0;
        tile[r0 + il][c0 + dl + 1] = x1;
      });
    };
    zero(side);
    gram_vjp_rows(side, sm.m, b.gram, sm.g, w, c0);
    keep(b.row_side);
    zero(side);
    gram_vjp_columns(side, sm.m, b.gram, sm.g, w, c0);
    keep(b.column_side);
  }
  __syncthreads();  // (G) both sides' off-diagonal sums complete
  if (key_solve) gram_vjp_diagonal<kThreads>(b.row_side, b.column_side, sm.m, sm.k, sm.k, sm.g);
  __syncthreads();  // (H) both sides complete
  if (key_solve) {
    const auto add_side = [&](const ChannelRowTerms& tile, bool column) {
      for_each_pair(dk, side, [&](int il, int dl, float& x0, float& x1, float& y0, float& y1) {
        const int i = r0 + il;
        const int d = c0 + dl;
        y0 = tile[i][d];
        y1 = tile[i][d + 1];
        x0 += y0;
        x1 += y1;
        if (column) {
          sm.rows[i][d] -= sm.k.at(i, d) * y0;
          sm.rows[i][d + 1] -= sm.k.at(i, d + 1) * y1;
        } else {
          sm.rows[i][d] += sm.k.at(i, d) * y0;
          sm.rows[i][d + 1] += sm.k.at(i, d + 1) * y1;
        }
      });
    };
    add_side(b.row_side, false);
    add_side(b.column_side, true);
  }
  // dk = grad_channel_kernel's fp32 part + this part.
  wy_finish_dk(dk, bp, ch.t0, hv, c, w, c0);
  store_partials(beta_part, sm.beta_part[group], r0);
  __syncthreads();  // (I) dβ's partials and the row terms complete
  // dβ: each group's quad partials summed in lane order, the groups in order.
  arch::cta_for(kMmaChunk, [&](int i) {
    if (i >= c) return;
    float sum = 0.0f;
    for (int h = 0; h < kGradGroups; ++h) {
      const float(&b4)[4] = sm.beta_part[h][i];
      sum += ((b4[0] + b4[1]) + b4[2]) + b4[3];
    }
    bp.dbeta[(ch.t0 + i) * p.v_heads + hv] = __float2bfloat16_rn(sum);
  });
  // dg_t,d += Σ_{s ≥ t} row term: the suffix sums in place, thread d, rows from the last; then
  // every thread adds its pairs to dg (grad_channel_kernel wrote it), all its loads issued before
  // the first add. One thread's chain of 64 global read-modify-writes, each waiting for its load,
  // was a third of this kernel's time.
  arch::cta_for(kMmaDim, [&](int d) {
    float running = 0.0f;
    for (int t = c - 1; t >= 0; --t) {
      running += sm.rows[t][d];
      sm.rows[t][d] = running;
    }
  });
  __syncthreads();  // (J) the suffix sums complete
  constexpr int kPairsPerRow = kMmaDim / 2;
  constexpr int kPairsPerThread = kMmaChunk * kPairsPerRow / kThreads;
  static_assert(kMmaChunk * kPairsPerRow % kThreads == 0, "dg's pairs: the same count per thread");
  arch::cta_for(kThreads, [&](int tid) {
    float prior[kPairsPerThread][2];
    KCV_GLR_UNROLL
    for (int k = 0; k < kPairsPerThread; ++k) {
      const int idx = tid + k * kThreads;
      const int t = idx / kPairsPerRow;
      const int d = 2 * (idx % kPairsPerRow);
      prior[k][0] = prior[k][1] = 0.0f;
      if (t < c)
        arch::load_f32x2(bp.dg + ((ch.t0 + t) * p.v_heads + hv) * kMmaDim + d, prior[k][0],
                         prior[k][1]);
    }
    KCV_GLR_UNROLL
    for (int k = 0; k < kPairsPerThread; ++k) {
      const int idx = tid + k * kThreads;
      const int t = idx / kPairsPerRow;
      const int d = 2 * (idx % kPairsPerRow);
      if (t < c)
        arch::store_f32x2(bp.dg + ((ch.t0 + t) * p.v_heads + hv) * kMmaDim + d,
                          prior[k][0] + sm.rows[t][d], prior[k][1] + sm.rows[t][d + 1]);
    }
  });
}

}  // namespace kcv::glr::dev
