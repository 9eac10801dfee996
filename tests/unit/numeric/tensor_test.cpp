// File: tests/unit/numeric/tensor_test.cpp
// HostTensor layout: guard bands around storage, storage positions for strided, padded,
// broadcast and offset views, and a C view that points into the tensor's own vectors.
#include "kcv/tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kcv {
namespace {

// The guards-only constructor: contiguous, every guard element the pattern (both sides, past an
// address shift), the elements left for the caller to write.
TEST(HostTensor, GuardsOnlyFillsEveryGuardElementAndLeavesTheElements) {
  const HostTensor t(DType::kF32, {3, 5}, 4, 8, 0x7FC0DEADu, GuardsOnly{});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 15);
  const std::span<const std::byte> raw = t.raw();
  ASSERT_EQ(raw.size(), (15 + 2 * 4) * sizeof(float));
  const auto element = [&](std::size_t k) {
    uint32_t v;
    std::memcpy(&v, raw.data() + k * sizeof v, sizeof v);
    return v;
  };
  for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(element(k), 0x7FC0DEADu) << "front " << k;
  for (std::size_t k = 4 + 15; k < 4 + 15 + 4; ++k) EXPECT_EQ(element(k), 0x7FC0DEADu) << k;
  EXPECT_EQ(t.raw_storage_begin(), 4 * sizeof(float));
}

TEST(HostTensor, PutsGuardBandsAroundStorageAndPoisonsEverything) {
  const int64_t guard = 4;
  HostTensor t(DType::kF32, {2, 3}, {}, 0, guard);
  EXPECT_EQ(t.storage_elems(), 6);
  EXPECT_EQ(t.raw().size(), static_cast<std::size_t>((6 + 2 * guard) * 4));
  EXPECT_EQ(t.raw_storage_begin(), static_cast<std::size_t>(guard * 4));
  EXPECT_EQ(t.data(), t.raw().data() + guard * 4);
  const uint64_t sentinel = initial_fill_bits(DType::kF32);
  for (std::size_t j = 0; j < t.raw().size(); j += 4) {
    uint32_t word = 0;
    std::memcpy(&word, t.raw().data() + j, 4);
    ASSERT_EQ(word, sentinel) << j;
  }
  EXPECT_EQ(classify(DType::kF32, sentinel), FpClass::kNaN);
}

TEST(HostTensor, WritesStayInsideStorage) {
  HostTensor t(DType::kF16, {3, 5}, {}, 0, 8);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.set_value_at(i, static_cast<double>(i));
  }
  const auto bytes = t.raw();
  const std::size_t begin = t.raw_storage_begin();
  const std::size_t end = begin + static_cast<std::size_t>(t.storage_elems()) * 2;
  for (std::size_t j = 0; j < bytes.size(); j += 2) {
    uint16_t half = 0;
    std::memcpy(&half, bytes.data() + j, 2);
    if (j < begin || j >= end) {
      ASSERT_EQ(half, initial_fill_bits(DType::kF16)) << j;
    }
  }
  EXPECT_EQ(t.to_f64()[14], 14.0);
}

TEST(HostTensor, TransposedStridesMapLogicalToColumnMajor) {
  HostTensor t(DType::kF32, {2, 3}, {1, 2});
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.storage_elems(), 6);
  // (r, c) -> r + 2c
  const int64_t expected[] = {0, 2, 4, 1, 3, 5};
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(t.storage_index(i), expected[i]) << i;
  }
}

TEST(HostTensor, PaddedRowsLeaveUncoveredStorage) {
  HostTensor t(DType::kF32, {2, 3}, {5, 1});
  EXPECT_EQ(t.storage_elems(), 8);
  EXPECT_EQ(t.storage_index(3), 5);
  const std::vector<bool> covered = t.covered_storage();
  const std::vector<bool> expected = {true, true, true, false, false, true, true, true};
  EXPECT_EQ(covered, expected);
}

TEST(HostTensor, BroadcastStrideZeroRepeatsRowZero) {
  HostTensor t(DType::kF32, {4, 3}, {0, 1});
  EXPECT_EQ(t.storage_elems(), 3);
  t.set_value_at(1, 2.5);
  EXPECT_EQ(t.value_at(10), 2.5);  // (3, 1) shares storage with (0, 1)
  EXPECT_EQ(t.storage_index(11), 2);
}

TEST(HostTensor, StorageOffsetShiftsDataAndIndices) {
  HostTensor t(DType::kF64, {4}, {}, 7, 2);
  EXPECT_EQ(t.storage_elems(), 11);
  EXPECT_EQ(t.storage_index(0), 7);
  EXPECT_EQ(t.data(), t.raw().data() + (2 + 7) * 8);
  const std::vector<bool> covered = t.covered_storage();
  EXPECT_FALSE(covered[6]);
  EXPECT_TRUE(covered[7]);
  EXPECT_TRUE(t.is_contiguous());
}

TEST(HostTensor, AddressShiftMovesDataButNotRaw) {
  HostTensor plain(DType::kF32, {8}, {}, 0, 4, 0);
  HostTensor shifted(DType::kF32, {8}, {}, 0, 4, 4);
  EXPECT_EQ(plain.raw().size(), shifted.raw().size());
  const auto a = reinterpret_cast<std::uintptr_t>(plain.data());
  const auto b = reinterpret_cast<std::uintptr_t>(shifted.data());
  EXPECT_EQ(a % 8, 0u);  // operator new aligns to 16, the guard is 16 bytes
  EXPECT_EQ(b % 8, 4u);
}

TEST(HostTensor, ContiguousCopyKeepsLogicalValues) {
  HostTensor t(DType::kBF16, {3, 2}, {1, 3}, 2);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.set_value_at(i, 1.0 + static_cast<double>(i));
  }
  const HostTensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.storage_elems(), 6);
  EXPECT_EQ(c.to_f64(), t.to_f64());
  EXPECT_EQ(c.to_f64()[5], 6.0);
}

TEST(HostTensor, SetValueRoundsToTheDtype) {
  HostTensor t(DType::kF16, {1});
  t.set_value_at(0, 1.0 + 1.0 / 4096);  // below the f16 tie at 1 + 2^-11
  EXPECT_EQ(t.bits_at(0), 0x3C00u);
  t.set_bits_at(0, 0x7E01u);
  EXPECT_TRUE(std::isnan(t.value_at(0)));
}

TEST(HostTensor, ViewPointsIntoTheTensor) {
  HostTensor t(DType::kF32, {2, 3}, {5, 1}, 1);
  const kcv_tensor v = t.view();
  EXPECT_EQ(v.data, static_cast<void*>(t.data()));
  EXPECT_EQ(v.dtype, KCV_F32);
  EXPECT_EQ(v.ndim, 2);
  EXPECT_EQ(v.shape, t.shape().data());
  EXPECT_EQ(v.strides, t.strides().data());
  EXPECT_EQ(v.strides[0], 5);
}

TEST(HostTensor, FillRawRepeatsTheElementPattern) {
  HostTensor t(DType::kI32, {3}, {}, 0, 1);
  t.fill_raw(0x01020304u);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.bits_at(i), 0x01020304u);
  }
  EXPECT_EQ(static_cast<uint8_t>(t.raw()[0]), 0x04);
}

TEST(HostTensor, MakeTensorIsContiguousAndRounded) {
  const HostTensor t = make_tensor(DType::kF32, {2, 2}, {0.1, 0.2, 0.3, 0.4});
  EXPECT_EQ(t.value_at(0), static_cast<double>(0.1f));
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(numel({2, 3, 4}), 24);
  EXPECT_EQ(numel({}), 1);
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
}

}  // namespace
}  // namespace kcv

#if defined(__x86_64__)
// value_at reads normal fp32 values through the hardware conversion; a subnormal must not go
// that way, because under DAZ (set by a fast-math library loaded in-process) it would read as 0.
TEST(HostTensor, ValueAtKeepsFp32SubnormalsUnderDenormalsAreZero) {
  kcv::HostTensor t(kcv::DType::kF32, {3});
  const uint32_t bits[3] = {3u, 0x3F800000u, 0x7FC0DEADu};  // subnormal, 1.0, NaN with payload
  for (int64_t i = 0; i < 3; ++i) t.set_bits_at(i, bits[i]);
  const unsigned saved = __builtin_ia32_stmxcsr();
  __builtin_ia32_ldmxcsr(saved | 0x8040u);  // DAZ and FTZ on
  const double sub = t.value_at(0), one = t.value_at(1), nan = t.value_at(2);
  __builtin_ia32_ldmxcsr(saved);
  EXPECT_EQ(sub, std::ldexp(3.0, -149));
  EXPECT_EQ(one, 1.0);
  EXPECT_TRUE(std::isnan(nan));
}
#endif
