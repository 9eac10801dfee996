// File: tests/unit/exec/byte_passes_test.cpp
// The buffer audit's byte passes give the serial pass's bytes and positions whatever the size:
// below kBytesInParallelFrom they run once, above it by ranges on threads, and the ranges'
// boundaries must not show (a pattern's phase, a random byte's position, the first difference).
#include "exec/byte_passes.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "exec/buffer_audit.hpp"
#include "exec/sentinel.hpp"

namespace kcv::exec {
namespace {

// Large enough to run on threads, and not a multiple of any range's block.
constexpr std::size_t kLarge = kBytesInParallelFrom + 4096 + 37;

uint8_t pattern_byte(uint64_t bits, std::size_t size, std::size_t j) {
  return static_cast<uint8_t>((bits >> (8 * (j % size))) & 0xFF);
}

uint8_t random_byte(const CounterRng& rng, std::size_t p) {
  return static_cast<uint8_t>((rng.bits(p / 8) >> (8 * (p % 8))) & 0xFF);
}

TEST(BytePasses, FillPatternKeepsTheElementsPhaseAcrossRanges) {
  for (const std::size_t size : {1u, 2u, 4u, 8u}) {
    std::vector<std::byte> bytes(kLarge);
    const uint64_t bits = 0x0102030405060708ull;
    fill_pattern(bytes, bits, size);
    for (std::size_t j = 0; j < bytes.size(); ++j)
      ASSERT_EQ(static_cast<uint8_t>(bytes[j]), pattern_byte(bits, size, j)) << size << " " << j;
  }
}

TEST(BytePasses, FillRandomGivesEachPositionItsOwnBitsWhateverPartIsFilled) {
  const CounterRng rng(7, 11);
  std::vector<std::byte> whole(kLarge);
  fill_random(whole, 0, rng);
  for (std::size_t p = 0; p < whole.size(); ++p)
    ASSERT_EQ(static_cast<uint8_t>(whole[p]), random_byte(rng, p)) << p;
  const std::size_t first = 3;  // a part that starts inside a word
  std::vector<std::byte> part(kLarge - first);
  fill_random(part, first, rng);
  EXPECT_EQ(std::memcmp(part.data(), whole.data() + first, part.size()), 0);
}

TEST(BytePasses, FirstDifferenceIsTheEarliestOneWhereverTheRangesFall) {
  std::vector<std::byte> a(kLarge, std::byte{1});
  std::vector<std::byte> b = a;
  EXPECT_EQ(first_difference(a, b), -1);
  for (const std::size_t at : {std::size_t{0}, kLarge / 2, kLarge / 2 - 1, std::size_t{4096},
                               kLarge - 1}) {
    b = a;
    b[at] = std::byte{2};
    EXPECT_EQ(first_difference(b, a), static_cast<int64_t>(at)) << at;
    b[kLarge - 1] = std::byte{3};  // a later difference in a later range changes nothing
    EXPECT_EQ(first_difference(b, a), static_cast<int64_t>(at)) << at;
  }
}

TEST(BytePasses, CopyBytesIsMemcpy) {
  std::vector<std::byte> from(kLarge), to(kLarge);
  fill_random(from, 0, CounterRng(1, 2));
  copy_bytes(to, from);
  EXPECT_EQ(to, from);
}

// prepare_buffers over a large dense input and output: the inputs' guards get their fill, the
// elements are the caller's, every output byte holds the sentinel, and the audit finds the first
// unwritten output element past the ranges' boundaries.
TEST(BytePasses, ALargeCallsBuffersAreTheSerialOnes) {
  const int64_t n = static_cast<int64_t>(kLarge / 4);
  HostTensor input(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) input.set_bits_at(i, static_cast<uint64_t>(i) * 2654435761u);
  CallOptions o;
  o.randomize_guards = true;
  o.guard_seed = 5;
  o.sentinel_seed = 9;
  o.address_shift = 4;
  CallBuffers b = prepare_buffers({input}, {{DType::kF32, {n}}}, o);
  const HostTensor& in = b.inputs[0];
  const auto raw = in.raw();
  const std::size_t begin = in.raw_storage_begin(), end = begin + static_cast<std::size_t>(n) * 4;
  const CounterRng rng(5, (0x4755415244ull << 24) + 0);
  for (std::size_t p = 0; p < raw.size(); ++p) {
    if (p >= begin && p < end) continue;
    ASSERT_EQ(static_cast<uint8_t>(raw[p]), random_byte(rng, p)) << p;
  }
  EXPECT_EQ(std::memcmp(in.data(), input.data(), end - begin), 0);

  const uint64_t s = sentinel_bits(DType::kF32, 9);
  const auto out = b.outputs[0].raw();
  for (std::size_t j = 0; j < out.size(); ++j)
    ASSERT_EQ(static_cast<uint8_t>(out[j]), pattern_byte(s, 4, j)) << j;

  for (int64_t i = 0; i < n; ++i) b.outputs[0].set_bits_at(i, 0);
  b.outputs[0].set_bits_at(n - 2, s);  // unwritten, in the last range
  b.outputs[0].set_bits_at(n / 2 + 1, s);  // and earlier, past the middle
  CallRecord rec;
  audit_buffers(b, rec);
  EXPECT_FALSE(rec.all_written);
  EXPECT_EQ(rec.first_unwritten, n / 2 + 1);
  EXPECT_TRUE(rec.inputs_unchanged);
  EXPECT_TRUE(rec.guards_intact);
}

}  // namespace
}  // namespace kcv::exec
