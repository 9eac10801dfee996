// File: tests/unit/oracle/elementwise_test.cpp
// Elementwise ops against hand-computed values, NaN/signed-zero semantics per profile, FTZ under
// fast-math, and the tau formulas of tolerance.hpp evaluated by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "oracle_test_util.hpp"

namespace kcv {
namespace {

using testing::contract_for;
using testing::eval1;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU32 = 0x1p-24;
constexpr double kHalfSub32 = 0x1p-150;

HostTensor row(DType t, std::vector<double> v) {
  return make_tensor(t, {1, static_cast<int64_t>(v.size())}, v);
}

OracleOutput unary(const std::string& op, std::vector<double> x, ProfileId p = ProfileId::kStrict) {
  return eval1(op, {row(DType::kF32, std::move(x))}, contract_for(op, p));
}

OracleOutput binary(const std::string& op, std::vector<double> x, std::vector<double> y,
                    ProfileId p = ProfileId::kStrict) {
  return eval1(op, {row(DType::kF32, std::move(x)), row(DType::kF32, std::move(y))},
               contract_for(op, p));
}

TEST(OracleElementwise, ArithmeticMatchesHandValues) {
  EXPECT_EQ(binary("add", {1, 0.5}, {2, 0.25}).value, (std::vector<double>{3, 0.75}));
  EXPECT_EQ(binary("mul", {3, -0.5}, {4, 0.5}).value, (std::vector<double>{12, -0.25}));
  EXPECT_EQ(binary("div", {1}, {3}).value[0], 1.0 / 3.0);
  EXPECT_EQ(unary("sqrt", {4, 2}).value, (std::vector<double>{2, std::sqrt(2.0)}));
  EXPECT_EQ(unary("exp", {0}).value[0], 1.0);
  EXPECT_EQ(unary("relu", {-1, 2}).value, (std::vector<double>{0, 2}));
  EXPECT_EQ(unary("clamp", {0.7, -1, 0.25}).value, (std::vector<double>{0.5, -0.5, 0.25}));
  EXPECT_EQ(unary("sigmoid", {0}).value[0], 0.5);
}

TEST(OracleElementwise, GeluFormsMatchClosedForms) {
  // gelu(1) = (1 + erf(1/sqrt2))/2; gelu_tanh(1) = (1 + tanh(sqrt(2/pi) * 1.044715))/2.
  EXPECT_DOUBLE_EQ(unary("gelu", {1}).value[0], 0.5 * (1 + std::erf(1 / std::sqrt(2.0))));
  EXPECT_DOUBLE_EQ(unary("gelu_tanh", {1}).value[0],
                   0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * 1.044715)));
  EXPECT_EQ(unary("gelu", {0}).value[0], 0.0);
  // Far left tail: the value is the exact tiny result, not the cancelled 0 of x/2*(1+erf).
  const double y = unary("gelu", {-10}).value[0];
  EXPECT_LT(y, 0.0);
  EXPECT_DOUBLE_EQ(y, -5.0 * std::erfc(10 / std::sqrt(2.0)));
}

TEST(OracleElementwise, ClampParamsComeFromTheContract) {
  Contract c = contract_for("clamp", ProfileId::kStrict);
  c.params["max"] = 2.0;
  EXPECT_EQ(eval1("clamp", {row(DType::kF32, {3, 1})}, c).value, (std::vector<double>{2, 1}));
}

TEST(OracleElementwise, MaximumNanDependsOnProfile) {
  EXPECT_TRUE(std::isnan(binary("maximum", {kNaN}, {1}).value[0]));
  EXPECT_EQ(binary("maximum", {kNaN}, {1}, ProfileId::kTritonDefault).value[0], 1.0);
  EXPECT_EQ(binary("maximum", {1}, {kNaN}, ProfileId::kCudaDefault).value[0], 1.0);
  EXPECT_TRUE(std::isnan(binary("maximum", {kNaN}, {kNaN}, ProfileId::kTritonDefault).value[0]));
  EXPECT_TRUE(std::isnan(binary("maximum", {1}, {kNaN}, ProfileId::kPytorchEager).value[0]));
}

TEST(OracleElementwise, MaximumOrdersSignedZeros) {
  for (ProfileId p : {ProfileId::kStrict, ProfileId::kTritonDefault}) {
    const auto a = binary("maximum", {-0.0, 0.0}, {0.0, -0.0}, p).value;
    EXPECT_FALSE(std::signbit(a[0]));
    EXPECT_FALSE(std::signbit(a[1]));
  }
  EXPECT_FALSE(std::signbit(unary("relu", {-0.0}).value[0]));
}

TEST(OracleElementwise, ReluAndClampNanFollowProfile) {
  EXPECT_TRUE(std::isnan(unary("relu", {kNaN}).value[0]));
  EXPECT_EQ(unary("relu", {kNaN}, ProfileId::kTritonDefault).value[0], 0.0);
  EXPECT_TRUE(std::isnan(unary("clamp", {kNaN}).value[0]));
  EXPECT_TRUE(std::isnan(unary("clamp", {kNaN}, ProfileId::kPytorchEager).value[0]));
  // Triton measured tl.clamp(NaN, -1, 1) = 1: the upper bound.
  EXPECT_EQ(unary("clamp", {kNaN}, ProfileId::kTritonDefault).value[0], 0.5);
}

TEST(OracleElementwise, InfinityArithmeticIsIeee) {
  const auto s = binary("add", {kInf, kInf}, {-kInf, 1}).value;
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[1], kInf);
  EXPECT_TRUE(std::isnan(binary("mul", {kInf}, {0}).value[0]));
  EXPECT_EQ(unary("exp", {-kInf}).value[0], 0.0);
  EXPECT_TRUE(std::isnan(unary("gelu", {-kInf}).value[0]));
}

TEST(OracleElementwise, OverflowInTheOutputTypeIsInfinity) {
  const auto out = binary("mul", {0x1p100}, {0x1p100});
  EXPECT_EQ(out.value[0], kInf);  // 2^200 overflows fp32
  EXPECT_EQ(out.tau[0], 0.0);     // non-finite: exact class required
  EXPECT_EQ(out.declared[0], kInf);
}

TEST(OracleElementwise, FastMathFlushesSubnormalInputsAndResults) {
  const double sub = 0x1p-140;  // fp32 subnormal
  EXPECT_EQ(binary("mul", {sub}, {1}).value[0], sub);
  const auto ftz_in = binary("mul", {-sub}, {1}, ProfileId::kFastMath).value[0];
  EXPECT_EQ(ftz_in, 0.0);
  EXPECT_TRUE(std::signbit(ftz_in));
  // 2^-70 * 2^-70 = 2^-140: normal inputs, subnormal result.
  EXPECT_EQ(binary("mul", {0x1p-70}, {0x1p-70}).value[0], sub);
  const auto ftz_out = binary("mul", {0x1p-70}, {-0x1p-70}, ProfileId::kFastMath);
  EXPECT_EQ(ftz_out.value[0], 0.0);
  EXPECT_TRUE(std::signbit(ftz_out.value[0]));
  EXPECT_EQ(ftz_out.declared[0], 0.0);
  // Triton keeps subnormals for * but its sqrt reads a subnormal argument as zero.
  EXPECT_EQ(binary("mul", {sub}, {1}, ProfileId::kTritonDefault).value[0], sub);
  EXPECT_EQ(unary("sqrt", {0x1p-140}, ProfileId::kTritonDefault).value[0], 0.0);
  EXPECT_EQ(unary("sqrt", {0x1p-140}).value[0], 0x1p-70);
}

TEST(OracleElementwise, TauIsOutputRoundingPlusProfileBudget) {
  // mul: exact product, 0 extra ulps: u32*|y| + half the fp32 subnormal spacing.
  EXPECT_EQ(binary("mul", {3}, {4}).tau[0], kU32 * 12 + kHalfSub32);
  // div under fast-math: + 2 ulps of fp32, one ulp being at most 2*u32*|y| + 2^-149.
  const double q = 1.0 / 3.0;
  EXPECT_EQ(binary("div", {1}, {3}, ProfileId::kFastMath).tau[0],
            kU32 * q + kHalfSub32 + 2 * (2 * kU32 * q + 0x1p-149));
  // exp under fast-math at x = -10: 2 + 1.173*10 ulps.
  const double e = std::exp(-10.0);
  EXPECT_DOUBLE_EQ(unary("exp", {-10}, ProfileId::kFastMath).tau[0],
                   kU32 * e + kHalfSub32 + (2 + 11.73) * (2 * kU32 * e + 0x1p-149));
  // relu, clamp, maximum select: output rounding only.
  EXPECT_EQ(unary("relu", {2}).tau[0], kU32 * 2 + kHalfSub32);
}

TEST(OracleElementwise, GeluBoundAdmitsTheCancellationOfConformingKernels) {
  // A conforming fp32 kernel computes x/2 * (1 + erff(x/sqrt2)) and loses the left tail to
  // cancellation (erff(-7.07) rounds to -1): it returns -0 where the exact value is -7.6e-23.
  const auto out = unary("gelu", {-10});
  EXPECT_GT(out.tau[0], std::fabs(out.value[0]));
}

TEST(OracleElementwise, DeclaredIsTheExactResultRoundedToTheOutput) {
  Contract c = contract_for("div", ProfileId::kStrict, DType::kF16);
  const auto out = eval1("div", {row(DType::kF16, {1}), row(DType::kF16, {3})}, c);
  EXPECT_EQ(out.dtype, DType::kF16);
  EXPECT_EQ(out.declared[0], round_to(DType::kF16, 1.0 / 3.0));
  EXPECT_EQ(out.value[0], 1.0 / 3.0);
}

TEST(OracleElementwise, ExactTierMatchesMpfrForTranscendentals) {
  const Op* gelu = find_op("gelu");
  std::vector<HostTensor> in = {row(DType::kF32, {0.75})};
  auto e = gelu->evaluate_exact(in, contract_for("gelu", ProfileId::kStrict), 0, 0);
  ASSERT_TRUE(e.has_value());
  // 0.75/2 * erfc(-0.75/sqrt2), correctly rounded; the fp64 path agrees to a few ulps.
  const double v = gelu->evaluate(in, contract_for("gelu", ProfileId::kStrict)).outputs[0].value[0];
  EXPECT_LE(std::fabs(*e - v), 4 * ulp_of(DType::kF64, v));
  EXPECT_FALSE(find_op("relu")->evaluate_exact(in, Contract{}, 0, 0).has_value());
}

}  // namespace
}  // namespace kcv
