// File: tests/unit/exec/sentinel_test.cpp
// The output sentinel must be a pattern no correct kernel produces: signalling NaNs for floats
// (IEEE arithmetic only ever returns quiet NaNs), large magnitudes for integers, a non-0/1 byte
// for bool; and it must change with the per-call seed.
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <set>

#include "kcv/executor.hpp"

namespace kcv {
namespace {

constexpr uint64_t kSeeds = 256;

// The quiet bit is the top mantissa bit: 51, 22, 9 and 6 for f64, f32, f16, bf16.
uint64_t quiet_bit(DType t) {
  switch (t) {
    case DType::kF64:
      return uint64_t{1} << 51;
    case DType::kF32:
      return uint64_t{1} << 22;
    case DType::kF16:
      return uint64_t{1} << 9;
    default:
      return uint64_t{1} << 6;
  }
}

TEST(Sentinel, FloatSentinelsAreSignallingNaNs) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    for (uint64_t seed = 0; seed < kSeeds; ++seed) {
      const uint64_t s = sentinel_bits(t, seed);
      EXPECT_EQ(classify(t, s), FpClass::kNaN) << dtype_name(t) << " seed " << seed;
      EXPECT_EQ(s & quiet_bit(t), 0u) << dtype_name(t) << " seed " << seed;
      if (dtype_size(t) < 8) {
        EXPECT_EQ(s >> (8 * dtype_size(t)), 0u) << dtype_name(t);  // fits the element
      }
    }
  }
}

TEST(Sentinel, ArithmeticNeverReturnsTheSentinel) {
  // Every operand volatile, so the operations run on the FPU (GCC may fold x * 1 to x, as it
  // assumes no signalling NaNs; that copies the pattern rather than computing a result).
  volatile float zero_f = 0.0f, one_f = 1.0f;
  volatile double zero_d = 0.0, one_d = 1.0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    const uint32_t s32 = static_cast<uint32_t>(sentinel_bits(DType::kF32, seed));
    volatile float f = std::bit_cast<float>(s32);
    EXPECT_NE(std::bit_cast<uint32_t>(static_cast<float>(f + zero_f)), s32);
    EXPECT_NE(std::bit_cast<uint32_t>(static_cast<float>(f * one_f)), s32);
    const uint64_t s64 = sentinel_bits(DType::kF64, seed);
    volatile double d = std::bit_cast<double>(s64);
    EXPECT_NE(std::bit_cast<uint64_t>(static_cast<double>(d - zero_d)), s64);
    EXPECT_NE(std::bit_cast<uint64_t>(static_cast<double>(d * one_d)), s64);
  }
}

TEST(Sentinel, ChangesWithTheSeed) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64,
                  DType::kBool}) {
    std::set<uint64_t> seen;
    for (uint64_t seed = 0; seed < kSeeds; ++seed) seen.insert(sentinel_bits(t, seed));
    EXPECT_GT(seen.size(), 1u) << dtype_name(t);
    EXPECT_EQ(sentinel_bits(t, 11), sentinel_bits(t, 11)) << dtype_name(t);
  }
}

TEST(Sentinel, IntegerSentinelsAreFarFromIndicesAndFlags) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    const auto i32 = static_cast<int32_t>(static_cast<uint32_t>(sentinel_bits(DType::kI32, seed)));
    EXPECT_GE(std::llabs(static_cast<long long>(i32)), 1LL << 30);
    const auto i64 = static_cast<int64_t>(sentinel_bits(DType::kI64, seed));
    EXPECT_TRUE(i64 >= (int64_t{1} << 62) || i64 <= -(int64_t{1} << 62)) << i64;
    const uint64_t b = sentinel_bits(DType::kBool, seed);
    EXPECT_GT(b, 1u);
    EXPECT_LE(b, 0xFFu);
  }
}

}  // namespace
}  // namespace kcv
