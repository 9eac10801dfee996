// File: glr/kernels/config.hpp
// Compile-time sizes shared by the stage kernels and their launcher. Chunk size and sub-chunk size
// are those of the chunked reference (gdn-spec.md §2, §8); head dimensions up to kMaxDim are held
// in full in shared memory and padded with zeros (any K, V in 1..kMaxDim, e.g. 100). The serial
// passes split the value dimension into kStateTile columns per CTA (state columns are independent,
// §13), the output stage into kOutTile columns.
#pragma once

namespace kcv::glr::gpu::detail {

inline constexpr int kChunk = 64;      ///< C
inline constexpr int kSubChunk = 16;   ///< block size of the triangular inverse
inline constexpr int kMaxDim = 128;    ///< largest K and V
inline constexpr int kThreads = 256;   ///< threads of every stage CTA
inline constexpr int kStateTile = 32;  ///< value columns per CTA of the state and dh passes
inline constexpr int kOutTile = 64;    ///< value columns per CTA of the output stage
/// Dynamic shared memory one CTA may opt into on sm_90 (227 KB); every stage's shared-storage
/// struct is checked against it at compile time.
inline constexpr unsigned kMaxSharedBytes = 227u * 1024u;

static_assert(kChunk % kSubChunk == 0, "chunk size must be a multiple of the sub-chunk size");

}  // namespace kcv::glr::gpu::detail
