// File: glr/dev/chunked_mma_forward.cuh
// The two kernels of the tensor-core GLR forward (chunked_mma_forward.hpp), written once over the
// gate kind and the delta rule, and the launch sequence over a launch policy (the CUDA one is in
// chunked_mma_forward.cu, the host emulation's in host_runner.cpp).
//
//   versions (one line each; the reference beside it: the fp64 chunked reference and the CUDA-core
//   stage kernels glr/kernels/stage_{prepare,state,output}.cuh, which compute the same algebra)
//   1  mma.sync m16n8k16 + ldmatrix + cp.async double buffering; prepare (F1–F3) chunk-parallel,
//      state pass fused with the output (F4 + F5); T by fp32 block substitution on CUDA cores.
//   2  T's substitution with one lane per column of a 16×16 block in registers, 4 barriers
//      instead of 23 (glr/tiles/tril_inverse_columns.cuh; the same sums, the same bits).
//   3  prepare with the delta rule at 68.75 KB and 159 registers, three CTAs per multiprocessor
//      (111 KB, 188 registers, two before): V arrives in K's place once X is formed, bf16(T) goes
//      over L, the inverse's carried sums into L's blocks above the diagonal; g and β loaded
//      together, each Γ_ij once for A^qk and L, X, Ṽ and bf16(T) in 16-byte pieces. Without the
//      delta rule 35 KB (six CTAs). The same bits.
//   4  prepare with the delta rule at 51.75 KB and 123 registers, four CTAs per multiprocessor:
//      three 17 KB tiles (Q → X; K → T → V → Ṽ; L → bf16(T)), V loaded once bf16(T) is formed,
//      while W is formed; W and U by columns (warp w: columns 32w.. of every row block, 20
//      (k-step, n-pair) products per warp where the split by rows gave warp w 8(w + 1)). The same
//      bits.
//   5  the per-channel gate (GLA; KDA with the delta rule): prepare_channel's anchored Gram
//      blocks and Q̄, K̄ in the workspace; the state pass reads them with unit row factors and
//      decays the state's rows by e_last,d.
//   6  the state pass in column groups of the value tile (kStateGroups: 8 warps; 16 were
//      measured slower); the same sums in the same order.
//   7  a per-channel gate's G loaded in 16-byte pieces, each thread's loads issued before its
//      stores (load_channel_gate), where each load was waited for in turn; the diagonal blocks'
//      per-pair sums read eight channels per load of each operand (KDA's G rows 132 floats for
//      16-byte loads). The same sums in the same order.
//   8  the per-pair sums' pairs i = j without an exponential (Γ_ii = G_i − G_i + 1, the bits of
//      e^0 for a finite G and NaN otherwise), two a thread beside the pairs j < i one a thread:
//      512 items, one round of KDA's 512 threads and two of GLA's 256, where 544 pairs took two
//      and three. The same sums in the same order.
//   9  every exponential (decay factors, e, r, e_last) as arch::exp_approx: ex2.approx of
//      fl(x·log2 e), two instructions where expf took eight (glr/arch/exp_approx.cuh: its error
//      is at most the fp32 difference's once more, and the host emulation carries the product's
//      rounding). Not the same bits: each factor differs from expf's by a few ulp.
//   10 KDA's prepare kernel: L's off-diagonal rows by warps 4..7 while warps 0..3 form A^qk's,
//      where warps 0..3 formed both in turn (12 of 16 warps idle). The same bits.
//   11 the state pass's copies of the next chunk with compile-time trip counts
//      (copy_rows_async_fixed, copy_floats_async_fixed), where copy_rows_async's rolled loops
//      held a quarter of the kernel's warp samples (GDN at B1·T8192·H32, bench/glr/
//      ncu_phases.py); the prepare kernels' copies of Q, K and V the same way. The same bits.
//   12 the state pass's copies issued by two copy warps of their own (kStateCopyWarps) beside the
//      eight compute warps, which meet them at each step's first barrier and synchronise among
//      themselves at a named barrier: an LDGSTS reads its address registers late, so the compute
//      warps that issued the copies stalled on the next write of one ("long scoreboard", 20 % of
//      GDN's state_output samples on one H200 at `920a8c0`, docs/glr/ncu_phases_gdn.md); o's
//      stores through store_rows (backward version 23). The same bits.
//   13 at value tile 32 the state pass's Q·bf16(H), W·bf16(H) and Kᵀ·bf16(r ⊙ Δ) as wgmma
//      products of each column group's warpgroup over 128-byte swizzled tiles (kWg,
//      MmaForwardParams::state_wgmma; docs/decisions/0010), and four copy warps: the two of
//      version 12 held the compute warps at the step's barrier (30.8 % of GDN's state_output
//      samples on one H100 at `5a14302`). The same bits (on that H100 too, for the wgmma pass).
//
// 1. prepare_kernel, one CTA (4 warps) per (chunk slot, value head):
//      G = chunk-local cumsum of g (fp32, serial: the reference's order),
//      e = exp(G), r = exp(G_last − G)
//      S = K Kᵀ, P = Q Kᵀ on tensor cores (bf16 inputs, exact products); warp w
//        computes rows 16w.. and only the column pairs at or left of the diagonal
//      A^qk = P ⊙ Γ (incl.) → a (bf16);  L = diag(β)(S ⊙ Γ) strict (fp32, shared)
//      T = (I + L)⁻¹ on CUDA cores in fp32, 16×16 block substitution
//        (glr/tiles/tril_inverse_columns.cuh, the reference's algorithm and order)
//      W = bf16(T)·bf16(diag(β)(K ⊙ E)), U = bf16(T)·bf16(diag(β) V) on tensor
//        cores → w, u (bf16)
//    Without the delta rule only G's factors and A^qk.
// 2. state_output_kernel, one CTA (8 compute warps, 2 copy warps) per (sequence, value head, kBV
//    value columns), serial over the sequence's chunks; the next chunk's operands arrive by
//    cp.async, issued by the copy warps, while this one is computed. The fp32 state H (128 × kBV)
//    lives in registers, warp w + 4h holding rows 32w..32w+31 and the column group h
//    (kStateGroups); its bf16 copy in shared memory is the B operand of the products that read it:
//      Δ = U − W·bf16(H)                        (Δ = V without the delta rule)
//      O = scale·(diag(e)(Q·bf16(H)) + A^qk·bf16(Δ))            → o (bf16)
//      H ← e_last·H + Kᵀ·bf16(r ⊙ Δ)
//    Where o is not written (the backward's recompute) only Δ and the state update: the
//    recurrence alone, which keeps bf16(H) (and bf16(Δ)) for the backward.
//    Every product accumulates into a zeroed fragment; Δ's subtraction and the state update are
//    fp32 on CUDA cores (Hopper's tensor-core accumulation is not IEEE round-to-nearest, and the
//    state is carried over 128 chunks).
// Precision (bf16 grade): the operands rounded are T, X, Ṽ (wy_w, wy_u), U (u_addend), W and H
// (state_w), H (output_inter), A^qk and Δ (output_intra), and r ⊙ Δ (state_update: fla's form,
// the same rounding as K̄ = K ⊙ r moved across the row factor r). Q and K are bf16 inputs, so the
// Grams and Q·H round nothing, and T is computed in fp32: fewer roundings than the grade declares.
// Deterministic: every element is written by one thread in a fixed order; no atomics.
#pragma once

#include <cstdint>
#include <type_traits>

#include "glr/arch/cp_async.cuh"
#include "glr/arch/exp_approx.cuh"
#include "glr/arch/lanes.cuh"
#include "glr/arch/mma_m16n8k16.cuh"
#include "glr/dev/chunked_mma_forward.hpp"
#include "glr/tiles/mma_tile.cuh"
#include "glr/tiles/sw128_tile.cuh"
#include "glr/tiles/tile.cuh"
#include "glr/tiles/tril_inverse_columns.cuh"
#include "kcv/glr/member.hpp"

namespace kcv::glr::dev {

using gpu::detail::AccTile;
using gpu::detail::AStore;
using gpu::detail::BStore;
using gpu::detail::copy_floats_async;
using gpu::detail::copy_floats_async_fixed;
using gpu::detail::copy_rows_async_fixed;
using gpu::detail::for_each_pair;
using gpu::detail::mma_acc;
using gpu::detail::mma_acc_triangular;
using gpu::detail::SmemBf16;
using gpu::detail::store_rows;
using gpu::detail::StoreBf16Pair;
using gpu::detail::Sw128Bf16;
using gpu::detail::Triangle;
using gpu::detail::wgmma_product;
using gpu::detail::zero;
using gpu::detail::zip;

// ------------------------------------------------------------------------------ where things are

__device__ __forceinline__ std::int64_t seq_begin(const MmaForwardParams& p, std::int64_t n) {
  return p.cu_seqlens != nullptr ? p.cu_seqlens[n] : n * p.seq_len;
}
__device__ __forceinline__ std::int64_t slot_base(const MmaForwardParams& p, std::int64_t n) {
  return seq_begin(p, n) / kMmaChunk + n;
}

/// The chunk that owns workspace slot `slot` (invalid for a slot no chunk uses).
struct ChunkRef {
  bool valid = false;
  bool last = false;     ///< the last chunk of its sequence
  std::int64_t seq = 0;  ///< its sequence
  std::int64_t t0 = 0;   ///< first token
  int rows = 0;          ///< valid rows, 1..64
};

__device__ __forceinline__ ChunkRef locate_slot(const MmaForwardParams& p, std::int64_t slot) {
  std::int64_t lo = 0;
  std::int64_t hi = p.sequences;  // slot_base(lo) <= slot < slot_base(hi) (hi = N: unbounded)
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (slot_base(p, mid) <= slot)
      lo = mid;
    else
      hi = mid;
  }
  ChunkRef c;
  c.t0 = seq_begin(p, lo) + (slot - slot_base(p, lo)) * kMmaChunk;
  const std::int64_t left = seq_begin(p, lo + 1) - c.t0;
  c.valid = left > 0;
  c.last = left <= kMmaChunk;
  c.seq = lo;
  c.rows = static_cast<int>(left < kMmaChunk ? left : kMmaChunk);
  return c;
}

__device__ __forceinline__ std::int64_t qk_row(const MmaForwardParams& p, std::int64_t t, int hv) {
  return (t * p.qk_heads + hv / p.group) * kMmaDim;
}
__device__ __forceinline__ std::int64_t v_row(const MmaForwardParams& p, std::int64_t t, int hv) {
  return (t * p.v_heads + hv) * kMmaDim;
}
/// First element of a slot's [64, width] block of a workspace tensor.
__device__ __forceinline__ std::int64_t slot_block(const MmaForwardParams& p, std::int64_t slot,
                                                   int hv, int width) {
  return (slot * p.v_heads + hv) * static_cast<std::int64_t>(kMmaChunk) * width;
}
/// First element of a slot's [128, 128] state block (MmaForwardParams::states).
__device__ __forceinline__ std::int64_t state_block(const MmaForwardParams& p, std::int64_t slot,
                                                    int hv) {
  return (slot * p.v_heads + hv) * static_cast<std::int64_t>(kMmaDim) * kMmaDim;
}
__device__ __forceinline__ std::int64_t user_state(const MmaForwardParams& p, std::int64_t n,
                                                   int hv, int d, int e) {
  const std::int64_t base = (n * p.v_heads + hv) * static_cast<std::int64_t>(kMmaDim) * kMmaDim;
  return p.state_kv ? base + d * kMmaDim + e : base + e * kMmaDim + d;
}

__device__ __forceinline__ float bf16_to_float(bf16 x) {
  return arch::bf16_bits_to_float(arch::bf16_bits(x));
}

/// g[i] ← g[0] + … + g[i] over a chunk's rows (shared memory, 16-byte aligned), by one thread in
/// row order, the reference's order, so every kernel forms the same G bits: it takes the rows
/// into registers in 16-byte loads and stores the sums the same way, so that its chain is the 64
/// dependent adds alone (the whole CTA waits for it at the barrier). Barrier at the end.
__device__ __forceinline__ void cumulative_sum_rows(float* g) {
  arch::cta_for(1, [&](int) {
    float x[kMmaChunk];
    KCV_GLR_UNROLL
    for (int i = 0; i < kMmaChunk; i += 4) arch::load_f32x4(g + i, x + i);
    float running = 0.0f;
    KCV_GLR_UNROLL
    for (int i = 0; i < kMmaChunk; ++i) {
      running += x[i];
      x[i] = running;
    }
    KCV_GLR_UNROLL
    for (int i = 0; i < kMmaChunk; i += 4) arch::store_f32x4(g + i, x + i);
  });
  __syncthreads();
}

/// The chunk's cumulative log-gate G_i = g_0 + … + g_i into `out[kMmaChunk]` (shared memory,
/// 16-byte aligned), g = 0 past the chunk's c rows, so G stays at G_last there: the 64 gates
/// loaded by 64 threads at once, then cumulative_sum_rows (one thread loading them from global
/// memory in turn would wait for each). With `beta` (the delta rule's prepare), the same threads
/// load β (0 past c) into it beside the gates, so the two loads wait together. Barrier at the
/// end.
__device__ __forceinline__ void chunk_cumulative_gate(float* out, const MmaForwardParams& p,
                                                      std::int64_t t0, int hv, int c,
                                                      float* beta = nullptr) {
  arch::cta_for(kMmaChunk, [&](int i) {
    const float g = i < c ? p.g[(t0 + i) * p.v_heads + hv] : 0.0f;
    if (beta != nullptr) beta[i] = i < c ? bf16_to_float(p.beta[(t0 + i) * p.v_heads + hv]) : 0.0f;
    out[i] = g;
  });
  __syncthreads();
  cumulative_sum_rows(out);
}

/// A per-channel gate's G, the chunk-local cumulative log-decay of each key channel, in two steps
/// with a CTA barrier between (the caller's): load_channel_gate puts the chunk's gates in g[i][d],
/// every thread at once, 0 past the end (so that G stays at G_last there); sum_channel_gate has
/// thread d sum channel d from row 0 in row order and then call at_end(d, G_last,d). The prepare
/// kernel's G and the backward's are these same sums. A thread's gates come in 16-byte loads, all
/// issued before the first store (one load waited for at a time was 16 round trips to global
/// memory); rows whose length is a multiple of 4 floats take them in 16-byte stores. @pre p.g
/// 16-byte aligned (mma_forward_params checks it).
template <int kThreads, typename GateRows>
__device__ __forceinline__ void load_channel_gate(GateRows& g, const MmaForwardParams& p,
                                                  std::int64_t t0, int hv, int c) {
  constexpr int kQuadsPerRow = kMmaDim / 4;
  constexpr int kQuads = kMmaChunk * kQuadsPerRow;
  static_assert(kQuads % kThreads == 0, "load_channel_gate: the same number of loads per thread");
  constexpr int kPerThread = kQuads / kThreads;
  constexpr bool kRowsAligned = sizeof(g[0]) % 16 == 0;
  arch::cta_for(kThreads, [&](int tid) {
    float x[kPerThread][4];
    KCV_GLR_UNROLL
    for (int k = 0; k < kPerThread; ++k) {
      const int idx = tid + k * kThreads;
      const int i = idx / kQuadsPerRow;
      const int d = 4 * (idx % kQuadsPerRow);
      x[k][0] = x[k][1] = x[k][2] = x[k][3] = 0.0f;
      if (i < c) arch::load_f32x4(p.g + ((t0 + i) * p.v_heads + hv) * kMmaDim + d, x[k]);
    }
    KCV_GLR_UNROLL
    for (int k = 0; k < kPerThread; ++k) {
      const int idx = tid + k * kThreads;
      const int i = idx / kQuadsPerRow;
      const int d = 4 * (idx % kQuadsPerRow);
      if constexpr (kRowsAligned) {
        arch::store_f32x4(&g[i][d], x[k]);
      } else {
        for (int e = 0; e < 4; ++e) g[i][d + e] = x[k][e];
      }
    }
  });
}

template <typename GateRows, typename F>
__device__ __forceinline__ void sum_channel_gate(GateRows& g, F&& at_end) {
  arch::cta_for(kMmaDim, [&](int d) {
    float running = 0.0f;
    for (int i = 0; i < kMmaChunk; ++i) {
      running += g[i][d];
      g[i][d] = running;
    }
    at_end(d, running);
  });
}

/// G_i,d..d+7 of one row into x (16-byte loads where the rows' length allows them).
template <typename GateRows>
__device__ __forceinline__ void load_gate8(const GateRows& g, int i, int d, float (&x)[8]) {
  if constexpr (sizeof(g[0]) % 16 == 0) {
    arch::load_f32x4(&g[i][d], x);
    arch::load_f32x4(&g[i][d + 4], x + 4);
  } else {
    for (int e = 0; e < 8; ++e) x[e] = g[i][d + e];
  }
}

// ------------------------------------------------------------------------------ 1. prepare

/// prepare_kernel's shared memory without the delta rule: Q and K for the Gram product.
struct PrepareStorageGram {
  SmemBf16<kMmaChunk, kMmaDim> q, k;
  float g[kMmaChunk];     ///< G
  float e[kMmaChunk];     ///< exp(G), 0 past the end
  float beta[kMmaChunk];  ///< 0
};

/// With the delta rule: three 17 KB tiles, each reused as the work moves on, 51.75 KB, four CTAs
/// per multiprocessor.
struct PrepareStorageDelta {
  SmemBf16<kMmaChunk, kMmaDim> q;  ///< Q, then X = bf16(β (K ⊙ E))
  union {
    SmemBf16<kMmaChunk, kMmaDim> k;  ///< K; V (loaded once bf16(T) is formed), then Ṽ = bf16(β V)
    gpu::detail::RowAlignedTile<kMmaChunk, kMmaChunk> t;  ///< between them fp32 T
  };
  union {
    gpu::detail::RowAlignedTile<kMmaChunk, kMmaChunk> l;  ///< fp32 L (above it: the inverse's)
    SmemBf16<kMmaChunk, kMmaChunk> tb;                    ///< then bf16(T)
  };
  float g[kMmaChunk];     ///< G
  float e[kMmaChunk];     ///< exp(G), 0 past the end
  float beta[kMmaChunk];  ///< β, 0 past the end
};
static_assert(sizeof(PrepareStorageDelta) <= 56 * 1024,
              "PrepareStorageDelta: four CTAs per multiprocessor need at most 56 KB each");

/// The anchored factors of a per-channel gate's Gram products' off-diagonal 16×16 blocks
/// (precision-contract.md §1, `gram_qk`, `gram_kk`): the A operand Q_i ⊙ e^{G_i − G_n} for every
/// row i, n the first row of i's 16-row block (K_i ⊙ e^{G_i − G_n} likewise under the delta rule),
/// and for each row block b = 1..3 the B operand K_j ⊙ e^{G_16b − G_j} of the rows j < 16b it
/// reads, at rows 8b(b − 1)..
struct ChannelGram {
  SmemBf16<kMmaChunk, kMmaDim> q_anchored;
  SmemBf16<96, kMmaDim> k_anchored;  ///< 16 + 32 + 48 rows for row blocks 1, 2, 3
};
struct ChannelGramDelta : ChannelGram {
  SmemBf16<kMmaChunk, kMmaDim> k_rows_anchored;  ///< K_i ⊙ e^{G_i − G_n}, the A operand of L
};
/// The delta rule's WY operands once the Gram products are done (in their place).
struct ChannelWy {
  SmemBf16<kMmaChunk, kMmaDim> x;  ///< X = bf16(β (K ⊙ E))
  SmemBf16<kMmaChunk, kMmaDim> v;  ///< V, then Ṽ = bf16(β V)
};

/// G per key channel in prepare_channel, [row][channel]: the diagonal blocks' per-pair sums have a
/// warp's threads read G_jd of up to 16 rows j at the same channels, which 128-float rows put on
/// one bank (a 16-way conflict). GLA's rows are 129 floats (16 banks for 16 rows, scalar loads;
/// two CTAs per multiprocessor leave no room for more), KDA's 132 (eight channels in two 16-byte
/// loads, rows j and j + 8 the only ones that share banks).
template <bool kDelta>
using PrepareGate = float[kMmaChunk][kMmaDim + (kDelta ? 4 : 1)];

/// prepare_kernel's shared memory for a per-channel gate: Q and K, the anchored factors, G per
/// channel and the diagonal blocks' per-pair sums; with the delta rule (KDA) also L, T and bf16(T)
/// and, over the anchored factors, X and V. 112.75 KB (GLA), 177.75 KB (KDA).
template <bool kDelta>
struct PrepareStorageChannel {
  SmemBf16<kMmaChunk, kMmaDim> q, k;
  ChannelGram gram;
  PrepareGate<false> g;       ///< G, per channel
  float diag[kMmaChunk][16];  ///< A^qk_ij, j on i's diagonal block (column j − 16⌊i/16⌋)
};
template <>
struct PrepareStorageChannel<true> {
  SmemBf16<kMmaChunk, kMmaDim> q, k;
  union {
    ChannelGramDelta gram;
    ChannelWy wy;
  };
  alignas(16) PrepareGate<true> g;  ///< G, per channel (rows in 16-byte loads)
  float diag[kMmaChunk][16];
  float diag_kk[kMmaChunk][16];  ///< (K Kᵀ ⊙ Γ)_ij, j < i on i's diagonal block
  gpu::detail::RowAlignedTile<kMmaChunk, kMmaChunk> l;  ///< fp32 L (above it: the inverse's)
  gpu::detail::RowAlignedTile<kMmaChunk, kMmaChunk> t;  ///< fp32 T
  SmemBf16<kMmaChunk, kMmaChunk> tb;                    ///< bf16(T)
  float beta[kMmaChunk];                                ///< β, 0 past the end
};
static_assert(sizeof(PrepareStorageChannel<false>) <= 113 * 1024,
              "PrepareStorageChannel: two CTAs per multiprocessor need at most 113 KB each");
static_assert(sizeof(PrepareStorageChannel<true>) <= 227 * 1024,
              "PrepareStorageChannel<true>: shared storage over the sm_90 limit");

/// First row of row block b's anchored keys in ChannelGram::k_anchored.
__device__ __forceinline__ constexpr int anchored_keys_row(int b) { return 8 * b * (b - 1); }

/// ChannelGram::k_anchored from K and G (per channel), CTA-wide: row block b's B operand
/// K_j ⊙ e^{G_16b − G_j} (j < 16b) at rows anchored_keys_row(b).., 8 elements per 16-byte load and
/// store. Read by the forward's A^qk (and L) and by the backward's dq. `g`: G per channel,
/// g[i][d] (the prepare kernel's padded rows or the backward's).
template <typename GateRows>
__device__ __forceinline__ void form_anchored_keys(ChannelGram& gram,
                                                   const SmemBf16<kMmaChunk, kMmaDim>& k,
                                                   const GateRows& g) {
  constexpr int kPieces = kMmaDim / 8;
  arch::cta_for(96 * kPieces, [&](int idx) {
    const int r = idx / kPieces;
    const int d = 8 * (idx % kPieces);
    const int b = r < anchored_keys_row(2) ? 1 : (r < anchored_keys_row(3) ? 2 : 3);
    const int j = r - anchored_keys_row(b);
    std::uint32_t kw[4], ka[4];
    arch::load_u32x4(k.ptr(j, d), kw);
    for (int h = 0; h < 4; ++h) {
      float y[2];
      for (int s = 0; s < 2; ++s) {
        const int ch_d = d + 2 * h + s;
        y[s] = arch::unpack_bf16(kw[h], s) * arch::exp_approx(g[16 * b][ch_d] - g[j][ch_d]);
      }
      ka[h] = arch::pack_bf16x2(y[0], y[1]);
    }
    arch::store_u32x4(gram.k_anchored.ptr(r, d), ka);
  });
}

template <GateKind kGate, bool kDelta>
using PrepareStorage =
    std::conditional_t<kGate == GateKind::kChannel, PrepareStorageChannel<kDelta>,
                       std::conditional_t<kDelta, PrepareStorageDelta, PrepareStorageGram>>;

/// bf16(T) into `tb` and, where the backward keeps it (`t_inv`), the workspace, 8 elements per
/// thread step.
__device__ __forceinline__ void store_t_bf16(
    const gpu::detail::RowAlignedTile<kMmaChunk, kMmaChunk>& t, SmemBf16<kMmaChunk, kMmaChunk>& tb,
    const MmaForwardParams& p, std::int64_t slot, int hv) {
  bf16* t_out = p.t_inv != nullptr ? p.t_inv + slot_block(p, slot, hv, kMmaChunk) : nullptr;
  arch::cta_for(kMmaChunk * kMmaChunk / 8, [&](int idx) {
    const int i = idx / (kMmaChunk / 8);
    const int j = 8 * (idx % (kMmaChunk / 8));
    float x[8];
    arch::load_f32x4(t.ptr(i, j), x);
    arch::load_f32x4(t.ptr(i, j + 4), x + 4);
    std::uint32_t b[4];
    for (int h = 0; h < 4; ++h) b[h] = arch::pack_bf16x2(x[2 * h], x[2 * h + 1]);
    arch::store_u32x4(tb.ptr(i, j), b);
    if (t_out != nullptr) arch::store_u32x4(t_out + i * kMmaChunk + j, b);
  });
}

/// Row i of `x` times factor[i], rounded to bf16 in place (Ṽ = bf16(β V)), 8 elements per 16-byte
/// load and store.
__device__ __forceinline__ void scale_rows_bf16(SmemBf16<kMmaChunk, kMmaDim>& x,
                                                const float* factor) {
  constexpr int kPieces = kMmaDim / 8;
  arch::cta_for(kMmaChunk * kPieces, [&](int idx) {
    const int i = idx / kPieces;
    const int d = 8 * (idx % kPieces);
    std::uint32_t v[4];
    arch::load_u32x4(x.ptr(i, d), v);
    for (std::uint32_t& pair : v)
      pair = arch::pack_bf16x2(factor[i] * arch::unpack_bf16(pair, 0),
                               factor[i] * arch::unpack_bf16(pair, 1));
    arch::store_u32x4(x.ptr(i, d), v);
  });
}

/// W = bf16(T)·X into `out` (U = bf16(T)·Ṽ likewise) by kWarps warps: the 16 blocks (row block
/// rb, columns 32cb..) as jobs rb·4 + cb, warp w the jobs w, w + kWarps, … (with 4 warps, warp w
/// every row block of columns 32w..), k-steps 0..rb (T is lower triangular).
template <int kWarps = kMmaThreads / arch::kWarpSize>
__device__ __forceinline__ void wy_product(const SmemBf16<kMmaChunk, kMmaChunk>& tb,
                                           const SmemBf16<kMmaChunk, kMmaDim>& x, bf16* out) {
  static_assert(16 % kWarps == 0, "wy_product: the 16 blocks shared evenly");
  for (int job = arch::warp_id(); job < 16; job += kWarps) {
    const int rb = job / 4;
    const int c0 = 32 * (job % 4);
    AccTile<16, 32> acc;
    zero(acc);
    mma_acc_triangular<Triangle::kLower, AStore::kRowMajor, BStore::kKMajor>(acc, tb, 16 * rb, x,
                                                                             c0, 0, rb + 1);
    for_each_pair(acc, [&](int il, int d, float& x0, float& x1) {
      arch::store_u32(out + (16 * rb + il) * kMmaDim + c0 + d, arch::pack_bf16x2(x0, x1));
    });
  }
}

/// prepare_kernel's threads for a per-channel gate, 16 warps on each multiprocessor for the
/// CUDA-core work of the anchored factors and the diagonal blocks' per-pair sums (the products
/// stay with warps 0–3, one per row block; W and U with all): 8 warps for GLA's (two CTAs per
/// multiprocessor), 16 for KDA's (one, at 177.75 KB); the other gates' prepare kernels have 4.
template <bool kDelta>
inline constexpr int kPrepareChannelThreads = kDelta ? 4 * kMmaThreads : 2 * kMmaThreads;

/// The pairs (row, col), col ≤ row, of a 16×16 block, numbered row by row: t = row(row + 1)/2 +
/// col.
inline constexpr int kLowerPairs16 = 16 * 17 / 2;
struct LowerPair {
  int row, col;
};
__device__ __forceinline__ LowerPair lower_pair16(int t) {
  int row = static_cast<int>((sqrtf(8.0f * static_cast<float>(t) + 1.0f) - 1.0f) * 0.5f);
  if ((row + 1) * (row + 2) / 2 <= t) ++row;  // guard against sqrtf's rounding either way
  if (row * (row + 1) / 2 > t) --row;
  return {row, t - row * (row + 1) / 2};
}

/// prepare_kernel for a per-channel gate (GLA; KDA with the delta rule): G per channel; Q̄ = Q ⊙ E,
/// K̄ = K ⊙ R (bf16) and e_last (in `factors`) to the workspace for the state pass; A^qk (and
/// K Kᵀ ⊙ Γ for L) with the off-diagonal blocks on tensor cores from the anchored factors (both at
/// most 1 for a decaying gate: the anchor lies between i and j) and the diagonal blocks per pair
/// in fp32 on CUDA cores, Σ_d a_id b_jd e^{G_id − G_jd} in channel order (the reference's form,
/// glr/reference/decayed_gram.cpp). With the delta rule then L = β ⊙ (K Kᵀ ⊙ Γ) strict,
/// T = (I + L)⁻¹, X = bf16(β (K ⊙ E)), W = bf16(T) X and U = bf16(T) bf16(β V) as the scalar
/// gate's prepare forms them.
template <bool kDelta>
__device__ __forceinline__ void prepare_channel(PrepareStorageChannel<kDelta>& sm,
                                                const MmaForwardParams& p, const ChunkRef& ch,
                                                std::int64_t slot, int hv) {
  const int c = ch.rows;
  const std::int64_t qk_stride = static_cast<std::int64_t>(p.qk_heads) * kMmaDim;
  constexpr int kT = kPrepareChannelThreads<kDelta>;
  copy_rows_async_fixed<kT>(sm.q, p.q + qk_row(p, ch.t0, hv), qk_stride, c);
  copy_rows_async_fixed<kT>(sm.k, p.k + qk_row(p, ch.t0, hv), qk_stride, c);
  arch::cp_async_commit();

  // G (e_last,d beside it).
  load_channel_gate<kPrepareChannelThreads<kDelta>>(sm.g, p, ch.t0, hv, c);
  if constexpr (kDelta)
    arch::cta_for(kMmaChunk, [&](int i) {
      sm.beta[i] = i < c ? bf16_to_float(p.beta[(ch.t0 + i) * p.v_heads + hv]) : 0.0f;
    });
  __syncthreads();
  float* e_last = p.factors + slot_block(p, slot, hv, 2);
  static_assert(2 * kMmaChunk == kMmaDim, "factors: e_last of every channel in the same block");
  sum_channel_gate(sm.g, [&](int d, float g_last) { e_last[d] = arch::exp_approx(g_last); });
  arch::cp_async_wait<0>();
  __syncthreads();  // Q, K have landed; G is complete

  // Q̄, K̄ to the workspace and the rows' anchored factors, 8 elements per 16-byte load and store.
  constexpr int kPieces = kMmaDim / 8;
  bf16* q_bar = p.qbar + slot_block(p, slot, hv, kMmaDim);
  bf16* k_bar = p.kbar + slot_block(p, slot, hv, kMmaDim);
  arch::cta_for(kMmaChunk * kPieces, [&](int idx) {
    const int i = idx / kPieces;
    const int d = 8 * (idx % kPieces);
    const int n = i & ~15;
    std::uint32_t q[4], k[4], qb[4], kb[4], qa[4], ka[4];
    arch::load_u32x4(sm.q.ptr(i, d), q);
    arch::load_u32x4(sm.k.ptr(i, d), k);
    for (int h = 0; h < 4; ++h) {
      float x[2], y[2], z[2], u[2];
      for (int s = 0; s < 2; ++s) {
        const int ch_d = d + 2 * h + s;
        const float gi = sm.g[i][ch_d];
        const float to_anchor = arch::exp_approx(gi - sm.g[n][ch_d]);
        x[s] = arch::unpack_bf16(q[h], s) * arch::exp_approx(gi);
        y[s] = arch::unpack_bf16(k[h], s) * arch::exp_approx(sm.g[kMmaChunk - 1][ch_d] - gi);
        z[s] = arch::unpack_bf16(q[h], s) * to_anchor;
        u[s] = arch::unpack_bf16(k[h], s) * to_anchor;
      }
      qb[h] = arch::pack_bf16x2(x[0], x[1]);
      kb[h] = arch::pack_bf16x2(y[0], y[1]);
      qa[h] = arch::pack_bf16x2(z[0], z[1]);
      ka[h] = arch::pack_bf16x2(u[0], u[1]);
    }
    arch::store_u32x4(q_bar + i * kMmaDim + d, qb);
    arch::store_u32x4(k_bar + i * kMmaDim + d, kb);
    arch::store_u32x4(sm.gram.q_anchored.ptr(i, d), qa);
    if constexpr (kDelta) arch::store_u32x4(sm.gram.k_rows_anchored.ptr(i, d), ka);
  });
  form_anchored_keys(sm.gram, sm.k, sm.g);
  // The diagonal blocks, per pair j ≤ i only (the entries above the diagonal are never read), so
  // that no thread of the loop holds an empty pair: the 480 pairs j < i one a thread, then the
  // 64 pairs i = j two a thread (512 items: one round of KDA's 512 threads, two of GLA's 256,
  // where 544 pairs one a thread took two and three). A pair i = j takes Γ_ii = G_i − G_i + 1, the
  // exact e^{G_i − G_i} (1 for a finite G, NaN otherwise; exp_approx(0) is 1 as well) without an
  // exponential, so its thread does two in about the time of one pair j < i.
  constexpr int kStrictPairs16 = 16 * 15 / 2;
  constexpr int kStrictPairs = (kMmaChunk / 16) * kStrictPairs16;
  const auto pair_sum = [&]<bool kSame>(int i, int j, int col) {  // kSame: i = j
    float acc = 0.0f, acc_kk = 0.0f;
    if (i < c)
      for (int d = 0; d < kMmaDim; d += 8) {  // eight channels per load of each operand
        std::uint32_t qi[4], ki[4], kj[4];
        float gi[8], gj[8];
        arch::load_u32x4(sm.q.ptr(i, d), qi);
        arch::load_u32x4(sm.k.ptr(j, d), kj);
        if constexpr (kDelta && !kSame) arch::load_u32x4(sm.k.ptr(i, d), ki);
        load_gate8(sm.g, i, d, gi);
        load_gate8(sm.g, j, d, gj);
        KCV_GLR_UNROLL
        for (int e = 0; e < 8; ++e) {
          const float decay = kSame ? gi[e] - gj[e] + 1.0f : arch::exp_approx(gi[e] - gj[e]);
          const float k_j = arch::unpack_bf16(kj[e / 2], e % 2);
          acc += arch::unpack_bf16(qi[e / 2], e % 2) * decay * k_j;
          if constexpr (kDelta && !kSame)
            acc_kk += arch::unpack_bf16(ki[e / 2], e % 2) * decay * k_j;
        }
      }
    sm.diag[i][col] = acc;
    if constexpr (kDelta) sm.diag_kk[i][col] = acc_kk;
  };
  static_assert(kStrictPairs + kMmaChunk / 2 == 512, "the pairs' items: 512");
  arch::cta_for(kStrictPairs + kMmaChunk / 2, [&](int idx) {
    if (idx < kStrictPairs) {  // pair t of lower_pair16 is (row + 1, col)
      const LowerPair lp = lower_pair16(idx % kStrictPairs16);
      const int n = 16 * (idx / kStrictPairs16);
      pair_sum.template operator()<false>(n + lp.row + 1, n + lp.col, lp.col);
    } else {
      const int i = 2 * (idx - kStrictPairs);
      pair_sum.template operator()<true>(i, i, i % 16);
      pair_sum.template operator()<true>(i + 1, i + 1, (i + 1) % 16);
    }
  });
  __syncthreads();
  // With the delta rule, P's diagonal blocks to the workspace for wy_channel_kernel's dβ (the
  // training step's kept pieces), the pairs j < i and zeros for the others, four per store.
  if constexpr (kDelta)
    if (p.gram_diag != nullptr) {
      float* out = p.gram_diag + slot_block(p, slot, hv, 16);
      arch::cta_for(kMmaChunk * 16 / 4, [&](int idx) {
        const int i = idx / 4;
        const int j0 = 4 * (idx % 4);
        float x[4];
        for (int e = 0; e < 4; ++e) x[e] = j0 + e < i % 16 ? sm.diag_kk[i][j0 + e] : 0.0f;
        arch::store_f32x4(out + i * 16 + j0, x);
      });
    }

  // The off-diagonal blocks, warp w: rows 16w..16w+15, column blocks 0..w−1, from the factors
  // anchored at row 16w; then the row's diagonal block and zeros above it (the warps past the
  // fourth have no rows of A^qk; with the delta rule warps 4..7 form L's rows at the same time).
  const int w = arch::warp_id();
  const int r0 = 16 * w;
  if (w < kMmaChunk / 16) {
    AccTile<16, kMmaChunk> qk;
    zero(qk);
    if (w > 0)
      mma_acc<AStore::kRowMajor, BStore::kNMajor>(qk, sm.gram.q_anchored, r0, sm.gram.k_anchored,
                                                  anchored_keys_row(w), 0, kMmaDim / 16, w);
    bf16* a_out = p.a + slot_block(p, slot, hv, kMmaChunk);
    for_each_pair(qk, [&](int il, int j, float& x0, float& x1) {
      const int i = r0 + il;
      const auto at = [&](int jj, float x) {
        if (i >= c || jj > i) return 0.0f;
        return jj < r0 ? x : sm.diag[i][jj - r0];
      };
      arch::store_u32(a_out + i * kMmaChunk + j, arch::pack_bf16x2(at(j, x0), at(j + 1, x1)));
    });
  }
  if constexpr (kDelta) {
    static_assert(kPrepareChannelThreads<kDelta> >= 2 * kMmaChunk / 16 * arch::kWarpSize,
                  "prepare_channel: L's rows need warps 4..7");
    const int wl = w - kMmaChunk / 16;  // L's row block
    const int l0 = 16 * wl;
    if (wl >= 0 && wl < kMmaChunk / 16) {
      AccTile<16, kMmaChunk> kk;
      zero(kk);
      if (wl > 0)
        mma_acc<AStore::kRowMajor, BStore::kNMajor>(kk, sm.gram.k_rows_anchored, l0,
                                                    sm.gram.k_anchored, anchored_keys_row(wl), 0,
                                                    kMmaDim / 16, wl);
      for_each_pair(kk, [&](int il, int j, float& x0, float& x1) {  // L = β ⊙ (K Kᵀ ⊙ Γ), strict
        const int i = l0 + il;
        const auto at = [&](int jj, float x) {
          if (i >= c || jj >= i) return 0.0f;
          return sm.beta[i] * (jj < l0 ? x : sm.diag_kk[i][jj - l0]);
        };
        sm.l(i, j) = at(j, x0);
        sm.l(i, j + 1) = at(j + 1, x1);
      });
    }
    __syncthreads();  // L complete; the anchored factors are no longer read: X and V take them

    const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;
    copy_rows_async_fixed<kT>(sm.wy.v, p.v + v_row(p, ch.t0, hv), v_stride, c);
    arch::cp_async_commit();
    arch::cta_for(kMmaChunk * kPieces, [&](int idx) {  // X = bf16(β (K ⊙ E))
      const int i = idx / kPieces;
      const int d = 8 * (idx % kPieces);
      std::uint32_t x[4];
      arch::load_u32x4(sm.k.ptr(i, d), x);
      for (int h = 0; h < 4; ++h) {
        const int ch_d = d + 2 * h;
        x[h] = arch::pack_bf16x2(
            sm.beta[i] * (arch::unpack_bf16(x[h], 0) * arch::exp_approx(sm.g[i][ch_d])),
            sm.beta[i] * (arch::unpack_bf16(x[h], 1) * arch::exp_approx(sm.g[i][ch_d + 1])));
      }
      arch::store_u32x4(sm.wy.x.ptr(i, d), x);
    });
    gpu::detail::invert_unit_lower_by_columns<kMmaChunk>(sm.l, sm.t);
    store_t_bf16(sm.t, sm.tb, p, slot, hv);
    arch::cp_async_wait<0>();
    __syncthreads();  // bf16(T), X complete; V has landed
    constexpr int kWarps = kPrepareChannelThreads<kDelta> / arch::kWarpSize;
    wy_product<kWarps>(sm.tb, sm.wy.x, p.w + slot_block(p, slot, hv, kMmaDim));
    scale_rows_bf16(sm.wy.v, sm.beta);  // Ṽ over V
    __syncthreads();
    wy_product<kWarps>(sm.tb, sm.wy.v, p.u + slot_block(p, slot, hv, kMmaDim));
  }
}

template <GateKind kGate, bool kDelta>
inline constexpr int kPrepareThreads =
    kGate == GateKind::kChannel ? kPrepareChannelThreads<kDelta> : kMmaThreads;

template <GateKind kGate, bool kDelta>
__global__ void __launch_bounds__(kPrepareThreads<kGate, kDelta>,
                                  kGate == GateKind::kChannel ? (kDelta ? 1 : 2) : (kDelta ? 4 : 1))
    prepare_kernel(MmaForwardParams p) {
  PrepareStorage<kGate, kDelta>& sm = arch::shared_storage<PrepareStorage<kGate, kDelta>>();
  const ChunkRef ch = locate_slot(p, blockIdx.x);
  if (!ch.valid) return;
  const std::int64_t slot = blockIdx.x;
  const int hv = static_cast<int>(blockIdx.y);
  if constexpr (kGate == GateKind::kChannel) {
    prepare_channel<kDelta>(sm, p, ch, slot, hv);
  } else {
    const int c = ch.rows;
    const std::int64_t qk_stride = static_cast<std::int64_t>(p.qk_heads) * kMmaDim;
    const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;

    copy_rows_async_fixed<kMmaThreads>(sm.q, p.q + qk_row(p, ch.t0, hv), qk_stride, c);
    copy_rows_async_fixed<kMmaThreads>(sm.k, p.k + qk_row(p, ch.t0, hv), qk_stride, c);
    arch::cp_async_commit();

    if constexpr (kGate == GateKind::kScalar) {
      chunk_cumulative_gate(sm.g, p, ch.t0, hv, c, kDelta ? sm.beta : nullptr);
    } else {
      arch::cta_for(kMmaChunk, [&](int i) { sm.g[i] = 0.0f; });
    }
    if constexpr (kGate != GateKind::kScalar || !kDelta) {
      arch::cta_for(kMmaChunk, [&](int i) {
        sm.beta[i] = kDelta && i < c ? bf16_to_float(p.beta[(ch.t0 + i) * p.v_heads + hv]) : 0.0f;
      });
    }
    __syncthreads();
    const auto decay = [&](int i, int j) {  // Γ_ij, i ≥ j both valid
      if constexpr (kGate == GateKind::kScalar) return arch::exp_approx(sm.g[i] - sm.g[j]);
      return 1.0f;
    };
    float* factors = p.factors + slot_block(p, slot, hv, 2);
    arch::cta_for(kMmaChunk, [&](int i) {
      const float e =
          i < c ? (kGate == GateKind::kScalar ? arch::exp_approx(sm.g[i]) : 1.0f) : 0.0f;
      sm.e[i] = e;
      factors[i] = e;
      factors[kMmaChunk + i] = i < c ? decay(c - 1, i) : 0.0f;
    });
    arch::cp_async_wait<0>();
    __syncthreads();

    // Gram products, warp w: rows 16w..16w+15, column pairs 0..w (the rest is above the diagonal).
    const int w = arch::warp_id();
    const int r0 = 16 * w;
    AccTile<16, kMmaChunk> qk;
    zero(qk);
    mma_acc<AStore::kRowMajor, BStore::kNMajor>(qk, sm.q, r0, sm.k, 0, 0, kMmaDim / 16, w + 1);
    bf16* a_out = p.a + slot_block(p, slot, hv, kMmaChunk);
    if constexpr (!kDelta) {
      for_each_pair(qk, [&](int il, int j, float& x0, float& x1) {
        const int i = r0 + il;
        const float a0 = j <= i && i < c ? x0 * decay(i, j) : 0.0f;
        const float a1 = j + 1 <= i && i < c ? x1 * decay(i, j + 1) : 0.0f;
        arch::store_u32(a_out + i * kMmaChunk + j, arch::pack_bf16x2(a0, a1));
      });
    } else {
      AccTile<16, kMmaChunk> kk;
      zero(kk);
      mma_acc<AStore::kRowMajor, BStore::kNMajor>(kk, sm.k, r0, sm.k, 0, 0, kMmaDim / 16, w + 1);
      // A^qk and L together: each Γ_ij once for both.
      for_each_pair(qk, kk, [&](int il, int j, float& x0, float& x1, float& y0, float& y1) {
        const int i = r0 + il;
        const float d0 = j <= i && i < c ? decay(i, j) : 0.0f;
        const float d1 = j + 1 <= i && i < c ? decay(i, j + 1) : 0.0f;
        const float a0 = j <= i && i < c ? x0 * d0 : 0.0f;
        const float a1 = j + 1 <= i && i < c ? x1 * d1 : 0.0f;
        arch::store_u32(a_out + i * kMmaChunk + j, arch::pack_bf16x2(a0, a1));
        sm.l(i, j) = j < i && i < c ? y0 * d0 * sm.beta[i] : 0.0f;
        sm.l(i, j + 1) = j + 1 < i && i < c ? y1 * d1 * sm.beta[i] : 0.0f;
      });
      __syncthreads();  // L complete; Q and K are no longer read as Gram operands

      constexpr int kPieces = kMmaDim / 8;               // 16-byte pieces of a row of Q, K, V
      arch::cta_for(kMmaChunk * kPieces, [&](int idx) {  // X over Q
        const int i = idx / kPieces;
        const int d = 8 * (idx % kPieces);
        std::uint32_t x[4];
        arch::load_u32x4(sm.k.ptr(i, d), x);
        for (std::uint32_t& pair : x)
          pair = arch::pack_bf16x2(sm.beta[i] * (arch::unpack_bf16(pair, 0) * sm.e[i]),
                                   sm.beta[i] * (arch::unpack_bf16(pair, 1) * sm.e[i]));
        arch::store_u32x4(sm.q.ptr(i, d), x);
      });
      __syncthreads();  // K is no longer read: T takes its place
      gpu::detail::invert_unit_lower_by_columns<kMmaChunk>(sm.l, sm.t);
      store_t_bf16(sm.t, sm.tb, p, slot, hv);  // over L
      __syncthreads();  // T is no longer read: V arrives in its place while W is formed
      copy_rows_async_fixed<kMmaThreads>(sm.k, p.v + v_row(p, ch.t0, hv), v_stride, c);
      arch::cp_async_commit();

      wy_product(sm.tb, sm.q, p.w + slot_block(p, slot, hv, kMmaDim));  // W = T X
      arch::cp_async_wait<0>();
      __syncthreads();                 // V has landed
      scale_rows_bf16(sm.k, sm.beta);  // Ṽ over V
      __syncthreads();
      wy_product(sm.tb, sm.k, p.u + slot_block(p, slot, hv, kMmaDim));  // U = T Ṽ
    }
  }
}

// ------------------------------------------------------------------------------ 2. state + output

/// A chunk-row tile (64 × 128) that the state pass reads as a product's A operand: mma.sync's
/// padded rows, or wgmma's swizzled panels (kWg).
template <bool kWg>
using StateATile =
    std::conditional_t<kWg, Sw128Bf16<kMmaChunk, kMmaDim>, SmemBf16<kMmaChunk, kMmaDim>>;

/// The operands of one chunk step, filled by cp.async one chunk ahead: K, U's columns (V's
/// without the delta rule) and the factors; with the delta rule W; with the output Q and A^qk.
template <int kBV, bool kWg>
struct StateOperands {
  StateATile<kWg> k;
  SmemBf16<kMmaChunk, kBV> u;  ///< U's columns (V's without the delta rule)
  float f[2][kMmaChunk];       ///< e, r
};
template <bool kWg>
struct DeltaOperands {
  StateATile<kWg> w;
};
template <bool kWg>
struct OutputOperands {
  StateATile<kWg> q;
  SmemBf16<kMmaChunk, kMmaChunk> a;
};
struct NoDeltaOperands {};
struct NoOutputOperands {};
template <int kBV, bool kDelta, bool kOutput, bool kWg>
struct StateStage : StateOperands<kBV, kWg>,
                    std::conditional_t<kDelta, DeltaOperands<kWg>, NoDeltaOperands>,
                    std::conditional_t<kOutput, OutputOperands<kWg>, NoOutputOperands> {};

template <int kBV, bool kOutput>
struct OutputDelta {
  SmemBf16<kMmaChunk, kBV> delta;  ///< bf16(Δ), the B operand of A^qk·Δ (mma.sync)
};
template <int kBV>
struct OutputDelta<kBV, false> {};

/// bf16(H) and bf16(r ⊙ Δ), the B operands of the products that read them: padded rows of kBV
/// columns for mma.sync, one swizzled panel of 64 for wgmma (kWg; kBV ≤ 64 of its columns used).
template <int kBV, bool kWg>
using StateHTile =
    std::conditional_t<kWg, Sw128Bf16<kMmaDim, arch::kSw128PanelCols>, SmemBf16<kMmaDim, kBV>>;
template <int kBV, bool kWg>
using StateDeltaRTile =
    std::conditional_t<kWg, Sw128Bf16<kMmaChunk, arch::kSw128PanelCols>, SmemBf16<kMmaChunk, kBV>>;

template <int kBV, bool kDelta, bool kOutput, bool kWg>
struct StateStorage : OutputDelta<kBV, kOutput> {
  StateStage<kBV, kDelta, kOutput, kWg> stage[2];
  StateHTile<kBV, kWg> h;             ///< bf16(H)
  StateDeltaRTile<kBV, kWg> delta_r;  ///< bf16(r ⊙ Δ)
};
static_assert(sizeof(StateOperands<32, false>) % 16 == 0 &&
                  sizeof(StateOperands<64, false>) % 16 == 0 &&
                  sizeof(DeltaOperands<false>) % 16 == 0 &&
                  sizeof(OutputOperands<false>) % 16 == 0 &&
                  sizeof(OutputDelta<32, true>) % 16 == 0 &&
                  sizeof(OutputDelta<64, true>) % 16 == 0,
              "StateStage: every tile must start 16-byte aligned");
static_assert(sizeof(StateStorage<64, true, true, false>) <= 227 * 1024 &&
                  sizeof(StateStorage<32, true, true, true>) <= 227 * 1024,
              "StateStorage: shared storage over the sm_90 limit");

/// Row r (0..31) of warp w's 32-row state tile (H in the state pass, dS in the dH scan) as a row
/// of the 128-row state: 32w + r for mma.sync's row blocks; with wgmma (kWg) row r % 16 of the
/// warp's 16-row block in the 64-row half r / 16 (the two halves of Kᵀ·(r ⊙ Δ), Qᵀ·y, Wᵀ·dΔ).
template <bool kWg>
__device__ __forceinline__ int state_row(int w, int r) {
  return kWg ? (r / 16) * 64 + 16 * w + r % 16 : 32 * w + r;
}

/// kOutput: o in the same pass (the forward); without it the recurrence alone (the backward's
/// recompute, where o is not written): no Q or A^qk loaded, no Q·H or A^qk·Δ.
/// kWg: Q·H, W·H and Kᵀ·(r ⊙ Δ) as wgmma products of the column group's warpgroup over swizzled
/// tiles (glr/tiles/sw128_tile.cuh), each element's sum in the order of mma_acc's (k-steps in
/// order, 16 products each); A^qk·Δ stays on mma.sync (mma_acc_triangular's non-finite rows).
/// Warp w's rows of H are then 16w … and 64 + 16w … (the two 64-row halves of Kᵀ·(r ⊙ Δ)).
template <GateKind kGate, bool kDelta, int kBV, bool kOutput, bool kWg>
__global__ void __launch_bounds__(kStateThreads, 1) state_output_kernel(MmaForwardParams p) {
  static_assert(kBV == 32 || kBV == 64, "state_output_kernel: 32 or 64 value columns per CTA");
  // A per-channel gate reads Q̄ and K̄ (the prepare kernel's) where the others read Q and K with
  // row factors: e and r are 1 per row, and the state's rows decay by e_last,d.
  constexpr bool kChannel = kGate == GateKind::kChannel;
  StateStorage<kBV, kDelta, kOutput, kWg>& sm =
      arch::shared_storage<StateStorage<kBV, kDelta, kOutput, kWg>>();
  constexpr int kTiles = kMmaDim / kBV;
  const std::int64_t b = blockIdx.x;
  const int col0 = static_cast<int>(b % kTiles) * kBV;
  const int hv = static_cast<int>((b / kTiles) % p.v_heads);
  const std::int64_t n = b / kTiles / p.v_heads;
  const std::int64_t bos = seq_begin(p, n);
  const std::int64_t eos = seq_begin(p, n + 1);
  const std::int64_t chunks = (eos - bos + kMmaChunk - 1) / kMmaChunk;
  const std::int64_t slot0 = slot_base(p, n);
  const std::int64_t qk_stride = static_cast<std::int64_t>(p.qk_heads) * kMmaDim;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;
  const int w = arch::warp_id() % 4;  // this warp's row block
  const int d0 = 32 * w;              // its rows of H
  const int r0 = 16 * w;              // its rows of a chunk
  constexpr int kCols = kBV / kStateGroups;
  const int cw = kCols * (arch::warp_id() / 4);  // its columns of the tile: cw..cw+kCols

  const auto rows_of = [&](std::int64_t j) {
    const std::int64_t left = eos - bos - j * kMmaChunk;
    return static_cast<int>(left < kMmaChunk ? left : kMmaChunk);
  };
  // Chunk j's operands into stage j % 2, by the copy warps (kStateCopyWarps, after the compute
  // warps) with compile-time trip counts (copy_rows_async_fixed): one address product per copy
  // and an add per 16-byte piece.
  const auto issue = [&](std::int64_t j) {
    StateStage<kBV, kDelta, kOutput, kWg>& st = sm.stage[j % 2];
    const std::int64_t t0 = bos + j * kMmaChunk;
    const std::int64_t slot = slot0 + j;
    const int c = rows_of(j);
    constexpr int kT = 32 * kStateCopyWarps;
    constexpr int kW = kStateComputeThreads / 32;  // the first copy warp
    if constexpr (kChannel) {
      if constexpr (kOutput)
        copy_rows_async_fixed<kT, kW>(st.q, p.qbar + slot_block(p, slot, hv, kMmaDim), kMmaDim,
                                      kMmaChunk);
      copy_rows_async_fixed<kT, kW>(st.k, p.kbar + slot_block(p, slot, hv, kMmaDim), kMmaDim,
                                    kMmaChunk);
    } else {
      if constexpr (kOutput)
        copy_rows_async_fixed<kT, kW>(st.q, p.q + qk_row(p, t0, hv), qk_stride, c);
      copy_rows_async_fixed<kT, kW>(st.k, p.k + qk_row(p, t0, hv), qk_stride, c);
    }
    if constexpr (kDelta) {
      copy_rows_async_fixed<kT, kW>(st.w, p.w + slot_block(p, slot, hv, kMmaDim), kMmaDim,
                                    kMmaChunk);
      copy_rows_async_fixed<kT, kW>(st.u, p.u + slot_block(p, slot, hv, kMmaDim) + col0, kMmaDim,
                                    kMmaChunk);
    } else {
      copy_rows_async_fixed<kT, kW>(st.u, p.v + v_row(p, t0, hv) + col0, v_stride, c);
    }
    if constexpr (kOutput)
      copy_rows_async_fixed<kT, kW>(st.a, p.a + slot_block(p, slot, hv, kMmaChunk), kMmaChunk,
                                    kMmaChunk);
    copy_floats_async_fixed<kT, 2 * kMmaChunk, kW>(&st.f[0][0],
                                                   p.factors + slot_block(p, slot, hv, 2));
    arch::cp_async_commit();
  };
  // The copy warps: chunk j + 1's copies while the compute warps work on chunk j; each step's
  // first barrier (all warps) is where chunk j has landed and chunk j − 1's stage is free.
  if (arch::warp_id() >= kStateComputeThreads / 32) {
    if (chunks > 0) issue(0);
    for (std::int64_t j = 0; j < chunks; ++j) {
      arch::cp_async_wait<0>();
      if constexpr (kWg) arch::fence_proxy_async_shared();  // for wgmma's reads of K, W, Q
      __syncthreads();  // chunk j has landed; every compute warp is done with chunk j − 1
      if (j + 1 < chunks) issue(j + 1);
    }
    return;
  }

  // The fp32 state rows d0..d0+31, columns col0+cw..col0+cw+kCols (at 64 columns a warp the
  // state beside W·bf16(H) took 255 registers and spilled).
  static_assert(kCols <= 32, "state_output_kernel: at most 32 value columns a warp");
  AccTile<32, kCols> h;
  const auto hrow = [&](int r) { return state_row<kWg>(w, r); };  // H's row of tile row r
  const auto with_state = [&](auto&& f) { f(h, cw); };            // f(state, its first tile column)
  const auto store_h = [&] {                                      // bf16(H) to sm.h
    with_state([&](AccTile<32, kCols>& hp, int c0) {
      for_each_pair(hp, [&](int r, int e, float& x0, float& x1) {
        arch::store_u32(sm.h.ptr(hrow(r), c0 + e), arch::pack_bf16x2(x0, x1));
      });
    });
    if constexpr (kWg) arch::fence_proxy_async_shared();  // for wgmma's reads (after a barrier)
  };
  const auto keep_state = [&](std::int64_t slot) {  // bf16(H), the values sm.h holds
    bf16* out = p.states + state_block(p, slot, hv) + col0;
    with_state([&](AccTile<32, kCols>& hp, int c0) {
      for_each_pair(hp, [&](int r, int e, float& x0, float& x1) {
        arch::store_u32(out + hrow(r) * kMmaDim + c0 + e, arch::pack_bf16x2(x0, x1));
      });
    });
  };
  with_state([&](AccTile<32, kCols>& hp, int c0) {
    for_each_pair(hp, [&](int r, int e, float& x0, float& x1) {
      x0 = p.h0 != nullptr ? p.h0[user_state(p, n, hv, hrow(r), col0 + c0 + e)] : 0.0f;
      x1 = p.h0 != nullptr ? p.h0[user_state(p, n, hv, hrow(r), col0 + c0 + e + 1)] : 0.0f;
    });
  });
  store_h();

  for (std::int64_t j = 0; j < chunks; ++j) {
    if (p.states != nullptr) keep_state(slot0 + j);
    __syncthreads();  // chunk j has landed (the copy warps waited for it); bf16(H) is complete
    const StateStage<kBV, kDelta, kOutput, kWg>& st = sm.stage[j % 2];
    const int c = rows_of(j);

    // Phase A: Q·H (with the output) and W·H (rows r0..r0+15, the warp's columns), then Δ:
    // bf16(Δ) to shared memory (with the output) and to the workspace (where kept, the backward's
    // recompute), bf16(r ⊙ Δ) to shared memory.
    AccTile<16, kCols> out;
    if constexpr (kOutput) {
      if constexpr (kWg) {
        wgmma_product<arch::Major::kK>(out.f[0], st.q, 0, sm.h, cw, kMmaDim / 16);
      } else {
        zero(out);
        mma_acc<AStore::kRowMajor, BStore::kKMajor>(out, st.q, r0, sm.h, cw, 0, kMmaDim / 16);
      }
    }
    with_state([&](AccTile<32, kCols>&, int c0) {
      AccTile<16, kCols> wh;
      if constexpr (kDelta && kWg) {
        wgmma_product<arch::Major::kK>(wh.f[0], st.w, 0, sm.h, c0, kMmaDim / 16);
      } else {
        zero(wh);
        if constexpr (kDelta)
          mma_acc<AStore::kRowMajor, BStore::kKMajor>(wh, st.w, r0, sm.h, c0, 0, kMmaDim / 16);
      }
      for_each_pair(wh, [&](int il, int e, float& x0, float& x1) {
        const int i = r0 + il;
        const float dl0 = st.u.at(i, c0 + e) - x0;  // rows past the end: U (V), W rows are zero
        const float dl1 = st.u.at(i, c0 + e + 1) - x1;
        const float r = kChannel ? 1.0f : st.f[1][i];
        if constexpr (kOutput)
          arch::store_u32(sm.delta.ptr(i, c0 + e), arch::pack_bf16x2(dl0, dl1));
        if (kDelta && p.delta != nullptr)  // the values A^qk·Δ reads (the backward's recompute)
          arch::store_u32(
              p.delta + slot_block(p, slot0 + j, hv, kMmaDim) + i * kMmaDim + col0 + c0 + e,
              arch::pack_bf16x2(dl0, dl1));
        arch::store_u32(sm.delta_r.ptr(i, c0 + e), arch::pack_bf16x2(r * dl0, r * dl1));
      });
    });
    if constexpr (kWg) arch::fence_proxy_async_shared();  // bf16(r ⊙ Δ) for Kᵀ·(r ⊙ Δ)
    if constexpr (kOutput && !kChannel)
      for_each_pair(out, [&](int il, int, float& x0, float& x1) {
        x0 *= st.f[0][r0 + il];
        x1 *= st.f[0][r0 + il];
      });
    arch::named_barrier_sync(1, kStateComputeThreads);  // Δ complete (the compute warps)

    // Phase B: O += A^qk·Δ (with the output; k-steps 0..w: A^qk is lower triangular), then
    // H ← e_last H + Kᵀ(r ⊙ Δ) (the warp's columns).
    if constexpr (kOutput) {
      mma_acc_triangular<Triangle::kLower, AStore::kRowMajor, BStore::kKMajor>(
          out, st.a, r0, sm.delta, cw, 0, w + 1);
      const std::int64_t o0 = v_row(p, bos + j * kMmaChunk, hv) + col0 + cw;
      store_rows(out, p.o + o0, v_stride, r0, c, [&](bf16* at, float x0, float x1) {
        arch::store_u32(at, arch::pack_bf16x2(p.scale * x0, p.scale * x1));
      });
    }
    with_state([&](AccTile<32, kCols>& hp, int c0) {
      AccTile<32, kCols> s;
      if constexpr (kWg) {  // H's rows 0–63, then 64–127
        wgmma_product<arch::Major::kMN>(s.f[0], st.k, 0, sm.delta_r, c0, kMmaChunk / 16);
        wgmma_product<arch::Major::kMN>(s.f[1], st.k, 64, sm.delta_r, c0, kMmaChunk / 16);
      } else {
        zero(s);
        mma_acc<AStore::kTransposed, BStore::kKMajor>(s, st.k, d0, sm.delta_r, c0, 0,
                                                      kMmaChunk / 16);
      }
      if constexpr (kChannel) {  // e_last,d of row d, in the factors' 128 floats
        for_each_pair(hp, s, [&](int r, int, float& x0, float& x1, float& y0, float& y1) {
          const int d = hrow(r);
          const float ed = st.f[d / kMmaChunk][d % kMmaChunk];
          x0 = ed * x0 + y0;
          x1 = ed * x1 + y1;
        });
      } else {
        const float e_last = st.f[0][c - 1];
        zip(hp, s, [&](float& x, float y) { x = e_last * x + y; });
      }
    });
    store_h();
  }
  if (p.states != nullptr) keep_state(p.slots + n);
  if (p.final_state != nullptr)
    with_state([&](AccTile<32, kCols>& hp, int c0) {
      for_each_pair(hp, [&](int r, int e, float& x0, float& x1) {
        p.final_state[user_state(p, n, hv, hrow(r), col0 + c0 + e)] = x0;
        p.final_state[user_state(p, n, hv, hrow(r), col0 + c0 + e + 1)] = x1;
      });
    });
}

// ------------------------------------------------------------------------------ the sequence

/// The launches over a launch policy: launch(name, kernel, grid, shared_bytes, params) → Status.
/// Where o is not written (the backward's recompute) the state pass runs without the output.
template <GateKind kGate, bool kDelta, int kBV, typename Launch>
Status forward_sequence(const MmaForwardParams& p, Launch&& launch) {
  const dim3 prepare_grid(static_cast<unsigned>(p.slots), static_cast<unsigned>(p.v_heads));
  if (Status st = launch("prepare", prepare_kernel<kGate, kDelta>, prepare_grid,
                         sizeof(PrepareStorage<kGate, kDelta>), p, kPrepareThreads<kGate, kDelta>);
      !st)
    return st;
  const dim3 state_grid(static_cast<unsigned>(p.sequences * p.v_heads * (kMmaDim / kBV)));
  const auto state_pass = [&]<bool kWg>() {
    if (p.o == nullptr)
      return launch("state", state_output_kernel<kGate, kDelta, kBV, false, kWg>, state_grid,
                    sizeof(StateStorage<kBV, kDelta, false, kWg>), p, kStateThreads);
    return launch("state_output", state_output_kernel<kGate, kDelta, kBV, true, kWg>, state_grid,
                  sizeof(StateStorage<kBV, kDelta, true, kWg>), p, kStateThreads);
  };
  // At tile 64 (32 value columns a warp) the wgmma state pass spills (8–64 bytes): not built.
  if constexpr (kBV == 32)
    if (p.state_wgmma) return state_pass.template operator()<true>();
  return state_pass.template operator()<false>();
}

/// f.template operator()<gate, delta>() for the members this forward implements.
template <typename F>
Status for_mma_member(Member m, F&& f) {
  switch (m) {
    case Member::kLinearAttention:
      return f.template operator()<GateKind::kNone, false>();
    case Member::kSimpleGla:
      return f.template operator()<GateKind::kScalar, false>();
    case Member::kDeltaNet:
      return f.template operator()<GateKind::kNone, true>();
    case Member::kGatedDeltaNet:
      return f.template operator()<GateKind::kScalar, true>();
    case Member::kGla:
      return f.template operator()<GateKind::kChannel, false>();
    case Member::kKda:
      return f.template operator()<GateKind::kChannel, true>();
  }
  return make_error(ErrorCode::kInvalidArgument, "unknown member", "member");
}

}  // namespace kcv::glr::dev
