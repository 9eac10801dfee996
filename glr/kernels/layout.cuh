// File: glr/kernels/layout.cuh
// Where things are: 64-bit flat offsets into the caller's token-major tensors and the workspace
// (params.hpp lists them), the state layouts, and which chunk a CTA of a chunk-parallel stage owns.
// Every offset is computed in int64 (B·T·H·K passes 2^31 at real sizes, fla issue #1080).
#pragma once

#include <cstdint>

#include "glr/kernels/config.hpp"
#include "glr/kernels/params.hpp"

namespace kcv::glr::gpu::detail {

/// Row stride and row offset of the token-major tensors.
__device__ __forceinline__ std::int64_t qk_row(const Params& p, std::int64_t t, int hv) {
  return (t * p.qk_heads + hv / p.group) * p.key_dim;  // GVA: value head hv reads q/k head hv/group
}
__device__ __forceinline__ std::int64_t qk_stride(const Params& p) {
  return static_cast<std::int64_t>(p.qk_heads) * p.key_dim;
}
/// Offset of row t of a [T, HV, width] tensor for value head hv; its row stride is HV·width.
__device__ __forceinline__ std::int64_t head_row(const Params& p, std::int64_t t, int hv,
                                                 int width) {
  return (t * p.v_heads + hv) * width;
}
__device__ __forceinline__ std::int64_t head_stride(const Params& p, int width) {
  return static_cast<std::int64_t>(p.v_heads) * width;
}
/// Element (d, e) of the K×V per-chunk state cg of value head hv (workspace, always K×V).
__device__ __forceinline__ std::int64_t chunk_state(const Params& p, std::int64_t cg, int hv, int d,
                                                    int e) {
  return ((cg * p.v_heads + hv) * p.key_dim + d) * static_cast<std::int64_t>(p.value_dim) + e;
}
/// Element (d, e) of the state of sequence n in the caller's layout ([K, V] or [V, K]).
__device__ __forceinline__ std::int64_t user_state(const Params& p, std::int64_t n, int hv, int d,
                                                   int e) {
  const std::int64_t base =
      (n * p.v_heads + hv) * static_cast<std::int64_t>(p.key_dim) * p.value_dim;
  return p.state_kv ? base + static_cast<std::int64_t>(d) * p.value_dim + e
                    : base + static_cast<std::int64_t>(e) * p.key_dim + d;
}

/// One chunk of one sequence: tokens [t0, t0 + rows), global chunk index cg.
struct ChunkCoords {
  bool valid = false;
  std::int64_t seq = 0;
  std::int64_t cg = 0;
  std::int64_t t0 = 0;
  int rows = 0;
};

/// The chunk with global index cg (a chunk-parallel CTA's blockIdx.x); invalid past the last one
/// (the grid is sized by an upper bound). Binary search over chunk_offsets: empty sequences own no
/// chunk and are skipped.
__device__ __forceinline__ ChunkCoords locate_chunk(const Params& p, std::int64_t cg) {
  ChunkCoords c;
  if (cg >= p.chunk_offsets[p.sequences]) return c;
  std::int64_t lo = 0;
  std::int64_t hi = p.sequences;  // invariant: chunk_offsets[lo] <= cg < chunk_offsets[hi]
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (p.chunk_offsets[mid] <= cg)
      lo = mid;
    else
      hi = mid;
  }
  c.valid = true;
  c.seq = lo;
  c.cg = cg;
  c.t0 = p.bounds[lo] + (cg - p.chunk_offsets[lo]) * kChunk;
  const std::int64_t left = p.bounds[lo + 1] - c.t0;
  c.rows = static_cast<int>(left < kChunk ? left : kChunk);
  return c;
}

/// The sequence walk of a serial pass: (sequence, value head, column tile) from blockIdx.x.
struct SerialCoords {
  std::int64_t seq = 0;
  int hv = 0;
  int col0 = 0;  ///< first value column of the tile
  int cols = 0;  ///< value columns in the tile
  std::int64_t bos = 0;
  std::int64_t eos = 0;
  std::int64_t first_chunk = 0;
  std::int64_t chunks = 0;
};

__device__ __forceinline__ SerialCoords serial_coords(const Params& p, int tile_cols) {
  const int tiles = (p.value_dim + tile_cols - 1) / tile_cols;
  const std::int64_t b = blockIdx.x;
  SerialCoords s;
  s.col0 = static_cast<int>(b % tiles) * tile_cols;
  s.hv = static_cast<int>((b / tiles) % p.v_heads);
  s.seq = b / tiles / p.v_heads;
  s.cols = p.value_dim - s.col0 < tile_cols ? p.value_dim - s.col0 : tile_cols;
  s.bos = p.bounds[s.seq];
  s.eos = p.bounds[s.seq + 1];
  s.first_chunk = p.chunk_offsets[s.seq];
  s.chunks = p.chunk_offsets[s.seq + 1] - s.first_chunk;
  return s;
}

}  // namespace kcv::glr::gpu::detail
