// File: src/exec/byte_passes.cpp
// The byte passes, serial for small buffers and by 64-byte-aligned ranges on threads for large.
#include "exec/byte_passes.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "gates/parallel.hpp"

namespace kcv::exec {
namespace {

constexpr std::size_t kBlock = 64;  // range boundaries: a multiple of every element size

// body(begin, end) over [0, n) bytes: once below kBytesInParallelFrom, else by ranges of whole
// blocks on threads; body(k-th range) gets range index k through `index` when it wants it.
template <class Body>
void for_byte_ranges(std::size_t n, Body&& body) {
  if (n < kBytesInParallelFrom) {
    body(std::size_t{0}, std::size_t{0}, n);
    return;
  }
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  const std::size_t chunks = gates::chunk_count(blocks, gates::Split{1, 0});
  gates::for_each_chunk(blocks, chunks, [&](std::size_t k, std::size_t first, std::size_t last) {
    body(k, first * kBlock, std::min(n, last * kBlock));
  });
}

std::size_t range_count(std::size_t n) {
  if (n < kBytesInParallelFrom) return 1;
  return gates::chunk_count((n + kBlock - 1) / kBlock, gates::Split{1, 0});
}

// The serial fill of a range that starts at a whole element: one element, then doubling copies.
void fill_pattern_serial(std::span<std::byte> bytes, uint64_t element_bits,
                         std::size_t element_size) {
  if (bytes.size() < element_size) {
    for (std::size_t j = 0; j < bytes.size(); ++j)
      bytes[j] = static_cast<std::byte>((element_bits >> (8 * j)) & 0xFF);
    return;
  }
  std::memcpy(bytes.data(), &element_bits, element_size);  // little-endian: low bytes first
  for (std::size_t filled = element_size; filled < bytes.size();) {
    const std::size_t n = std::min(filled, bytes.size() - filled);
    std::memcpy(bytes.data() + filled, bytes.data(), n);
    filled += n;
  }
}

void fill_random_serial(std::span<std::byte> bytes, std::size_t first, const CounterRng& rng) {
  std::size_t j = 0;
  while (j < bytes.size()) {
    const std::size_t p = first + j;
    const uint64_t bits = rng.bits(p / 8);
    const std::size_t from = p % 8;
    const std::size_t n = std::min<std::size_t>(8 - from, bytes.size() - j);
    for (std::size_t b = 0; b < n; ++b)
      bytes[j + b] = static_cast<std::byte>((bits >> (8 * (from + b))) & 0xFF);
    j += n;
  }
}

int64_t first_difference_serial(std::span<const std::byte> now, std::span<const std::byte> before) {
  // memcmp over blocks (vectorized in libc; the byte loop of std::mismatch is several times
  // slower on the inputs of every call), then the block that differs byte by byte.
  constexpr std::size_t kCompareBlock = 4096;
  for (std::size_t at = 0; at < now.size(); at += kCompareBlock) {
    const std::size_t n = std::min(kCompareBlock, now.size() - at);
    if (std::memcmp(now.data() + at, before.data() + at, n) == 0) continue;
    const auto mismatch = std::mismatch(now.begin() + static_cast<std::ptrdiff_t>(at),
                                        now.begin() + static_cast<std::ptrdiff_t>(at + n),
                                        before.begin() + static_cast<std::ptrdiff_t>(at));
    return static_cast<int64_t>(mismatch.first - now.begin());
  }
  return -1;
}

}  // namespace

void copy_bytes(std::span<std::byte> to, std::span<const std::byte> from) {
  for_byte_ranges(from.size(), [&](std::size_t, std::size_t begin, std::size_t end) {
    std::memcpy(to.data() + begin, from.data() + begin, end - begin);
  });
}

void fill_pattern(std::span<std::byte> bytes, uint64_t element_bits, std::size_t element_size) {
  for_byte_ranges(bytes.size(), [&](std::size_t, std::size_t begin, std::size_t end) {
    fill_pattern_serial(bytes.subspan(begin, end - begin), element_bits, element_size);
  });
}

void fill_random(std::span<std::byte> bytes, std::size_t first, const CounterRng& rng) {
  for_byte_ranges(bytes.size(), [&](std::size_t, std::size_t begin, std::size_t end) {
    fill_random_serial(bytes.subspan(begin, end - begin), first + begin, rng);
  });
}

int64_t first_difference(std::span<const std::byte> now, std::span<const std::byte> before) {
  std::vector<int64_t> found(range_count(now.size()), -1);
  for_byte_ranges(now.size(), [&](std::size_t k, std::size_t begin, std::size_t end) {
    const int64_t at = first_difference_serial(now.subspan(begin, end - begin),
                                               before.subspan(begin, end - begin));
    if (at >= 0) found[k] = static_cast<int64_t>(begin) + at;
  });
  for (const int64_t at : found)
    if (at >= 0) return at;  // the earliest range's: the serial pass's answer
  return -1;
}

}  // namespace kcv::exec
