// File: tests/unit/gates/compare_test.cpp
// The shared element comparison: the ratio's definition at its edges (tau == 0, signed zeros,
// non-finite candidate or oracle, subnormal outputs) and the ratio quantiles.
#include "gates/compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

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

// TauFloor is the half-ulp floor the file comment states, max(tau, ulp_of(t, y) / 2), bit for
// bit: at every dtype's boundaries (smallest subnormal and normal, fp64's subnormal range, the
// largest finite) and on random bit patterns of every magnitude.
TEST(TauFloor, IsHalfAnUlpOfTheDtypeAtTheOracleValueBitForBit) {
  const auto reference = [](DType t, double y, double tau) {
    if (!(tau > 0) || !std::isfinite(y) || !is_floating(t)) return tau;
    return std::max(tau, 0.5 * ulp_of(t, y));
  };
  std::vector<double> ys = {0.0,
                            -0.0,
                            1.0,
                            -1.5,
                            3e38,
                            7e4,
                            1e308,
                            std::numeric_limits<double>::max(),
                            std::numeric_limits<double>::denorm_min(),
                            std::numeric_limits<double>::min(),
                            std::nextafter(std::numeric_limits<double>::min(), 0.0),
                            std::ldexp(1.0, -1000),
                            std::ldexp(1.0, -1021),
                            std::ldexp(1.0, -970),
                            std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  const DType dtypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16,
                          DType::kI32, DType::kI64, DType::kBool};
  for (DType t : dtypes) {
    if (!is_floating(t)) continue;
    const double mn = min_normal(t);
    for (double y :
         {mn, std::nextafter(mn, 0.0), std::nextafter(mn, 1.0), ulp_of(t, 0.0), max_finite(t)})
      ys.push_back(y);
  }
  std::mt19937_64 rng(20261204);
  for (int k = 0; k < 200000; ++k) ys.push_back(std::bit_cast<double>(rng()));
  const double taus[] = {0.0,  -1.0, std::numeric_limits<double>::quiet_NaN(), 1e-310, 1e-300,
                         1e-5, 1.0,  std::numeric_limits<double>::infinity()};
  for (DType t : dtypes) {
    const TauFloor floor(t);
    for (double y : ys) {
      for (double tau : taus) {
        const double want = reference(t, y, tau), got = floor(y, tau);
        ASSERT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want))
            << dtype_name(t) << " y=" << y << " tau=" << tau;
        ASSERT_EQ(std::bit_cast<uint64_t>(effective_tau(t, y, tau)), std::bit_cast<uint64_t>(want));
      }
    }
  }
}

TEST(RatioQuantiles, NearestRankOfSortedValues) {
  std::vector<double> r;
  for (int i = 100; i >= 1; --i) r.push_back(i);
  EXPECT_EQ(ratio_quantiles(r), (std::vector<double>{50, 90, 99, 100}));
}

/// Nearest rank by a full sort: what ratio_quantiles must return, whichever way it selects.
std::vector<double> sorted_quantiles(std::vector<double> r) {
  std::sort(r.begin(), r.end());
  std::vector<double> q;
  for (double p : {0.5, 0.9, 0.99}) {
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(r.size())));
    q.push_back(r[std::clamp<std::size_t>(k, 1, r.size()) - 1]);
  }
  q.push_back(r.back());
  return q;
}

// Outputs of millions of elements take the radix path: the same ranks as a sort on ratios over
// twenty decades with ties, zeros and inf; on one repeated value (one bucket for every rank);
// on values inside one bucket but different (the selection within it); and a negative value,
// which element_ratio never makes, falls back to plain selection.
TEST(RatioQuantiles, LargeInputsGiveTheRanksOfASort) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> decade(-12.0, 8.0);
  std::vector<double> wide(3'000'017);
  for (double& x : wide) x = std::pow(10.0, decade(rng));
  for (std::size_t i = 0; i < wide.size(); i += 1000) wide[i] = 0;
  for (std::size_t i = 5; i < wide.size(); i += 997) wide[i] = 0.5;
  wide[12345] = kInf;
  EXPECT_EQ(ratio_quantiles(wide), sorted_quantiles(wide));

  EXPECT_EQ(ratio_quantiles(std::vector<double>(1 << 21, 0.75)),
            (std::vector<double>{0.75, 0.75, 0.75, 0.75}));

  std::vector<double> narrow(1 << 21);
  std::uniform_real_distribution<double> in_bucket(1.0, 1.0 + 0x1p-7);
  for (double& x : narrow) x = in_bucket(rng);
  EXPECT_EQ(ratio_quantiles(narrow), sorted_quantiles(narrow));

  std::vector<double> with_negative = narrow;
  with_negative[3] = -1.0;
  EXPECT_EQ(ratio_quantiles(with_negative), sorted_quantiles(with_negative));
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

TEST(CompareCall, UnderARatioScratchKeepsItsArrayAndGivesTheSameComparison) {
  testing::Synthetic s;
  s.with_oracle(DType::kF32, {1, 2, kNaN, 4}, {0x1p-9, 0x1p-9, 0x1p-9, 0x1p-9});
  const CallRecord call = testing::call_of(DType::kF32, {1, 2 + 0x1p-7, 7, 4 - 0x1p-10});
  const Comparison plain = compare_call(s.oracle, call);
  EXPECT_EQ(RatioScratch::current(), nullptr);
  {
    const RatioScratch scratch;
    ASSERT_NE(RatioScratch::current(), nullptr);
    for (int k = 0; k < 2; ++k) {  // the second call reuses the first one's array
      const Comparison c = compare_call(s.oracle, call);
      EXPECT_EQ(c.quantiles, plain.quantiles);
      EXPECT_EQ(c.worst_index, plain.worst_index);
      EXPECT_EQ(c.judged, plain.judged);
      EXPECT_EQ(RatioScratch::current()->size(), 3u);  // the judged elements' ratios
      EXPECT_GE(RatioScratch::current()->capacity(), 4u);
    }
    {
      const RatioScratch inner;  // scopes nest: the innermost one serves
      EXPECT_NE(RatioScratch::current(), nullptr);
      EXPECT_EQ(compare_output(s.oracle.outputs[0], call.outputs[0], 0).quantiles, plain.quantiles);
      EXPECT_EQ(RatioScratch::current()->size(), 3u);
    }
    EXPECT_EQ(RatioScratch::current()->size(), 3u);
  }
  EXPECT_EQ(RatioScratch::current(), nullptr);
}

// Under a ComparisonMemo a call of the outcome is compared once per held result: the second
// compare_call gives the remembered comparison (here shown by changing the call in between,
// which the memo's callers never do). A result the memo does not hold, a call outside the
// outcome, and any call once the memo is gone are compared afresh.
TEST(CompareCall, UnderAComparisonMemoEachCallIsComparedOncePerHeldResult) {
  testing::Synthetic s;
  s.with_oracle(DType::kF32, {1, 2, 4}, {0x1p-9, 0x1p-9, 0x1p-9});
  auto held = std::make_shared<const OracleResult>(s.oracle);
  std::vector<CallRecord> calls = {testing::call_of(DType::kF32, {1, 2 + 0x1p-7, 4})};
  const double first_ratio = compare_call(*held, calls[0]).worst_ratio;  // 4: no memo yet
  EXPECT_EQ(first_ratio, 4.0);
  EXPECT_EQ(ComparisonMemo::current(), nullptr);
  {
    ComparisonMemo memo(calls);
    ASSERT_EQ(ComparisonMemo::current(), &memo);
    memo.hold(held);
    EXPECT_EQ(compare_call(*held, calls[0]).worst_ratio, 4.0);
    calls[0].outputs[0].set_value_at(1, 2 + 0x1p-8);  // ratio 2 if compared again
    EXPECT_EQ(compare_call(*held, calls[0]).worst_ratio, 4.0) << "remembered";
    EXPECT_EQ(compare_call(s.oracle, calls[0]).worst_ratio, 2.0) << "a result not held";
    const CallRecord copy = calls[0];
    EXPECT_EQ(compare_call(*held, copy).worst_ratio, 2.0) << "a call outside the outcome";
  }
  EXPECT_EQ(ComparisonMemo::current(), nullptr);
  EXPECT_EQ(compare_call(*held, calls[0]).worst_ratio, 2.0);
}

// The judges' other passes under the same memo: once per (pass, held result, part) when the
// judge reads the outcome's own calls; a pass of the calls alone (no result) once for any
// profile; a result not held, calls that are not the outcome's (another order, a subset), and
// no memo at all compute afresh.
TEST(CompareCall, UnderAComparisonMemoEachPassRunsOncePerHeldResult) {
  testing::Synthetic s;
  s.with_oracle(DType::kF32, {1, 2, 4}, {0x1p-9, 0x1p-9, 0x1p-9});
  auto held = std::make_shared<const OracleResult>(s.oracle);
  auto other = std::make_shared<const OracleResult>(s.oracle);
  ProbeOutcome outcome;
  outcome.calls = {testing::call_of(DType::kF32, {1, 2, 4}),
                   testing::call_of(DType::kF32, {1, 2, 5})};
  const CallsView calls(outcome);
  int runs = 0;
  const auto count = [&] { return ++runs; };
  using P = ComparisonMemo::Pass;
  EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, held.get(), calls, 0, count), 1) << "no memo";
  {
    ComparisonMemo memo(outcome.calls);
    memo.hold(held);
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, held.get(), calls, 0, count), 2);
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, held.get(), calls, 0, count), 2) << "remembered";
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, held.get(), calls, 1, count), 3)
        << "another part";
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kSpread, held.get(), calls, 0, count), 4)
        << "another pass";
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, other.get(), calls, 0, count), 5) << "not held";
    memo.hold(other);
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, other.get(), calls, 0, count), 6) << "now held";
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, other.get(), calls, 0, count), 6);
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kBitwise, nullptr, calls, 0, count), 7);
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kBitwise, nullptr, calls, 0, count), 7) << "calls alone";
    const CallsView reversed(std::vector<const CallRecord*>{&outcome.calls[1], &outcome.calls[0]});
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, held.get(), reversed, 0, count), 8);
    const CallsView first(std::vector<const CallRecord*>{&outcome.calls[0]});
    EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, held.get(), first, 0, count), 9);
  }
  EXPECT_EQ(ComparisonMemo::pass<int>(P::kMasks, held.get(), calls, 0, count), 10) << "memo gone";
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
