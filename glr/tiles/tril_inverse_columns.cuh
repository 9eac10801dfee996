// File: glr/tiles/tril_inverse_columns.cuh
// T = (I + L)^{-1} for a strictly lower-triangular N×N tile L by 16×16 blocks: every entry the
// same sum, over the same terms in the same order, as invert_unit_lower (tril_inverse.cuh, the
// reference's tril_inverse.cpp, gdn-spec.md §8), so the two give the same bits; only the schedule
// differs. One lane owns one column of a 16×16 block and keeps it in registers:
//   1. diagonal blocks: warp b substitutes block b, lane j < 16 its column j, rows in order,
//        T_ij = −L_ij − Σ_{m=j+1}^{i−1} L_im T_mj   (i > j; L's row i read by broadcast loads)
//      while lanes 16..31 write the zeros of T above the block;
//   2. off-diagonal blocks in rounds d = 1 … N/16 − 1, a barrier after each. Every block (r, s)
//      with r − s ≥ d adds its k-block m = s + d − 1 to acc_rs = Σ_{m=s}^{r−1} L_rm T_ms (T_ms is
//      final since round d − 1; the k-blocks arrive in ascending order, so each entry of acc is
//      the reference's sum), and the blocks with r − s = d finish T_rs = −T_rr · acc_rs. A block
//      not finished leaves acc for the next round in l's block (s, r), above the diagonal, which
//      holds no entry of L (the inverse reads L's lower triangle only), so the inverse needs no
//      shared memory beyond l and t.
// Why: invert_unit_lower runs the diagonal blocks row by row with a CTA barrier per row (15, at
// most 64 threads busy) and the off-diagonal sums as loops of scalar shared-memory reads with
// two barriers per block row. Here the CTA waits at N/16 barriers, L's and T_rr's rows come
// four floats per (broadcast) load from RowAlignedTiles, and a lane's partial sums stay in
// registers. Sums run over the lower triangle only, as in the reference (a term is skipped by a
// predicate, never multiplied by zero), so a NaN in L reaches exactly the entries it reaches
// there, and zero rows and columns of L (a ragged chunk's padding) give identity rows of T.
// Written for 4 warps at N = 64 (one warp per diagonal block, 8 half-warps for the ≤ 6 blocks of
// a round); any CTA size gives the same result (block_loops.cuh: each index is one thread's).
// @pre l's lower triangle is complete (the caller's barrier); its off-diagonal blocks above the
// diagonal are scratch (overwritten, never read as L). Ends with a barrier; T is then complete.
#pragma once

#include "glr/arch/lanes.cuh"
#include "glr/tiles/block_loops.cuh"
#include "glr/tiles/tile.cuh"

namespace kcv::glr::gpu::detail {

namespace tril_columns {

inline constexpr int kBlock = 16;  ///< the reference's kSubChunk

/// The block a half-warp works on in round d; r < 0 when it has none.
struct BlockJob {
  int r = -1;
  int s = 0;
};

/// Round d of `blocks` block rows: half-warps 0 … blocks−d−1 finish the blocks with r − s = d;
/// the blocks still accumulating (r − s > d) follow from the next warp on, so that a warp's two
/// halves do the same kind of work.
__host__ __device__ constexpr BlockJob round_job(int blocks, int d, int half_warp) {
  const int finishing = blocks - d;
  if (half_warp < finishing) return {half_warp + d, half_warp};
  int c = half_warp - (finishing + finishing % 2);
  if (c < 0) return {};
  for (int e = d + 1; e < blocks; ++e)
    for (int s = 0; s + e < blocks; ++s)
      if (c-- == 0) return {s + e, s};
  return {};
}

/// Half-warps round d spreads over (the last one with a job, plus one).
__host__ __device__ constexpr int round_half_warps(int blocks, int d) {
  int n = 0;
  for (int h = 0; h < 2 * blocks * blocks; ++h)
    if (round_job(blocks, d, h).r >= 0) n = h + 1;
  return n;
}

/// row[0 … n) = x(i, c0 …) in 16-byte loads (c0 a multiple of 4; n is a constant once the
/// caller's loop is unrolled), and up to 3 entries past them.
template <int kN>
__device__ __forceinline__ void load_row(const RowAlignedTile<kN, kN>& x, int i, int c0, int n,
                                         float (&row)[kBlock]) {
  KCV_GLR_UNROLL
  for (int q = 0; q < (n + 3) / 4; ++q) arch::load_f32x4(x.ptr(i, c0 + 4 * q), row + 4 * q);
}

/// Column lj of diagonal block b by forward substitution; the column goes to t.
template <int kN>
__device__ __forceinline__ void diagonal_column(const RowAlignedTile<kN, kN>& l,
                                                RowAlignedTile<kN, kN>& t, int b, int lj) {
  const int o = kBlock * b;
  float x[kBlock];  // x[i] = T(o + i, o + lj)
  KCV_GLR_UNROLL
  for (int i = 0; i < kBlock; ++i) {
    float row[kBlock];
    load_row(l, o + i, o, i, row);
    float s = -l(o + i, o + lj);  // read for i ≤ lj too, but not used there
    KCV_GLR_UNROLL
    for (int m = 0; m < i; ++m)
      if (m > lj) s -= row[m] * x[m];
    x[i] = i > lj ? s : (i == lj ? 1.0f : 0.0f);
  }
  KCV_GLR_UNROLL
  for (int i = 0; i < kBlock; ++i) t(o + i, o + lj) = x[i];
}

/// One lane's column j of block `job` in round d: acc += L_{r,m} T_{m,s} (m = s + d − 1), then
/// either T_rs = −T_rr acc (r − s = d) or acc back to l's block (s, r) (above the diagonal), row
/// p of acc in l's row 16s + p.
template <int kN>
__device__ __forceinline__ void round_column(RowAlignedTile<kN, kN>& l, RowAlignedTile<kN, kN>& t,
                                             int d, BlockJob job, int lj) {
  const int r0 = kBlock * job.r;
  const int m0 = kBlock * (job.s + d - 1);
  const int j = kBlock * job.s + lj;
  const auto kept = [&](int p) -> float& { return l(kBlock * job.s + p, r0 + lj); };
  float tm[kBlock];  // T(m0 + k, j)
  float acc[kBlock];
  KCV_GLR_UNROLL
  for (int k = 0; k < kBlock; ++k) tm[k] = t(m0 + k, j);
  KCV_GLR_UNROLL
  for (int p = 0; p < kBlock; ++p) {
    float row[kBlock];
    load_row(l, r0 + p, m0, kBlock, row);
    acc[p] = d == 1 ? 0.0f : kept(p);
    KCV_GLR_UNROLL
    for (int k = 0; k < kBlock; ++k) acc[p] += row[k] * tm[k];
  }
  if (job.r - job.s > d) {
    KCV_GLR_UNROLL
    for (int p = 0; p < kBlock; ++p) kept(p) = acc[p];
    return;
  }
  KCV_GLR_UNROLL
  for (int i = 0; i < kBlock; ++i) {  // T_rr is lower triangular: p ≤ i
    float row[kBlock];
    load_row(t, r0 + i, r0, i + 1, row);
    float a = 0.0f;
    KCV_GLR_UNROLL
    for (int p = 0; p <= i; ++p) a += row[p] * acc[p];
    t(r0 + i, j) = -a;
  }
}

}  // namespace tril_columns

/// t = (I + l)^{-1} for l's strict lower triangle (see the file comment); l's blocks above the
/// diagonal are scratch. @pre l's lower triangle complete. Ends with a barrier.
template <int kN>
__device__ void invert_unit_lower_by_columns(RowAlignedTile<kN, kN>& l, RowAlignedTile<kN, kN>& t) {
  using namespace tril_columns;
  static_assert(kN % kBlock == 0, "invert_unit_lower_by_columns: N must be a multiple of 16");
  constexpr int kBlocks = kN / kBlock;
  constexpr int kWarp = arch::kWarpSize;
  for_each_1d(kBlocks * kWarp, [&](int tid) {
    const int b = tid / kWarp;
    const int lane = tid % kWarp;
    if (lane < kBlock) {
      diagonal_column(l, t, b, lane);
    } else {
      for (int i = 0; i < kBlock * b; ++i) t(i, kBlock * b + lane - kBlock) = 0.0f;
    }
  });
  __syncthreads();
  KCV_GLR_UNROLL  // d constant: the round's job table folds
  for (int d = 1; d < kBlocks; ++d) {
    for_each_1d(kBlock * round_half_warps(kBlocks, d), [&](int tid) {
      const BlockJob job = round_job(kBlocks, d, tid / kBlock);
      if (job.r >= 0) round_column(l, t, d, job, tid % kBlock);
    });
    __syncthreads();
  }
}

}  // namespace kcv::glr::gpu::detail
