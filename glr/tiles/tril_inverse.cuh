// File: glr/tiles/tril_inverse.cuh
// T = (I + L)^{-1} for a strictly lower-triangular N×N tile L, by kBlock×kBlock blocks exactly as
// the reference's tril_inverse.cpp (gdn-spec.md §8):
//   diagonal blocks, row by row:  T_ij = −L_ij − Σ_{m=j+1}^{i−1} L_im T_mj   (i > j, same block)
//   off-diagonal blocks, r = 1, 2, …:  T_rs = −T_rr · Σ_{m=s}^{r−1} L_rm T_ms   (all s < r at once)
// Zero rows and columns of L (the padded rows of a ragged chunk) give identity rows of T, and
// every sum runs over the lower triangle only, so a NaN in L reaches exactly the entries the
// algebra says. The block's threads share the work; the function starts and ends with a barrier,
// `acc` is scratch.
#pragma once

#include "glr/tiles/tile.cuh"

namespace kcv::glr::gpu::detail {

template <int kN, int kBlock>
__device__ void invert_unit_lower(const Tile<kN, kN>& l, Tile<kN, kN>& t, Tile<kN, kN>& acc) {
  static_assert(kN % kBlock == 0, "invert_unit_lower: N must be a multiple of the block size");
  constexpr int kBlocks = kN / kBlock;
  __syncthreads();
  for_each_2d(kN, kN, [&](int i, int j) { t(i, j) = (i == j) ? 1.0f : 0.0f; });
  __syncthreads();
  // Diagonal blocks: row li of every block at once, one thread per (block, column).
  for (int li = 1; li < kBlock; ++li) {
    for_each_2d(kBlocks, kBlock, [&](int r, int lj) {
      if (lj >= li) return;
      const int i = r * kBlock + li;
      const int j = r * kBlock + lj;
      float s = -l(i, j);
      for (int m = j + 1; m < i; ++m) s -= l(i, m) * t(m, j);
      t(i, j) = s;
    });
    __syncthreads();
  }
  // Off-diagonal block rows r = 1.., every column block s < r at once.
  for (int r = 1; r < kBlocks; ++r) {
    const int row0 = r * kBlock;
    for_each_2d(kBlock, row0, [&](int li, int j) {  // acc_rs = Σ_{m=s}^{r−1} L_rm T_ms
      const int i = row0 + li;
      float a = 0.0f;
      for (int m = (j / kBlock) * kBlock; m < row0; ++m) a += l(i, m) * t(m, j);
      acc(i, j) = a;
    });
    __syncthreads();
    for_each_2d(kBlock, row0, [&](int li, int j) {  // T_rs = −T_rr acc_rs (T_rr lower)
      const int i = row0 + li;
      float a = 0.0f;
      for (int p = row0; p <= i; ++p) a += t(i, p) * acc(p, j);
      t(i, j) = -a;
    });
    __syncthreads();
  }
}

}  // namespace kcv::glr::gpu::detail
