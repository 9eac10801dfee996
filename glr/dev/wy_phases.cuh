// File: glr/dev/wy_phases.cuh
// The phases the two WY kernels share (wy_grad_kernel, chunked_mma_backward.cuh; wy_channel_kernel,
// chunked_mma_wy_channel.cuh), each for one warp's 16 rows r0 = 16w.. of a chunk of c valid rows
// (by default the calling warp's, all columns; wy_channel_kernel's warps take a column group):
// the first copies, the solve's dT and Y = Tᵀ dT, and dk's two parts summed and stored.
#pragma once

#include <cstdint>

#include "glr/dev/chunked_mma_backward.hpp"
#include "glr/dev/chunked_mma_forward.cuh"

namespace kcv::glr::dev {

/// The WY kernels' first copies, CTA-wide (kThreads threads), committed as two groups so that
/// the first product (dW = −dΔ Hᵀ) starts while the rest arrive: the scan's dΔ and H entering the
/// chunk (48 KB); then the prepare kernel's bf16(T) of its slot and V and K of the chunk (rows
/// past c zero-filled; 40 KB). cp_async_wait<1> lands the first, <0> both (later groups add to N).
template <int kThreads>
__device__ __forceinline__ void copy_wy_operands(
    SmemBf16<kMmaChunk, kMmaDim>& k, SmemBf16<kMmaChunk, kMmaDim>& v, SmemBf16<kMmaDim, kMmaDim>& h,
    SmemBf16<kMmaChunk, kMmaDim>& dd, SmemBf16<kMmaChunk, kMmaChunk>& t,
    const MmaBackwardParams& bp, const ChunkRef& ch, std::int64_t slot, int hv) {
  const MmaForwardParams& p = bp.fwd;
  const std::int64_t qk_stride = static_cast<std::int64_t>(p.qk_heads) * kMmaDim;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;
  copy_rows_async_fixed<kThreads>(dd, bp.dd + slot_block(p, slot, hv, kMmaDim), kMmaDim, kMmaChunk);
  copy_rows_async_fixed<kThreads>(h, p.states + state_block(p, slot, hv), kMmaDim, kMmaDim);
  arch::cp_async_commit();
  copy_rows_async_fixed<kThreads>(t, p.t_inv + slot_block(p, slot, hv, kMmaChunk), kMmaChunk,
                                  kMmaChunk);
  copy_rows_async_fixed<kThreads>(v, p.v + v_row(p, ch.t0, hv), v_stride, ch.rows);
  copy_rows_async_fixed<kThreads>(k, p.k + qk_row(p, ch.t0, hv), qk_stride, ch.rows);
  arch::cp_async_commit();
}

/// dT = bf16(StrictLower(dW Xᵀ + dΔ Ṽᵀ)) into `dt`, rows of row block w, the kPairs 16-column
/// blocks from `first` (all four by default; the products of column pairs first..w only); rows at
/// or past c zero.
template <int kPairs = 4>
__device__ __forceinline__ void wy_solve_dt(SmemBf16<kMmaChunk, kMmaChunk>& dt,
                                            const SmemBf16<kMmaChunk, kMmaDim>& dw,
                                            const SmemBf16<kMmaChunk, kMmaDim>& x,
                                            const SmemBf16<kMmaChunk, kMmaDim>& dd,
                                            const SmemBf16<kMmaChunk, kMmaDim>& vt, int c,
                                            int w = arch::warp_id(), int first = 0) {
  const int r0 = 16 * w;
  const int n0 = 16 * first;
  const int pairs = w + 1 - first < kPairs ? w + 1 - first : kPairs;
  AccTile<16, 16 * kPairs> acc;
  zero(acc);
  if (pairs > 0) {
    mma_acc<AStore::kRowMajor, BStore::kNMajor>(acc, dw, r0, x, n0, 0, kMmaDim / 16, pairs);
    mma_acc<AStore::kRowMajor, BStore::kNMajor>(acc, dd, r0, vt, n0, 0, kMmaDim / 16, pairs);
  }
  for_each_pair(acc, [&](int il, int jl, float& x0, float& x1) {
    const int i = r0 + il;
    const int j = n0 + jl;
    const float t0 = j < i && i < c ? x0 : 0.0f;
    const float t1 = j + 1 < i && i < c ? x1 : 0.0f;
    arch::store_u32(dt.ptr(i, j), arch::pack_bf16x2(t0, t1));
  });
}

/// Y = bf16(Tᵀ dT) into `y`, rows of row block w, the kPairs 16-column blocks from `first` (k-steps
/// w..3: T is lower triangular).
template <int kPairs = 4>
__device__ __forceinline__ void wy_solve_y(SmemBf16<kMmaChunk, kMmaChunk>& y,
                                           const SmemBf16<kMmaChunk, kMmaChunk>& t,
                                           const SmemBf16<kMmaChunk, kMmaChunk>& dt,
                                           int w = arch::warp_id(), int first = 0) {
  const int r0 = 16 * w;
  const int n0 = 16 * first;
  AccTile<16, 16 * kPairs> acc;
  zero(acc);
  mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(acc, t, r0, dt, n0, w,
                                                                             kMmaChunk / 16);
  for_each_pair(acc, [&](int il, int jl, float& x0, float& x1) {
    arch::store_u32(y.ptr(r0 + il, n0 + jl), arch::pack_bf16x2(x0, x1));
  });
}

/// A chunk's fp32 dk part in shared memory (wy_grad_kernel's copy of grad_kernel's dk_part), each
/// row padded by 8 floats so that a warp's 8-byte loads of an accumulator fall on distinct banks.
using DkPartRows = float[kMmaChunk][kMmaDim + 8];

/// dk = the gradient kernel's fp32 part (dk_part) + this kernel's `dk` (rows of row block w,
/// columns c0..c0+N); without GVA rounded and stored, else left in the part for group_sum. The
/// part is loaded first, all of the warp's rows at once in 8-byte loads: loaded beside the stores,
/// each pair's load would wait for the store before it (dk and dk_part may alias as far as the
/// compiler knows), one global round trip per pair. With `prior` (wy_grad_kernel) the part comes
/// from shared memory, where the kernel copied it with its operands (rows past c zero).
template <int N>
__device__ __forceinline__ void wy_finish_dk(AccTile<16, N>& dk, const MmaBackwardParams& bp,
                                             std::int64_t t0, int hv, int c,
                                             int w = arch::warp_id(), int c0 = 0,
                                             const DkPartRows* prior = nullptr) {
  const MmaForwardParams& p = bp.fwd;
  const int r0 = 16 * w;
  const std::int64_t qk_stride = static_cast<std::int64_t>(p.qk_heads) * kMmaDim;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;
  float* dk_part = bp.dk_part + v_row(p, t0, hv) + c0;
  AccTile<16, N> dk_prior;
  for_each_pair(dk_prior, [&](int il, int d, float& x0, float& x1) {
    const int i = r0 + il;
    x0 = 0.0f;
    x1 = 0.0f;
    if (prior != nullptr) {
      arch::load_f32x2(&(*prior)[i][c0 + d], x0, x1);  // zero past c
    } else if (i < c) {
      arch::load_f32x2(dk_part + i * v_stride + d, x0, x1);
    }
  });
  zip(dk, dk_prior, [](float& x, float y) { x += y; });
  if (p.group == 1) {
    store_rows(dk, bp.dk + qk_row(p, t0, hv) + c0, qk_stride, r0, c, StoreBf16Pair{});
  } else {
    store_rows(dk, dk_part, v_stride, r0, c,
               [](float* at, float x0, float x1) { arch::store_f32x2(at, x0, x1); });
  }
}

}  // namespace kcv::glr::dev
