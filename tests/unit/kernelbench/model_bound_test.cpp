// File: tests/unit/kernelbench/model_bound_test.cpp
// The error scale E of the module bound: the worst eager error over elements finite in both,
// floored at one output rounding of the RMS; exact zeros of both are not informative; and the
// two no-claim rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

TEST(EagerScale, WorstFiniteErrorFlooredAtOneRounding) {
  const std::vector<double> y = {1.0, -2.0, 0.0, std::numeric_limits<double>::infinity()};
  const HostTensor eager = make_tensor(DType::kF32, {4}, {1.0 + 0x1p-20, -2.0, 0.0, 1.0});
  const EagerScale s = eager_scale(DType::kF32, y, eager);
  EXPECT_DOUBLE_EQ(s.e, 0x1p-20);
  EXPECT_EQ(s.informative, 2);  // the exact zero of both and the non-finite y* do not count
  const HostTensor exact = make_tensor(DType::kF32, {4}, {1.0, -2.0, 0.0, 1.0});
  const double rms = std::sqrt((1.0 + 4.0 + 0.0) / 3.0);
  EXPECT_DOUBLE_EQ(eager_scale(DType::kF32, y, exact).e, 0x1p-24 * rms);
}

// Above 2^20 elements the pass runs on threads by fixed blocks of 2^20 (gates::reduce_blocks):
// E is the block-ordered sum's, whatever the number of threads, and the counts are exact.
TEST(EagerScale, ALargeOutputSumsByFixedBlocksOnAnyNumberOfThreads) {
  const std::size_t n = (std::size_t{1} << 20) * 2 + 12345;
  std::vector<double> y(n);
  std::vector<double> got(n);
  for (std::size_t i = 0; i < n; ++i) {
    // values exact in f32 (eager error 0, so E is the RMS floor) whose sum of squares rounds
    // differently in one serial loop than by blocks
    y[i] = std::ldexp(1.0 + static_cast<double>((i * 2654435761u) % 8388608) * 0x1p-23,
                      static_cast<int>(i % 13) - 6);
    got[i] = y[i];
  }
  y[17] = 0.0;
  got[17] = 0.0;  // an exact zero of both: not informative
  const HostTensor eager = make_tensor(DType::kF32, {static_cast<int64_t>(n)}, got);
  // The serial loop over blocks of 2^20, each block's sum added in block order.
  double worst = 0, sum_sq = 0;
  int64_t finite = 0, informative = 0;
  for (std::size_t b = 0; b < n; b += std::size_t{1} << 20) {
    double block = 0;
    for (std::size_t i = b; i < std::min(n, b + (std::size_t{1} << 20)); ++i) {
      const double e = static_cast<double>(static_cast<float>(got[i]));
      worst = std::max(worst, std::fabs(e - y[i]));
      block += y[i] * y[i];
      ++finite;
      if (!(y[i] == 0 && e == 0)) ++informative;
    }
    sum_sq += block;
  }
  const double want = std::max(worst, 0x1p-24 * std::sqrt(sum_sq / static_cast<double>(finite)));
  const EagerScale s = eager_scale(DType::kF32, y, eager);
  EXPECT_EQ(s.e, want);
  EXPECT_EQ(s.informative, informative);
  EXPECT_EQ(informative, static_cast<int64_t>(n) - 1);
}

// The pooled scale reads a reference64 run's f64 output in place: the same E and counts as from
// its fp64 copy, bit for bit (the same elements in the same block order).
TEST(EagerScale, AnF64OutputReadInPlaceGivesItsCopysScale) {
  const std::size_t n = (std::size_t{1} << 20) + 777;
  std::vector<double> y(n), got(n);
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = std::ldexp(static_cast<double>((i * 40503u) % 65537) - 32768.0, -15) / 3.0;
    got[i] = y[i] * (1 + 0x1p-22);
  }
  y[5] = std::numeric_limits<double>::quiet_NaN();
  y[6] = 0.0;
  got[6] = 0.0;
  y[7] = -std::numeric_limits<double>::infinity();
  const HostTensor value64 = make_tensor(DType::kF64, {static_cast<int64_t>(n)}, y);
  const HostTensor eager = make_tensor(DType::kF32, {static_cast<int64_t>(n)}, got);
  const EagerScale copy = eager_scale(DType::kF32, value64.to_f64(), eager);
  const EagerScale in_place = eager_scale(DType::kF32, value64, eager);
  EXPECT_EQ(in_place.e, copy.e);
  EXPECT_EQ(in_place.informative, copy.informative);
  EXPECT_GT(copy.e, 0.0);
  EXPECT_THROW(eager_scale(DType::kF32, eager, eager), std::invalid_argument);
}

// E of an eager run of any layout and dtype is the one a serial loop over value_at gives (below
// 2^20 elements the pass is one block): a strided view and its packed copy alike, with subnormal,
// non-finite and zero elements among the values.
TEST(EagerScale, AStridedOrNarrowEagerRunGivesTheSerialLoopsScale) {
  const int64_t rows = 37, cols = 101;
  const auto naive = [](DType dtype, const HostTensor& value64, const HostTensor& eager) {
    double worst = 0, sum_sq = 0;
    int64_t finite = 0, informative = 0;
    for (int64_t i = 0; i < eager.numel(); ++i) {
      const double v = value64.value_at(i), e = eager.value_at(i);
      if (!std::isfinite(v) || !std::isfinite(e)) continue;
      worst = std::max(worst, std::fabs(e - v));
      sum_sq += v * v;
      ++finite;
      if (!(v == 0 && e == 0)) ++informative;
    }
    const double rms = std::sqrt(sum_sq / static_cast<double>(finite));
    return std::pair{std::max(worst, unit_roundoff(dtype) * rms), informative};
  };
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    HostTensor value64(DType::kF64, {rows, cols});
    // the eager run as a transposed view of a [cols, rows] buffer: not contiguous
    HostTensor eager(dtype, {rows, cols}, {1, rows});
    ASSERT_FALSE(eager.is_contiguous());
    for (int64_t i = 0; i < rows * cols; ++i) {
      double v = std::ldexp(1.0 + static_cast<double>((i * 2654435761u) % 1000) / 997.0,
                            static_cast<int>(i % 9) - 4);
      if (i % 7 == 0) v = -v;
      if (i % 211 == 5) v = 0.0;
      value64.set_value_at(i, v);
      double e = v * (1.0 + 0x1p-12 * static_cast<double>(i % 5));
      if (i % 503 == 11) e = std::numeric_limits<double>::quiet_NaN();
      if (i % 601 == 13) e = -std::numeric_limits<double>::infinity();
      if (i % 409 == 17) e = 0x1p-130;  // subnormal in f32 (in bf16 as well)
      eager.set_value_at(i, e);
    }
    const auto [e_naive, informative_naive] = naive(dtype, value64, eager);
    const HostTensor packed = eager.contiguous();
    for (const HostTensor* run : std::vector<const HostTensor*>{&eager, &packed}) {
      const EagerScale in_place = eager_scale(dtype, value64, *run);
      const EagerScale copy = eager_scale(dtype, value64.to_f64(), *run);
      EXPECT_EQ(in_place.e, e_naive) << dtype_name(dtype);
      EXPECT_EQ(copy.e, e_naive) << dtype_name(dtype);
      EXPECT_EQ(in_place.informative, informative_naive);
      EXPECT_EQ(copy.informative, informative_naive);
    }
  }
}

TEST(EagerScale, IntegerOutputsAreExact) {
  const HostTensor eager = make_tensor(DType::kI64, {2}, {3, 4});
  EXPECT_EQ(eager_scale(DType::kI64, {3, 5}, eager).e, 0.0);
}

TEST(NoClaim, WhenEagerIsLostOrLooserThanKernelBench) {
  EXPECT_EQ(no_claim_reason(1e-6, 1.0), "");
  EXPECT_NE(no_claim_reason(0.1, 1.0), "");   // eager off by a tenth of the output
  EXPECT_EQ(no_claim_reason(1e-2, 1e3), "");  // 4E = 0.04 within allclose's 1e-2 (1 + 1e3)
  EXPECT_NE(no_claim_reason(1e-2, 0.5), "");  // 4E = 0.04 > 0.015: looser than allclose
}

}  // namespace
}  // namespace kcv::kb
