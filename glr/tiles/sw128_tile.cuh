// File: glr/tiles/sw128_tile.cuh
// Shared-memory bf16 tiles in the 128-byte swizzled panel layout that wgmma reads
// (glr/arch/wgmma.cuh, sw128_offset), their asynchronous fill from global memory, and the
// warpgroup product over whole tiles:
//   Sw128Bf16<R, C>      R × C bf16 (R a multiple of 8, C of 64), 1024-byte aligned
//   copy_rows_async_fixed   mma_tile.cuh's, into such a tile
//   wgmma_product        D = Σ over k-steps of wgmma_bf16 into a warp's AccTile row block
// The host emulation runs them through the emulated atoms; glr/dev/wgmma_layout_test.cpp and
// glr_wgmma_check test the atoms, the kernels' tests these.
#pragma once

#include <cstdint>

#include "glr/arch/cp_async.cuh"
#include "glr/arch/lanes.cuh"
#include "glr/arch/wgmma.cuh"
#include "glr/tiles/mma_tile.cuh"

namespace kcv::glr::gpu::detail {

template <int kRows, int kCols>
struct alignas(arch::kSw128Align) Sw128Bf16 {
  static_assert(kRows % 8 == 0 && kCols % arch::kSw128PanelCols == 0,
                "Sw128Bf16: whole 8-row groups and 64-column panels");
  static constexpr int kR = kRows;
  bf16 data[kRows * kCols];

  /// Element (i, j); j and j + 1 are adjacent for even j (a pair store), as are the 8 elements of
  /// a 16-byte piece (j a multiple of 8).
  __device__ __forceinline__ bf16* ptr(int i, int j) {
    return data + arch::sw128_offset(kRows, i, j) / 2;
  }
  __device__ __forceinline__ const bf16* ptr(int i, int j) const {
    return data + arch::sw128_offset(kRows, i, j) / 2;
  }
  __device__ __forceinline__ float at(int i, int j) const {
    return arch::bf16_bits_to_float(arch::bf16_bits(*ptr(i, j)));
  }
};

/// copy_rows_async_fixed (mma_tile.cuh) into a swizzled tile: rows [0, R) × C columns from src (row
/// i at src + i·row_stride, 16-byte aligned), rows ≥ valid_rows zero-filled and not read, by the
/// kThreads threads from warp kFirstWarp on, thread t the pieces t, t + kThreads, …; each piece's
/// destination from sw128_offset (32-bit arithmetic: the swizzle moves a piece within its row).
template <int kThreads, int kFirstWarp = 0, int R, int C>
__device__ __forceinline__ void copy_rows_async_fixed(Sw128Bf16<R, C>& dst, const bf16* src,
                                                      std::int64_t row_stride, int valid_rows) {
  constexpr int kPieces = C / 8;
  static_assert(kThreads % kPieces == 0 && (R * kPieces) % kThreads == 0,
                "copy_rows_async_fixed: whole rows of pieces per thread step");
  constexpr int kRowStep = kThreads / kPieces;
  arch::for_each_lane([&](int lane, int) {
    const int t = (arch::warp_id() - kFirstWarp) * arch::kWarpSize + lane;
    const int i0 = t / kPieces;
    const int j = 8 * (t % kPieces);
    const bf16* s = src + i0 * row_stride + j;
    const std::int64_t step = kRowStep * row_stride;
    KCV_GLR_UNROLL
    for (int k = 0; k < R / kRowStep; ++k) {
      const int i = i0 + k * kRowStep;
      const bool valid = i < valid_rows;
      arch::cp_async_16(dst.ptr(i, j), valid ? s : src + j, valid);
      s += step;
    }
  });
}

/// The warpgroup's product D = A·B over k-steps [0, k_steps) into the calling warp's row block of
/// D (rows 16·(warp mod 4) … of the 64 that A's m names; an AccTile<R, N>'s f[m]): A's m at rows 0
/// … of `a` (Major::kK, k along its columns) or at columns a_c0 … (Major::kMN, k along its rows),
/// B's n at columns b_c0 … of `b` (Major::kMN, k along its rows). Every warp of the warpgroup calls
/// it with the same arguments. The shared tiles it reads must have been published to the async
/// proxy (arch::fence_proxy_async_shared() by their writers, then a barrier). Returns with the
/// products complete (wait 0): D's fragments hold Σ_k A·B, k-steps in order, each element from
/// zero.
template <arch::Major kA, int kN8, int RA, int CA, int RB, int CB>
__device__ __forceinline__ void wgmma_product(arch::FragC (&d)[kN8], const Sw128Bf16<RA, CA>& a,
                                              int a_c0, const Sw128Bf16<RB, CB>& b, int b_c0,
                                              int k_steps) {
  constexpr int N = 8 * kN8;
  arch::wgmma_fence_operand<N>(d);  // D's earlier register accesses stay before the products
  arch::wgmma_fence();
  KCV_GLR_UNROLL
  for (int s = 0; s < k_steps; ++s) {
    const arch::WgmmaDesc da = kA == arch::Major::kK ? arch::sw128_desc_k(a.data, RA, s)
                                                     : arch::sw128_desc_mn(a.data, RA, s, a_c0);
    arch::wgmma_bf16<N, kA, arch::Major::kMN>(d, da, arch::sw128_desc_mn(b.data, RB, s, b_c0),
                                              s > 0);
  }
  arch::wgmma_commit();
  arch::wgmma_wait<0>();
  arch::wgmma_fence_operand<N>(d);
}

}  // namespace kcv::glr::gpu::detail
