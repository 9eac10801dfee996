// File: tests/unit/gen/generate_test.cpp
// make_inputs: bit-identical on repetition, element i independent of the tensor's size and of
// the other inputs, every distribution inside its stated range and exact in its dtype, value
// domains and injections applied in the documented order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kcv/generate.hpp"
#include "unit/gen/test_signatures.hpp"

namespace kcv {
namespace {

constexpr DType kFloatTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};

Probe probe_for(const OpSignature& sig, Distribution dist, DType dtype, std::map<std::string, int64_t> sizes) {
  Probe p;
  p.seed = 0x5eed;
  p.sizes = std::move(sizes);
  for (std::size_t j = 0; j < sig.inputs.size(); ++j) {
    p.inputs.push_back(InputSpec{dtype, dist, Layout{}});
  }
  return p;
}

std::vector<double> values_of(const Probe& p, const OpSignature& sig, std::size_t input = 0) {
  return make_inputs(p, sig)[input].to_f64();
}

TEST(MakeInputs, IsBitIdenticalWhenRepeated) {
  const OpSignature sig = testing::binary_sig();
  Probe p = probe_for(sig, Distribution::kHeavyTail, DType::kF16, {{"M", 5}, {"N", 33}});
  p.inputs[1].layout = Layout{LayoutKind::kPaddedRows, 2, 0, 3};
  p.injections = {{1, 4, Special::kNaN}};
  const auto a = make_inputs(p, sig);
  const auto b = make_inputs(p, sig);
  ASSERT_EQ(a.size(), 2u);
  for (std::size_t j = 0; j < a.size(); ++j) {
    ASSERT_EQ(a[j].raw().size(), b[j].raw().size());
    EXPECT_EQ(std::memcmp(a[j].raw().data(), b[j].raw().data(), a[j].raw().size()), 0) << j;
  }
}

TEST(MakeInputs, ElementDependsOnlyOnItsLogicalIndex) {
  const OpSignature sig = testing::binary_sig();
  for (Distribution d : all_distributions()) {
    const auto small = values_of(probe_for(sig, d, DType::kF32, {{"M", 2}, {"N", 8}}), sig);
    const auto flat = values_of(probe_for(sig, d, DType::kF32, {{"M", 1}, {"N", 16}}), sig);
    const auto big = values_of(probe_for(sig, d, DType::kF32, {{"M", 9}, {"N", 40}}), sig);
    for (std::size_t i = 0; i < small.size(); ++i) {
      ASSERT_EQ(f64_bits(small[i]), f64_bits(flat[i])) << distribution_name(d) << " " << i;
      ASSERT_EQ(f64_bits(small[i]), f64_bits(big[i])) << distribution_name(d) << " " << i;
    }
  }
}

TEST(MakeInputs, InputsAreIndependentOfEachOther) {
  const OpSignature sig = testing::binary_sig();
  Probe p = probe_for(sig, Distribution::kNormal, DType::kF32, {{"M", 4}, {"N", 4}});
  const auto before = values_of(p, sig, 1);
  p.inputs[0].dist = Distribution::kWideRange;
  p.inputs[0].dtype = DType::kBF16;
  EXPECT_EQ(values_of(p, sig, 1), before);
  EXPECT_NE(values_of(p, sig, 0), values_of(p, sig, 1));
}

bool is_exact_in(DType t, double x) { return std::isnan(x) || round_to(t, x) == x; }

// Checks one distribution's stated range for every element.
void expect_in_range(Distribution d, DType t, const std::vector<double>& v) {
  const double box_muller_max = std::sqrt(2.0 * 53.0 * std::log(2.0));  // u1 >= 2^-53
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    const double ax = std::fabs(x);
    ASSERT_TRUE(std::isfinite(x)) << distribution_name(d) << " " << dtype_name(t) << " " << i;
    ASSERT_TRUE(is_exact_in(t, x));
    switch (d) {
      case Distribution::kNormal: ASSERT_LE(ax, box_muller_max); break;
      case Distribution::kUniform01: ASSERT_TRUE(x >= 0.0 && x <= 1.0) << x; break;  // may round up to 1
      case Distribution::kHeavyTail: ASSERT_TRUE(ax > 0 && ax <= std::ldexp(max_finite(t), -4)) << x; break;
      case Distribution::kWideRange:
        ASSERT_TRUE(ax >= min_normal(t) && ax >= std::ldexp(1.0, -20) && ax <= std::ldexp(1.0, 21)) << x;
        break;
      case Distribution::kNearOverflow:
        ASSERT_TRUE(ax >= 0.25 * max_finite(t) && ax <= 0.5 * max_finite(t)) << x;
        break;
      case Distribution::kSubnormal:
        ASSERT_EQ(classify(t, encode(t, x)), FpClass::kSubnormal) << x;
        break;
      case Distribution::kPositive: ASSERT_TRUE(x >= 0.5 && x <= 2.0) << x; break;
      case Distribution::kSmallIndex: ASSERT_TRUE(x >= 0 && x < 8 && x == std::floor(x)) << x; break;
      case Distribution::kExpUnderflow: ASSERT_TRUE(x >= -103.0 && x <= -88.0) << x; break;
      case Distribution::kTiny: {
        const double low = std::max(std::ldexp(1.0, -70), min_normal(t));
        ASSERT_TRUE(ax >= low && ax <= std::ldexp(low, 10)) << x;
        break;
      }
      default: break;  // kCancellation and kLowBits: checked by their own tests
    }
  }
}

TEST(Distributions, EveryDistributionLandsInItsRangeForEveryFloatType) {
  const OpSignature sig = testing::unary_sig(ValueDomain::kAny);
  for (DType t : kFloatTypes) {
    for (Distribution d : all_distributions()) {
      expect_in_range(d, t, values_of(probe_for(sig, d, t, {{"M", 16}, {"N", 256}}), sig));
    }
  }
}

TEST(Distributions, TinyMatchesTheGateDefinitionForF32) {
  const OpSignature sig = testing::unary_sig(ValueDomain::kAny);
  for (double x : values_of(probe_for(sig, Distribution::kTiny, DType::kF32, {{"M", 4}, {"N", 256}}), sig)) {
    ASSERT_GE(std::fabs(x), std::ldexp(1.0, -70));
    ASSERT_LE(std::fabs(x), std::ldexp(1.0, -60));
  }
}

TEST(Distributions, CancellationPairsNearlyCancel) {
  const OpSignature sig = testing::unary_sig(ValueDomain::kAny);
  for (DType t : kFloatTypes) {
    const auto v = values_of(probe_for(sig, Distribution::kCancellation, t, {{"M", 8}, {"N", 128}}), sig);
    for (std::size_t p = 0; p + 1 < v.size(); p += 2) {
      const double a = v[p];
      const double b = v[p + 1];
      ASSERT_TRUE(a == 0 || std::signbit(a) != std::signbit(b)) << p;
      ASSERT_LE(std::fabs(a), std::fabs(b)) << p;  // |b| = |a|(1 + delta) before rounding
      // delta <= 2^-10 before rounding, plus one rounding of each value (half an ulp each).
      ASSERT_LE(std::fabs(a + b), std::ldexp(std::fabs(b), -10) + 2 * ulp_of(t, b)) << p;
    }
  }
}

TEST(Distributions, LowBitsAreExactOnlyInTheirOwnDtype) {
  const OpSignature sig = testing::unary_sig(ValueDomain::kAny);
  for (DType t : kFloatTypes) {
    const auto v = values_of(probe_for(sig, Distribution::kLowBits, t, {{"M", 4}, {"N", 64}}), sig);
    for (double x : v) {
      ASSERT_EQ(round_to(t, x), x);
      for (DType narrower : kFloatTypes) {
        if (significand_bits(narrower) < significand_bits(t)) {
          ASSERT_NE(round_to(narrower, x), x) << dtype_name(t) << " in " << dtype_name(narrower);
        }
      }
    }
  }
}

TEST(ValueDomain, PositiveInputsAreNonNegativeButKeepInjectedSpecials) {
  const OpSignature sig = testing::unary_sig(ValueDomain::kPositive);
  Probe p = probe_for(sig, Distribution::kNormal, DType::kF32, {{"M", 8}, {"N", 64}});
  p.injections = {{0, 3, Special::kNaN}, {0, 9, Special::kNegInf}};
  const auto v = values_of(p, sig);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[9], -std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i != 3 && i != 9) {
      ASSERT_FALSE(std::signbit(v[i])) << i;
    }
  }
}

TEST(ValueDomain, NonZeroInputsStayAwayFromZero) {
  const OpSignature sig = testing::binary_sig(ValueDomain::kNonZero);
  for (Distribution d : {Distribution::kNormal, Distribution::kTiny, Distribution::kSubnormal}) {
    const auto v = values_of(probe_for(sig, d, DType::kBF16, {{"M", 8}, {"N", 64}}), sig, 1);
    for (double x : v) {
      ASSERT_GE(std::fabs(x), 0.5) << distribution_name(d);
    }
  }
}

TEST(Injections, LandOnTheirLogicalIndexAndSkipIndicesOutOfRange) {
  const OpSignature sig = testing::binary_sig();
  Probe p = probe_for(sig, Distribution::kNormal, DType::kF16, {{"M", 3}, {"N", 5}});
  p.inputs[1].layout = Layout{LayoutKind::kTransposed, 2, 0, 0};
  p.injections = {{1, 7, Special::kNegZero}, {1, 8, Special::kSubnormal}, {0, 99, Special::kNaN}};
  const auto in = make_inputs(p, sig);
  EXPECT_EQ(in[1].bits_at(7), 0x8000u);
  EXPECT_EQ(classify(DType::kF16, in[1].bits_at(8)), FpClass::kSubnormal);
  for (double x : in[0].to_f64()) {
    EXPECT_FALSE(std::isnan(x));
  }
}

TEST(SpecialValue, HasTheRightClassInEveryFloatType) {
  for (DType t : kFloatTypes) {
    EXPECT_EQ(classify(t, encode(t, special_value(Special::kNaN, t))), FpClass::kNaN);
    EXPECT_EQ(classify(t, encode(t, special_value(Special::kPosInf, t))), FpClass::kPosInf);
    EXPECT_EQ(classify(t, encode(t, special_value(Special::kNegInf, t))), FpClass::kNegInf);
    EXPECT_EQ(encode(t, special_value(Special::kPosZero, t)), 0u);
    EXPECT_TRUE(std::signbit(special_value(Special::kNegZero, t)));
    EXPECT_EQ(classify(t, encode(t, special_value(Special::kSubnormal, t))), FpClass::kSubnormal);
    const double huge = special_value(Special::kHuge, t);
    EXPECT_EQ(classify(t, encode(t, huge)), FpClass::kNormal);
    EXPECT_GE(huge, 0.5 * max_finite(t));
    EXPECT_TRUE(std::isinf(round_to(t, huge + huge)));  // two of them overflow
  }
}

TEST(MakeInputs, BroadcastRowsAllEqualRowZero) {
  const OpSignature sig = testing::binary_sig();
  Probe p = probe_for(sig, Distribution::kNormal, DType::kF32, {{"M", 6}, {"N", 7}});
  p.inputs[0].layout = Layout{LayoutKind::kBroadcast, 2, 0, 0};
  const HostTensor x = make_inputs(p, sig)[0];
  EXPECT_EQ(x.strides()[0], 0);
  const auto v = x.to_f64();
  for (std::size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(v[i], v[i % 7]) << i;
  }
}

}  // namespace
}  // namespace kcv
