// File: glr/tiles/tile.cuh
// Tile<R, C>: an fp32 R×C matrix in shared memory, row-major with one padding column (row stride
// C + 1), so that 32 threads reading one column of 32 consecutive rows hit 32 different banks;
// RowAlignedTile<R, C> the same with 16-byte aligned rows (stride C + 4), for rows read by vector
// loads.
// Tiles live as members of a kernel's shared-storage struct (CUTLASS's SharedStorage idea), whose
// sizeof is the dynamic shared memory the launcher asks for.
// load_rows fills the whole R×C tile: rows below `rows` and columns below `cols` come from global
// memory, everything else is set to zero, so a tile never holds stale values from an earlier phase
// (padded rows of a ragged chunk, padded columns of K = 100).
#pragma once

#include <cstdint>

#include "glr/tiles/block_loops.cuh"
#include "glr/tiles/convert.cuh"

namespace kcv::glr::gpu::detail {

template <int kRows, int kCols>
struct Tile {
  static constexpr int kStride = kCols + 1;
  float data[kRows * kStride];

  __device__ __forceinline__ float& operator()(int i, int j) { return data[i * kStride + j]; }
  __device__ __forceinline__ float operator()(int i, int j) const { return data[i * kStride + j]; }
};

/// An fp32 R×C matrix in shared memory whose rows start 16-byte aligned (row stride C + 4), so that
/// a row can be read four elements per load (arch::load_f32x4). Lanes reading one column of 32
/// rows conflict 4-way: for tiles read along rows (the operands of the triangular inverse).
template <int kRows, int kCols>
struct alignas(16) RowAlignedTile {
  static constexpr int kStride = kCols + 4;
  float data[kRows * kStride];

  __device__ __forceinline__ float& operator()(int i, int j) { return data[i * kStride + j]; }
  __device__ __forceinline__ float operator()(int i, int j) const { return data[i * kStride + j]; }
  __device__ __forceinline__ const float* ptr(int i, int j) const { return data + i * kStride + j; }
};

/// dst(i, j) = src[i·row_stride + j] for i < rows, j < cols; 0 elsewhere in the tile.
template <int kRows, int kCols, typename T>
__device__ void load_rows(Tile<kRows, kCols>& dst, const T* src, std::int64_t row_stride, int rows,
                          int cols) {
  for_each_2d(kRows, kCols, [&](int i, int j) {
    dst(i, j) = (i < rows && j < cols) ? to_float(src[i * row_stride + j]) : 0.0f;
  });
}

/// dst(i, j) = f(i, j) for i < rows, j < cols; 0 elsewhere (f is never called there).
template <int kRows, int kCols, typename F>
__device__ void fill(Tile<kRows, kCols>& dst, int rows, int cols, F&& f) {
  for_each_2d(kRows, kCols,
              [&](int i, int j) { dst(i, j) = (i < rows && j < cols) ? f(i, j) : 0.0f; });
}

}  // namespace kcv::glr::gpu::detail
