// File: glr/tiles/mma_tile.cuh
// Typed tiles for the tensor-core GLR kernels, over the atoms of glr/arch (nothing here names an
// SM or holds PTX):
//   SmemBf16<R, C>  a bf16 R×C matrix in shared memory, row-major, each row padded by 8 elements
//                   (16 bytes), so that the 8 rows one ldmatrix reads fall on 8 different 16-byte
//                   bank groups for every row length used here (64, 128 or 256 bytes: row strides
//                   of 80, 144, 272 bytes);
//   AccTile<R, C>   an fp32 R×C accumulator held in registers by one warp, as (R/16)×(C/8)
//                   m16n8 fragments.
// and the warp-level operations on them. An operand of a product is named by how its tile stores
// it, which decides the ldmatrix variant:
//   AStore::kRowMajor    A[m][k] stored as is      (ldmatrix)
//   AStore::kTransposed  A[m][k] stored as [k][m]  (ldmatrix.trans), e.g. Kᵀ from K's rows
//   BStore::kKMajor      B[k][n] stored as is      (ldmatrix.trans)
//   BStore::kNMajor      B[k][n] stored as [n][k]  (ldmatrix), e.g. Kᵀ as the B of Q·Kᵀ
// Each loader computes the row address every lane supplies (lane l: row l % 8 of matrix l / 8)
// for the fragment order of mma_m16n8k16; glr/dev/arch_layout_test.cpp checks every one of them
// against a plain matrix product in the host emulation.
#pragma once

#include <cstdint>

#include "glr/arch/cp_async.cuh"
#include "glr/arch/mma_m16n8k16.cuh"

namespace kcv::glr::gpu::detail {

using arch::bf16;

template <int kRows, int kCols>
struct SmemBf16 {
  static_assert(kCols % 8 == 0, "SmemBf16: rows are moved in 16-byte pieces (8 bf16)");
  static constexpr int kStride = kCols + 8;
  bf16 data[kRows * kStride];

  __device__ __forceinline__ bf16* ptr(int i, int j) { return data + i * kStride + j; }
  __device__ __forceinline__ const bf16* ptr(int i, int j) const { return data + i * kStride + j; }
  __device__ __forceinline__ float at(int i, int j) const {
    return arch::bf16_bits_to_float(arch::bf16_bits(data[i * kStride + j]));
  }
};

template <int kRows, int kCols>
struct AccTile {
  static_assert(kRows % 16 == 0 && kCols % 8 == 0, "AccTile: whole m16n8 fragments");
  static constexpr int kM = kRows / 16;
  static constexpr int kN = kCols / 8;
  arch::FragC f[kM][kN];
};

template <int kRows, int kCols>
__device__ __forceinline__ void zero(AccTile<kRows, kCols>& t) {
  for (int m = 0; m < t.kM; ++m)
    for (int n = 0; n < t.kN; ++n)
      for (int s = 0; s < arch::kLanes; ++s)
        for (int i = 0; i < 4; ++i) t.f[m][n].r[s][i] = 0.0f;
}

/// f(row, col, v0, v1) for each horizontally adjacent pair (row, col), (row, col + 1) of the
/// calling warp's tile (col even); v0, v1 are references into the fragments.
template <int kRows, int kCols, typename F>
__device__ __forceinline__ void for_each_pair(AccTile<kRows, kCols>& t, F&& f) {
  arch::for_each_lane([&](int lane, int slot) {
    for (int m = 0; m < t.kM; ++m)
      for (int n = 0; n < t.kN; ++n)
        for (int i = 0; i < 4; i += 2) {
          const arch::Coord c = arch::c_coord(lane, i);
          f(16 * m + c.row, 8 * n + c.col, t.f[m][n].r[slot][i], t.f[m][n].r[slot][i + 1]);
        }
  });
}

/// f(x, y) for each element x of `a` and the element y at the same place in `b`.
template <int kRows, int kCols, typename F>
__device__ __forceinline__ void zip(AccTile<kRows, kCols>& a, const AccTile<kRows, kCols>& b,
                                    F&& f) {
  for (int m = 0; m < a.kM; ++m)
    for (int n = 0; n < a.kN; ++n)
      for (int s = 0; s < arch::kLanes; ++s)
        for (int i = 0; i < 4; ++i) f(a.f[m][n].r[s][i], b.f[m][n].r[s][i]);
}

// ----------------------------------------------------------------------------------- operands

/// A fragment of rows m0..m0+15, columns k0..k0+15 of A stored row-major.
template <int R, int C>
__device__ __forceinline__ void load_a_row_major(arch::FragA& a, const SmemBf16<R, C>& t, int m0,
                                                 int k0) {
  arch::ldmatrix<4, false>(a, [&](int l) {
    const int j = l / 8;
    return t.ptr(m0 + l % 8 + 8 * (j % 2), k0 + 8 * (j / 2));
  });
}

/// A fragment of A = Sᵀ (rows m0.., columns k0..) where the tile holds S[k][m].
template <int R, int C>
__device__ __forceinline__ void load_a_transposed(arch::FragA& a, const SmemBf16<R, C>& t, int m0,
                                                  int k0) {
  arch::ldmatrix<4, true>(a, [&](int l) {
    const int j = l / 8;
    return t.ptr(k0 + l % 8 + 8 * (j / 2), m0 + 8 * (j % 2));
  });
}

/// B fragments of the two n-tiles n0..n0+7 and n0+8..n0+15, k0..k0+15, B stored [k][n].
template <int R, int C>
__device__ __forceinline__ void load_b_k_major(arch::FragB& b0, arch::FragB& b1,
                                               const SmemBf16<R, C>& t, int k0, int n0) {
  arch::Frag<std::uint32_t, 4> x;
  arch::ldmatrix<4, true>(x, [&](int l) {
    const int j = l / 8;
    return t.ptr(k0 + l % 8 + 8 * (j % 2), n0 + 8 * (j / 2));
  });
  for (int s = 0; s < arch::kLanes; ++s) {
    b0.r[s][0] = x.r[s][0];
    b0.r[s][1] = x.r[s][1];
    b1.r[s][0] = x.r[s][2];
    b1.r[s][1] = x.r[s][3];
  }
}

/// B fragments of the two n-tiles n0.., n0+8.., k0..k0+15, B stored [n][k] (B = Sᵀ, S row-major).
template <int R, int C>
__device__ __forceinline__ void load_b_n_major(arch::FragB& b0, arch::FragB& b1,
                                               const SmemBf16<R, C>& t, int k0, int n0) {
  arch::Frag<std::uint32_t, 4> x;
  arch::ldmatrix<4, false>(x, [&](int l) {
    const int j = l / 8;
    return t.ptr(n0 + l % 8 + 8 * (j / 2), k0 + 8 * (j % 2));
  });
  for (int s = 0; s < arch::kLanes; ++s) {
    b0.r[s][0] = x.r[s][0];
    b0.r[s][1] = x.r[s][1];
    b1.r[s][0] = x.r[s][2];
    b1.r[s][1] = x.r[s][3];
  }
}

enum class AStore { kRowMajor, kTransposed };
enum class BStore { kKMajor, kNMajor };

template <AStore kA, int R, int C>
__device__ __forceinline__ void load_a(arch::FragA& a, const SmemBf16<R, C>& t, int m0, int k0) {
  if constexpr (kA == AStore::kRowMajor)
    load_a_row_major(a, t, m0, k0);
  else
    load_a_transposed(a, t, m0, k0);
}

template <BStore kB, int R, int C>
__device__ __forceinline__ void load_b(arch::FragB& b0, arch::FragB& b1, const SmemBf16<R, C>& t,
                                       int k0, int n0) {
  if constexpr (kB == BStore::kKMajor)
    load_b_k_major(b0, b1, t, k0, n0);
  else
    load_b_n_major(b0, b1, t, k0, n0);
}

/// acc += A[m0 .. m0+M, k] · B[k, n0 .. n0+N] over k in [16·k_begin, 16·k_end), one warp.
/// `n_pairs` limits the product to the first n_pairs 16-column pairs of the tile (the rest of
/// acc is untouched): triangular products skip the pairs that are zero.
template <AStore kA, BStore kB, int M, int N, int RA, int CA, int RB, int CB>
__device__ __forceinline__ void mma_acc(AccTile<M, N>& acc, const SmemBf16<RA, CA>& a, int m0,
                                        const SmemBf16<RB, CB>& b, int n0, int k_begin, int k_end,
                                        int n_pairs = N / 16) {
  static_assert(N % 16 == 0, "mma_acc: B is loaded two n-tiles at a time");
  for (int ks = k_begin; ks < k_end; ++ks) {
    arch::FragA af[AccTile<M, N>::kM];
    for (int m = 0; m < AccTile<M, N>::kM; ++m) load_a<kA>(af[m], a, m0 + 16 * m, 16 * ks);
    for (int np = 0; np < N / 16; ++np) {
      if (np >= n_pairs) break;
      arch::FragB b0, b1;
      load_b<kB>(b0, b1, b, 16 * ks, n0 + 16 * np);
      for (int m = 0; m < AccTile<M, N>::kM; ++m) {
        arch::mma_m16n8k16(acc.f[m][2 * np], af[m], b0, acc.f[m][2 * np]);
        arch::mma_m16n8k16(acc.f[m][2 * np + 1], af[m], b1, acc.f[m][2 * np + 1]);
      }
    }
  }
}

// ----------------------------------------------------------------------------------- copies

/// Asynchronous copy of a bf16 tile from global memory (row i at src + i·row_stride, 16-byte
/// aligned) into dst, CTA-wide: rows ≥ valid_rows are zero-filled and not read. Call
/// arch::cp_async_commit() after the copies of one stage.
template <int R, int C>
__device__ __forceinline__ void copy_rows_async(SmemBf16<R, C>& dst, const bf16* src,
                                                std::int64_t row_stride, int valid_rows) {
  constexpr int kPieces = C / 8;
  arch::cta_for(R * kPieces, [&](int idx) {
    const int i = idx / kPieces;
    const int j = 8 * (idx % kPieces);
    const bool valid = i < valid_rows;
    arch::cp_async_16(dst.ptr(i, j), src + (valid ? i * row_stride : 0) + j, valid);
  });
}

/// Asynchronous copy of n floats (n a multiple of 4, both 16-byte aligned), CTA-wide.
__device__ __forceinline__ void copy_floats_async(float* dst, const float* src, int n) {
  arch::cta_for(n / 4, [&](int idx) { arch::cp_async_16(dst + 4 * idx, src + 4 * idx, true); });
}

}  // namespace kcv::glr::gpu::detail
