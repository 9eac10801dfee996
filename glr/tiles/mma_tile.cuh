// File: glr/tiles/mma_tile.cuh
// Typed tiles for the tensor-core GLR kernels, over the atoms of glr/arch (nothing here names an
// SM or holds PTX):
//   SmemBf16<R, C>  a bf16 R×C matrix in shared memory, row-major, each row padded by 8 elements
//                   (16 bytes), so that the 8 rows one ldmatrix reads fall on 8 different 16-byte
//                   bank groups for every row length used here (64, 128 or 256 bytes: row strides
//                   of 80, 144, 272 bytes);
//   AccTile<R, C>   an fp32 R×C accumulator held in registers by one warp, as (R/16)×(C/8)
//                   m16n8 fragments;
//   RowPartials     per-row partial sums of a warp's 16-row accumulators, one per lane of a quad,
//                   in registers;
//   dot_part        one thread's part of the Frobenius product of two SmemBf16 tiles.
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
#include "glr/arch/lanes.cuh"
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
    KCV_GLR_UNROLL
    for (int m = 0; m < t.kM; ++m) {
      KCV_GLR_UNROLL
      for (int n = 0; n < t.kN; ++n) {
        KCV_GLR_UNROLL
        for (int i = 0; i < 4; i += 2) {
          const arch::Coord c = arch::c_coord(lane, i);
          f(16 * m + c.row, 8 * n + c.col, t.f[m][n].r[slot][i], t.f[m][n].r[slot][i + 1]);
        }
      }
    }
  });
}

/// Stores a warp's 16 × N accumulator tile pair by pair: row r0 + i of the tile at
/// out + (r0 + i)·row_stride, rows r0 + i ≥ valid_rows left out, each pair by store(p, v0, v1)
/// with p the address of its first element. A lane holds two rows (i and i + 8): each gets one
/// address, formed once, and every pair of the row is a constant offset from it, so the stores
/// need no address arithmetic between them (with an address product per store, each product waits
/// for the store before it to read the registers it overwrites: "long scoreboard").
template <int N, typename T, typename Store>
__device__ __forceinline__ void store_rows(AccTile<16, N>& t, T* out, std::int64_t row_stride,
                                           int r0, int valid_rows, Store&& store) {
  arch::for_each_lane([&](int lane, int slot) {
    const arch::Coord c = arch::c_coord(lane, 0);  // (i, 2·(lane % 4)); the other row is i + 8
    T* lo = out + (r0 + c.row) * row_stride + c.col;
    T* hi = lo + 8 * row_stride;
    const bool lo_valid = r0 + c.row < valid_rows;
    const bool hi_valid = r0 + c.row + 8 < valid_rows;
    KCV_GLR_UNROLL
    for (int n = 0; n < t.kN; ++n) {
      if (lo_valid) store(lo + 8 * n, t.f[0][n].r[slot][0], t.f[0][n].r[slot][1]);
      if (hi_valid) store(hi + 8 * n, t.f[0][n].r[slot][2], t.f[0][n].r[slot][3]);
    }
  });
}

/// store_rows' store for a bf16 output: the pair rounded to bf16 and stored as one 32-bit word.
struct StoreBf16Pair {
  __device__ __forceinline__ void operator()(bf16* at, float x0, float x1) const {
    arch::store_u32(at, arch::pack_bf16x2(x0, x1));
  }
};

/// f(row, col, a0, a1, b0, b1): for_each_pair over two tiles of one shape at once, a0, a1 and
/// b0, b1 the pair (row, col), (row, col + 1) of `a` and of `b`.
template <int kRows, int kCols, typename F>
__device__ __forceinline__ void for_each_pair(AccTile<kRows, kCols>& a, AccTile<kRows, kCols>& b,
                                              F&& f) {
  arch::for_each_lane([&](int lane, int slot) {
    KCV_GLR_UNROLL
    for (int m = 0; m < a.kM; ++m) {
      KCV_GLR_UNROLL
      for (int n = 0; n < a.kN; ++n) {
        KCV_GLR_UNROLL
        for (int i = 0; i < 4; i += 2) {
          const arch::Coord c = arch::c_coord(lane, i);
          f(16 * m + c.row, 8 * n + c.col, a.f[m][n].r[slot][i], a.f[m][n].r[slot][i + 1],
            b.f[m][n].r[slot][i], b.f[m][n].r[slot][i + 1]);
        }
      }
    }
  });
}

/// f(row, col, w0, w1, p0, p1): for_each_pair over `part` (16 × N) and the columns
/// 8·kN8..8·kN8 + N of `whole` (16 × M) at once, w0, w1 the pair of `whole` at (row, col) and p0,
/// p1 the pair of `part` at (row, col − 8·kN8). kN8 is a template argument so that every fragment
/// index is a constant (a register, never local memory).
template <int kN8, int M, int N, typename F>
__device__ __forceinline__ void for_each_pair_slice(AccTile<16, M>& whole, AccTile<16, N>& part,
                                                    F&& f) {
  static_assert(kN8 >= 0 && 8 * kN8 + N <= M, "for_each_pair_slice: the slice lies in the tile");
  arch::for_each_lane([&](int lane, int slot) {
    KCV_GLR_UNROLL
    for (int n = 0; n < part.kN; ++n) {
      KCV_GLR_UNROLL
      for (int i = 0; i < 4; i += 2) {
        const arch::Coord c = arch::c_coord(lane, i);
        f(c.row, 8 * (kN8 + n) + c.col, whole.f[0][kN8 + n].r[slot][i],
          whole.f[0][kN8 + n].r[slot][i + 1], part.f[0][n].r[slot][i], part.f[0][n].r[slot][i + 1]);
      }
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

/// Per-row sums over the columns of a warp's 16-row accumulators (AccTile<16, N>), kept in the
/// registers of the lanes that hold the values: lane l sums its own columns of rows l / 4 and
/// l / 4 + 8, so a row's sum is the four partials of its quad, each added to in the order the
/// lane's values come. (A shared-memory array of the same partials, one slot per lane, would be
/// written at every add; here it is written once, by store_partials.)
struct RowPartials {
  arch::Frag<float, 2> f;  ///< per lane: [0] row l / 4, [1] row l / 4 + 8
};

__device__ __forceinline__ void zero(RowPartials& p) {
  for (int s = 0; s < arch::kLanes; ++s) p.f.r[s][0] = p.f.r[s][1] = 0.0f;
}

/// Adds x to the partial of the lane that holds (il, col) of a 16-row accumulator (il < 16): the
/// calling lane, when called from for_each_pair with the coordinates it passes.
__device__ __forceinline__ void add_to_row(RowPartials& p, int il, int col, float x) {
  float(&r)[2] = p.f.r[arch::lane_slot(arch::c_lane(il, col))];
  if (il < 8)
    r[0] += x;
  else
    r[1] += x;
}

/// dst[r0 + i][q] = the partial of row r0 + i held by lane 4·(i % 8) + q, i < 16 (the layout of
/// one slot per lane of a quad).
template <int R>
__device__ __forceinline__ void store_partials(const RowPartials& p, float (&dst)[R][4], int r0) {
  arch::for_each_lane([&](int lane, int slot) {
    dst[r0 + lane / 4][lane % 4] = p.f.r[slot][0];
    dst[r0 + 8 + lane / 4][lane % 4] = p.f.r[slot][1];
  });
}

/// Thread t's part of the Frobenius product ⟨A, B⟩ of two tiles of one shape, t < kThreads: the
/// 8-element groups t, t + kThreads, … of the row-major element order, each group's products
/// added in element order to one fp32 sum (two 16-byte loads from shared memory per group). The
/// kThreads parts, summed in a fixed order, are the product.
template <int kThreads, int R, int C>
__device__ __forceinline__ float dot_part(const SmemBf16<R, C>& a, const SmemBf16<R, C>& b, int t) {
  static_assert((R * C) % (8 * kThreads) == 0, "dot_part: whole 8-element groups per thread");
  float part = 0.0f;
  KCV_GLR_UNROLL
  for (int g = 0; g < R * C / (8 * kThreads); ++g) {
    const int i = 8 * (t + g * kThreads);
    std::uint32_t x[4], y[4];
    arch::load_u32x4(a.ptr(i / C, i % C), x);
    arch::load_u32x4(b.ptr(i / C, i % C), y);
    KCV_GLR_UNROLL
    for (int k = 0; k < 8; ++k)
      part += arch::unpack_bf16(x[k / 2], k % 2) * arch::unpack_bf16(y[k / 2], k % 2);
  }
  return part;
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

/// The B fragment of the one n-tile n0..n0+7, k0..k0+15 (a tile's odd last n-tile): ldmatrix.x2,
/// matrix j the k rows k0 + 8j.. (lanes 16..31 supply no address; theirs repeat lanes 0..15's).
template <BStore kB, int R, int C>
__device__ __forceinline__ void load_b_single(arch::FragB& b, const SmemBf16<R, C>& t, int k0,
                                              int n0) {
  if constexpr (kB == BStore::kKMajor)
    arch::ldmatrix<2, true>(b, [&](int l) { return t.ptr(k0 + l % 8 + 8 * ((l / 8) % 2), n0); });
  else
    arch::ldmatrix<2, false>(b, [&](int l) { return t.ptr(n0 + l % 8, k0 + 8 * ((l / 8) % 2)); });
}

/// acc += A[m0 .. m0+M, k] · B[k, n0 .. n0+N] over k in [16·k_begin, 16·k_end), one warp.
/// `n_pairs` limits the product to the first n_pairs 16-column pairs of the tile (the rest of
/// acc is untouched; an odd last n-tile counts as a pair of its own): triangular products skip
/// the pairs that are zero. `b_k0` shifts B's k index: B's k-th contraction row is b's row
/// b_k0 + k (a B operand stored at an offset, e.g. the per-row-block anchored keys of
/// ChannelGram). B is loaded two n-tiles at a time, an odd last one alone.
template <AStore kA, BStore kB, int M, int N, int RA, int CA, int RB, int CB>
__device__ __forceinline__ void mma_acc(AccTile<M, N>& acc, const SmemBf16<RA, CA>& a, int m0,
                                        const SmemBf16<RB, CB>& b, int n0, int k_begin, int k_end,
                                        int n_pairs = (N + 8) / 16, int b_k0 = 0) {
  for (int ks = k_begin; ks < k_end; ++ks) {
    arch::FragA af[AccTile<M, N>::kM];
    for (int m = 0; m < AccTile<M, N>::kM; ++m) load_a<kA>(af[m], a, m0 + 16 * m, 16 * ks);
    for (int np = 0; np < N / 16; ++np) {
      if (np >= n_pairs) break;
      arch::FragB b0, b1;
      load_b<kB>(b0, b1, b, b_k0 + 16 * ks, n0 + 16 * np);
      for (int m = 0; m < AccTile<M, N>::kM; ++m) {
        arch::mma_m16n8k16(acc.f[m][2 * np], af[m], b0, acc.f[m][2 * np]);
        arch::mma_m16n8k16(acc.f[m][2 * np + 1], af[m], b1, acc.f[m][2 * np + 1]);
      }
    }
    if constexpr (N % 16 == 8) {
      if (N / 16 < n_pairs) {
        arch::FragB b0;
        load_b_single<kB>(b0, b, b_k0 + 16 * ks, n0 + N - 8);
        for (int m = 0; m < AccTile<M, N>::kM; ++m)
          arch::mma_m16n8k16(acc.f[m][N / 8 - 1], af[m], b0, acc.f[m][N / 8 - 1]);
      }
    }
  }
}

// ------------------------------------------------------------------------ triangular products

/// Which products A(i, j)·B(j, n) of a triangular A's diagonal 16×16 block the algebra has, for
/// output row i and contraction index j: j ≤ i, j < i, j ≥ i or j > i.
enum class Triangle { kLower, kStrictLower, kUpper, kStrictUpper };

template <Triangle kT>
__device__ __forceinline__ bool in_triangle(int i, int j) {
  if constexpr (kT == Triangle::kLower) return j <= i;
  if constexpr (kT == Triangle::kStrictLower) return j < i;
  if constexpr (kT == Triangle::kUpper) return j >= i;
  return j > i;
}

/// Whether every bf16 in rows [r0, r0 + rows) × columns [c0, c0 + cols) of t is finite (cols a
/// multiple of 8, c0 too): the calling warp's vote over 16-byte pieces.
template <int R, int C>
__device__ __forceinline__ bool region_finite(const SmemBf16<R, C>& t, int r0, int rows, int c0,
                                              int cols) {
  const int pieces = rows * (cols / 8);
  return arch::warp_all([&](int lane) {
    bool finite = true;
    for (int p = lane; p < pieces; p += arch::kWarpSize) {
      std::uint32_t w[4];
      arch::load_u32x4(t.ptr(r0 + p / (cols / 8), c0 + 8 * (p % (cols / 8))), w);
      for (std::uint32_t x : w)  // a bf16 is Inf or NaN when its 8 exponent bits are all ones
        finite = finite && (x & 0x7f80u) != 0x7f80u && (x & 0x7f800000u) != 0x7f800000u;
    }
    return finite;
  });
}

template <AStore kA, int R, int C>
__device__ __forceinline__ float a_at(const SmemBf16<R, C>& t, int m, int k) {
  return kA == AStore::kRowMajor ? t.at(m, k) : t.at(k, m);
}
template <BStore kB, int R, int C>
__device__ __forceinline__ float b_at(const SmemBf16<R, C>& t, int k, int n) {
  return kB == BStore::kKMajor ? t.at(k, n) : t.at(n, k);
}

/// mma_acc for a triangular A (16 rows at m0): the k-steps off A's diagonal block on the tensor
/// cores as usual; the diagonal step (ks = m0 / 16) too when the 16 rows of B it reads are
/// finite, which the warp checks first. When one is not, that step runs on CUDA cores over the
/// (i, j) of the triangle kT only: on the tensor cores the block's structural zeros times a
/// non-finite B row j (0·NaN) would put NaN into rows i the algebra keeps finite, where the
/// recurrence (the token-serial oracle) stays finite. The fallback sums in another order than the
/// tensor cores; it runs only on chunks with non-finite data, and a given input always takes the
/// same path (deterministic).
template <Triangle kT, AStore kA, BStore kB, int N, int RA, int CA, int RB, int CB>
__device__ __forceinline__ void mma_acc_triangular(AccTile<16, N>& acc, const SmemBf16<RA, CA>& a,
                                                   int m0, const SmemBf16<RB, CB>& b, int n0,
                                                   int k_begin, int k_end,
                                                   int n_pairs = (N + 8) / 16) {
  const int diag = m0 / 16;
  if (diag < k_begin || diag >= k_end) {
    mma_acc<kA, kB>(acc, a, m0, b, n0, k_begin, k_end, n_pairs);
    return;
  }
  if (k_begin < diag) mma_acc<kA, kB>(acc, a, m0, b, n0, k_begin, diag, n_pairs);
  if (diag + 1 < k_end) mma_acc<kA, kB>(acc, a, m0, b, n0, diag + 1, k_end, n_pairs);
  const int k0 = 16 * diag;
  const int cols = 16 * n_pairs < N ? 16 * n_pairs : N;
  const bool finite = kB == BStore::kKMajor ? region_finite(b, k0, 16, n0, cols)
                                            : region_finite(b, n0, cols, k0, 16);
  if (finite) {
    mma_acc<kA, kB>(acc, a, m0, b, n0, diag, diag + 1, n_pairs);
    return;
  }
  // j outermost: the body over the fragments stays small enough to be unrolled, so acc is indexed
  // by constants and stays in registers (with j innermost the compiler kept the fragment loop
  // rolled and moved acc to local memory, for every call of this function, taken or not).
  for (int j = k0; j < k0 + 16; ++j) {
    for_each_pair(acc, [&](int il, int n, float& x0, float& x1) {
      const int i = m0 + il;
      if (n >= cols || !in_triangle<kT>(i, j)) return;
      const float aij = a_at<kA>(a, i, j);
      x0 += aij * b_at<kB>(b, j, n0 + n);
      x1 += aij * b_at<kB>(b, j, n0 + n + 1);
    });
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

/// copy_rows_async with the CTA's thread count known at compile time (kThreads; C/8 divides it,
/// and it divides R·C/8 or R·C/8 divides it): thread t copies the same pieces t, t + kThreads, …,
/// which lie kThreads/(C/8) rows apart in one column, so its addresses are one product at the
/// start and an add per piece, in R·C/(8·kThreads) unrolled steps (copy_rows_async's loop runs
/// to blockDim.x and divides per piece); where the tile has fewer pieces than the CTA threads,
/// thread t < R·C/8 copies piece t and the others none. The copying threads are the kThreads
/// from warp kFirstWarp on (thread t the CTA's 32·kFirstWarp + t): the whole CTA by default, or
/// a kernel's copy warps.
template <int kThreads, int kFirstWarp = 0, int R, int C>
__device__ __forceinline__ void copy_rows_async_fixed(SmemBf16<R, C>& dst, const bf16* src,
                                                      std::int64_t row_stride, int valid_rows) {
  constexpr int kPieces = C / 8;
  static_assert(
      kThreads % kPieces == 0 && ((R * kPieces) % kThreads == 0 || kThreads % (R * kPieces) == 0),
      "copy_rows_async_fixed: whole rows of pieces per thread step");
  constexpr int kRowStep = kThreads / kPieces;
  constexpr int kSteps = R >= kRowStep ? R / kRowStep : 1;
  arch::for_each_lane([&](int lane, int) {
    const int t = (arch::warp_id() - kFirstWarp) * arch::kWarpSize + lane;
    const int i0 = t / kPieces;
    if (i0 >= R) return;
    const int j = 8 * (t % kPieces);
    bf16* d = dst.ptr(i0, j);
    const bf16* s = src + i0 * row_stride + j;
    const std::int64_t step = kRowStep * row_stride;
    KCV_GLR_UNROLL
    for (int k = 0; k < kSteps; ++k) {
      const bool valid = i0 + k * kRowStep < valid_rows;
      arch::cp_async_16(d + k * kRowStep * SmemBf16<R, C>::kStride, valid ? s : src + j, valid);
      s += step;
    }
  });
}

/// The calling warp's asynchronous copy of rows [r0, r0 + rows) × columns [c0, c0 + kCols) of a
/// bf16 tile (c0 and kCols multiples of 8, kCols/8 dividing 32; rows ≤ kMaxRows and a multiple
/// of 32/(kCols/8); row i at src + i·row_stride, 16-byte aligned): rows i ≥ valid_rows are
/// zero-filled and not read. For a tile whose parts are each read by one warp: the warp refills
/// its own part after its last read (arch::warp_sync() between), with no CTA barrier. Lane l
/// copies the pieces l, l + 32, … of the block, which lie 32/(kCols/8) rows apart in one column:
/// one product at the start and an add per piece, in at most kMaxRows·kCols/256 unrolled steps,
/// as many for every lane (no test per piece where rows is a constant, nor of valid_rows where
/// it is past the block). Call arch::cp_async_commit() after the copies of one group.
template <int kMaxRows, int kCols, int R, int C>
__device__ __forceinline__ void copy_block_async(SmemBf16<R, C>& dst, const bf16* src,
                                                 std::int64_t row_stride, int r0, int rows, int c0,
                                                 int valid_rows) {
  static_assert(kCols % 8 == 0 && kCols <= C, "copy_block_async: whole 16-byte pieces of a row");
  constexpr int kPieces = kCols / 8;
  static_assert(arch::kWarpSize % kPieces == 0 && (kMaxRows * kPieces) % arch::kWarpSize == 0,
                "copy_block_async: whole rows of pieces per lane step");
  constexpr int kRowStep = arch::kWarpSize / kPieces;
  arch::for_each_lane([&](int lane, int) {
    const int i0 = r0 + lane / kPieces;
    const int j = c0 + 8 * (lane % kPieces);
    bf16* d = dst.ptr(i0, j);
    const bf16* s = src + i0 * row_stride + j;
    const std::int64_t step = kRowStep * row_stride;
    const bool all_valid = r0 + rows <= valid_rows;
    KCV_GLR_UNROLL
    for (int k = 0; k < kMaxRows / kRowStep; ++k) {
      if (k * kRowStep >= rows) break;  // (rows a multiple of kRowStep: i < r0 + rows)
      const int i = i0 + k * kRowStep;
      const bool valid = all_valid || i < valid_rows;
      arch::cp_async_16(d + k * kRowStep * SmemBf16<R, C>::kStride, valid ? s : src + j, valid);
      s += step;
    }
  });
}

/// copy_rows_async_fixed for fp32 rows: rows [0, R) × C floats into dst (rows kStride floats
/// apart, kStride a multiple of 4) from src (row i at src + i·row_stride, 16-byte aligned), four
/// floats per 16-byte piece; rows i ≥ valid_rows zero-filled and not read. Thread t copies the
/// pieces t, t + kThreads, … (C/4 divides kThreads, kThreads divides R·C/4).
template <int kThreads, int R, int C, int kStride>
__device__ __forceinline__ void copy_float_rows_async_fixed(float (&dst)[R][kStride],
                                                            const float* src,
                                                            std::int64_t row_stride,
                                                            int valid_rows) {
  constexpr int kPieces = C / 4;
  static_assert(kStride % 4 == 0 && C <= kStride, "copy_float_rows_async_fixed: 16-byte rows");
  static_assert(kThreads % kPieces == 0 && (R * kPieces) % kThreads == 0,
                "copy_float_rows_async_fixed: whole rows of pieces per thread step");
  constexpr int kRowStep = kThreads / kPieces;
  arch::for_each_lane([&](int lane, int) {
    const int t = arch::warp_id() * arch::kWarpSize + lane;
    const int i0 = t / kPieces;
    const int j = 4 * (t % kPieces);
    const float* s = src + i0 * row_stride + j;
    KCV_GLR_UNROLL
    for (int k = 0; k < R / kRowStep; ++k) {
      const bool valid = i0 + k * kRowStep < valid_rows;
      arch::cp_async_16(&dst[i0 + k * kRowStep][j], valid ? s : src + j, valid);
      s += kRowStep * row_stride;
    }
  });
}

/// Asynchronous copy of n floats (n a multiple of 4, both 16-byte aligned), CTA-wide.
__device__ __forceinline__ void copy_floats_async(float* dst, const float* src, int n) {
  arch::cta_for(n / 4, [&](int idx) { arch::cp_async_16(dst + 4 * idx, src + 4 * idx, true); });
}

/// copy_floats_async of kN floats by a CTA of kThreads threads (both known at compile time):
/// thread t copies the 16-byte pieces t, t + kThreads, … in unrolled steps. The threads are
/// counted from warp kFirstWarp on, as copy_rows_async_fixed's.
template <int kThreads, int kN, int kFirstWarp = 0>
__device__ __forceinline__ void copy_floats_async_fixed(float* dst, const float* src) {
  static_assert(kN % 4 == 0, "copy_floats_async_fixed: whole 16-byte pieces");
  arch::for_each_lane([&](int lane, int) {
    const int t = (arch::warp_id() - kFirstWarp) * arch::kWarpSize + lane;
    KCV_GLR_UNROLL
    for (int k = 0; k < (kN / 4 + kThreads - 1) / kThreads; ++k) {
      const int idx = t + k * kThreads;
      if (idx < kN / 4) arch::cp_async_16(dst + 4 * idx, src + 4 * idx, true);
    }
  });
}

}  // namespace kcv::glr::gpu::detail
