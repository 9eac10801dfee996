// File: tests/unit/gates/compare_test.cpp
// The shared element comparison: the ratio's definition at its edges (tau == 0, signed zeros,
// non-finite candidate or oracle, subnormal outputs) and the ratio quantiles.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gates/compare.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv::gates {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ElementRatio, IsErrorOverTau) {
  EXPECT_EQ(element_ratio(DType::kF32, 1.0 + 0x1p-10, 1.0, 0x1p-9), 0.5);
  EXPECT_EQ(element_ratio(DType::kF32, 1.0 - 0x1p-8, 1.0, 0x1p-9), 2.0);
}

TEST(ElementRatio, ZeroTauDemandsExactEquality) {
  EXPECT_EQ(element_ratio(DType::kI64, 3, 3, 0), 0.0);
  EXPECT_EQ(element_ratio(DType::kI64, 4, 3, 0), kInf);
  EXPECT_EQ(element_ratio(DType::kF32, 1.0 + 0x1p-23, 1.0, 0), kInf);
}

TEST(ElementRatio, SignedZerosAreNumericallyEqual) {
  EXPECT_EQ(element_ratio(DType::kF32, -0.0, 0.0, 0), 0.0);
  EXPECT_EQ(element_ratio(DType::kF32, 0.0, -0.0, 0x1p-30), 0.0);
}

TEST(ElementRatio, NonFiniteCandidateWhereOracleFiniteIsInfinite) {
  EXPECT_EQ(element_ratio(DType::kF32, kNaN, 1.0, 1.0), kInf);
  EXPECT_EQ(element_ratio(DType::kF32, kInf, 1.0, 1.0), kInf);
  EXPECT_EQ(element_ratio(DType::kF32, -kInf, 0.0, 0), kInf);
}

TEST(ElementRatio, NonFiniteOracleOrNanTauIsNotJudged) {
  EXPECT_TRUE(std::isnan(element_ratio(DType::kF32, 1.0, kNaN, 1.0)));
  EXPECT_TRUE(std::isnan(element_ratio(DType::kF32, kInf, kInf, 0)));
  EXPECT_TRUE(std::isnan(element_ratio(DType::kF32, 1.0, 1.0, kNaN)));
}

TEST(ElementRatio, SubnormalOutputsGetHalfTheirSpacing) {
  // y* = 2.5 smallest subnormals: the best fp32 answer (2, RN-even) errs by half a spacing,
  // far above u_out*|y*|; the floor makes that answer exactly ratio 1, and 1 spacing worse fail.
  const double s = min_subnormal(DType::kF32);
  const double tau = unit_roundoff(DType::kF32) * 2.5 * s;
  EXPECT_EQ(element_ratio(DType::kF32, 2 * s, 2.5 * s, tau), 1.0);
  EXPECT_GT(element_ratio(DType::kF32, 1 * s, 2.5 * s, tau), 1.0);
}

TEST(RatioQuantiles, NearestRankOfSortedValues) {
  std::vector<double> r;
  for (int i = 100; i >= 1; --i) r.push_back(i);
  EXPECT_EQ(ratio_quantiles(r), (std::vector<double>{50, 90, 99, 100}));
}

TEST(RatioQuantiles, EmptyAndSingleElement) {
  EXPECT_TRUE(ratio_quantiles({}).empty());
  EXPECT_EQ(ratio_quantiles({0.25}), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
  EXPECT_EQ(ratio_quantiles({kInf, 0}).back(), kInf);
}

TEST(CompareCall, ReportsWorstElementAndCounts) {
  testing::Synthetic s;
  s.with_oracle(DType::kF32, {1, 2, kNaN, 4}, {0x1p-9, 0x1p-9, 0x1p-9, 0x1p-9});
  const CallRecord call = testing::call_of(DType::kF32, {1, 2 + 0x1p-7, 7, 4 - 0x1p-10});
  ASSERT_TRUE(outputs_match(s.oracle, call));
  const Comparison c = compare_call(s.oracle, call);
  EXPECT_EQ(c.judged, 3);  // the NaN oracle element belongs to EXC-01
  EXPECT_EQ(c.violations, 1);
  EXPECT_EQ(c.worst_index, 1);
  EXPECT_EQ(c.worst_ratio, 4.0);
  EXPECT_EQ(c.candidate, 2 + 0x1p-7);
  EXPECT_EQ(c.oracle, 2.0);
  EXPECT_EQ(c.quantiles.back(), 4.0);
}

TEST(CompareCall, DetectsMismatchedOutputs) {
  testing::Synthetic s;
  s.with_oracle(DType::kF32, {1, 2}, {0, 0});
  EXPECT_FALSE(outputs_match(s.oracle, testing::call_of(DType::kF32, {1, 2, 3})));
  EXPECT_FALSE(outputs_match(s.oracle, testing::call_of(DType::kF64, {1, 2})));
  EXPECT_FALSE(outputs_match(s.oracle, CallRecord{}));
  EXPECT_TRUE(outputs_match(s.oracle, testing::call_of(DType::kF32, {1, 2})));
}

}  // namespace
}  // namespace kcv::gates
