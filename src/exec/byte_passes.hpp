// File: src/exec/byte_passes.hpp
// The buffer audit's passes over whole buffers, on threads when a buffer is large. Every call
// of a candidate fills, copies and compares buffers as large as the problem's inputs and outputs
// (hundreds of megabytes in the corpora), one pass after another, and a single thread does
// about 10 GB/s where the host has several times that. A large pass is cut into contiguous
// ranges of whole 64-byte blocks in order (gates/parallel.hpp), each on its own thread; every
// result is the serial pass's: the same bytes written, the first differing byte found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kcv/rng.hpp"

namespace kcv::exec {

/// Passes over fewer bytes stay on the calling thread: a thread costs ~0.1 ms to start, a
/// single-threaded pass over 8 MiB about 1 ms.
inline constexpr std::size_t kBytesInParallelFrom = std::size_t{8} << 20;

/// memcpy of `from` into `to` (same size, no overlap).
void copy_bytes(std::span<std::byte> to, std::span<const std::byte> from);

/// Every byte of `bytes` set to the repeating little-endian pattern of `element_bits`, one
/// element of `element_size` (1, 2, 4 or 8) bytes after another from bytes[0].
void fill_pattern(std::span<std::byte> bytes, uint64_t element_bits, std::size_t element_size);

/// bytes[j] = byte (p % 8) of rng.bits(p / 8) where p = first + j: the random contents a buffer
/// gets at its positions [first, first + bytes.size()), the same whichever part is filled.
void fill_random(std::span<std::byte> bytes, std::size_t first, const CounterRng& rng);

/// First byte where `now` differs from `before` (same size), or -1.
int64_t first_difference(std::span<const std::byte> now, std::span<const std::byte> before);

}  // namespace kcv::exec
