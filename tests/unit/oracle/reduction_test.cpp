// File: tests/unit/oracle/reduction_test.cpp
// sum, mean, max, argmax: hand values, NaN and signed-zero semantics per profile, FTZ, the sum
// bound in its two forms, and the declared-type simulation (fp16 accumulation stalls at 2048).
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

OracleOutput reduce(const std::string& op, std::vector<double> x, ProfileId p = ProfileId::kStrict,
                    DType in = DType::kF32, DType acc = DType::kF32) {
  const auto n = static_cast<int64_t>(x.size());
  return eval1(op, {make_tensor(in, {1, n}, x)}, contract_for(op, p, in, acc));
}

TEST(OracleReduction, SumAndMeanMatchHandValues) {
  const auto s = reduce("sum", {1, 2, 3, 4});
  EXPECT_EQ(s.value[0], 10.0);
  EXPECT_EQ(s.n_terms[0], 4.0);
  EXPECT_EQ(s.shape, (Shape{1}));
  EXPECT_EQ(reduce("mean", {1, 2, 3, 4}).value[0], 2.5);
}

TEST(OracleReduction, SumBoundStrictIsHighamsGamma) {
  // strict: u|s| + half subnormal spacing + gamma_3 * sum|x|
  EXPECT_EQ(reduce("sum", {1, 2, 3, 4}).tau[0], kU32 * 10 + 0x1p-150 + gamma_n(3, kU32) * 10);
}

TEST(OracleReduction, SumBoundProbabilisticUsesNormPlusAbsSum) {
  // c * u * sqrt(N) * (||x||_2 + |sum x|) with ||x||_2 = sqrt(30)
  const double expected = kU32 * 10 + 0x1p-150 + 4 * kU32 * 2 * (std::sqrt(30.0) + 10);
  EXPECT_DOUBLE_EQ(reduce("sum", {1, 2, 3, 4}, ProfileId::kCudaDefault).tau[0], expected);
}

TEST(OracleReduction, InfinitiesOfBothSignsSumToNan) {
  EXPECT_TRUE(std::isnan(reduce("sum", {kInf, 1, -kInf}).value[0]));
  EXPECT_EQ(reduce("sum", {kInf, 1}).value[0], kInf);
  EXPECT_TRUE(std::isnan(reduce("mean", {1, kNaN}).value[0]));
}

TEST(OracleReduction, MaxNanPropagatesUnderStrictAndIsSkippedUnderTriton) {
  EXPECT_TRUE(std::isnan(reduce("max", {1, kNaN, 3}).value[0]));
  EXPECT_TRUE(std::isnan(reduce("max", {1, kNaN, 3}, ProfileId::kPytorchEager).value[0]));
  EXPECT_EQ(reduce("max", {1, kNaN, 3}, ProfileId::kTritonDefault).value[0], 3.0);
  EXPECT_TRUE(std::isnan(reduce("max", {kNaN, kNaN}, ProfileId::kTritonDefault).value[0]));
}

TEST(OracleReduction, MaxPrefersPositiveZero) {
  EXPECT_FALSE(std::signbit(reduce("max", {-0.0, 0.0, -1}).value[0]));
  EXPECT_FALSE(std::signbit(reduce("max", {0.0, -0.0}).value[0]));
  EXPECT_TRUE(std::signbit(reduce("max", {-0.0, -2.0}).value[0]));
}

TEST(OracleReduction, ArgmaxIsTheFirstMaximumAndExact) {
  const auto a = reduce("argmax", {1, 3, 3, 2});
  EXPECT_EQ(a.dtype, DType::kI64);
  EXPECT_EQ(a.value[0], 1.0);
  EXPECT_EQ(a.tau[0], 0.0);
  EXPECT_EQ(a.declared[0], 1.0);
  EXPECT_EQ(reduce("argmax", {-0.0, 0.0}).value[0], 0.0);  // ties (also +-0) go to the first
  EXPECT_EQ(reduce("argmax", {1, kInf, kInf}).value[0], 1.0);
}

TEST(OracleReduction, ArgmaxNanDependsOnProfile) {
  EXPECT_EQ(reduce("argmax", {1, kNaN, 5, kNaN}).value[0], 1.0);  // first NaN wins
  EXPECT_EQ(reduce("argmax", {1, kNaN, 5, kNaN}, ProfileId::kTritonDefault).value[0], 2.0);
  EXPECT_EQ(reduce("argmax", {kNaN, kNaN}, ProfileId::kTritonDefault).value[0], 0.0);
}

TEST(OracleReduction, FastMathReadsSubnormalInputsAsZero) {
  const double sub = 0x1p-130;  // fp32 subnormal
  EXPECT_EQ(reduce("sum", {sub, sub, sub, sub}).value[0], 0x1p-128);
  EXPECT_EQ(reduce("sum", {sub, sub, sub, sub}, ProfileId::kFastMath).value[0], 0.0);
  EXPECT_EQ(reduce("max", {-sub, -1}, ProfileId::kFastMath).value[0], 0.0);
}

TEST(OracleReduction, DeclaredFp16AccumulationStallsWhereFp32DoesNot) {
  // 2048 + 1 is a tie in fp16 (spacing 2 there) and rounds to even 2048: each +1 is lost.
  const std::vector<double> x = {2048, 1, 1, 1, 1};
  const auto f16 = reduce("sum", x, ProfileId::kStrict, DType::kF16, DType::kF16);
  EXPECT_EQ(f16.value[0], 2052.0);
  EXPECT_EQ(f16.declared[0], 2048.0);
  const auto f32 = reduce("sum", x, ProfileId::kStrict, DType::kF16, DType::kF32);
  EXPECT_EQ(f32.declared[0], 2052.0);
}

TEST(OracleReduction, ExactTierMatchesMpfrOnACancellingRow) {
  const std::vector<double> x = {0x1p60, 1, -0x1p60, 0x1p-20};
  Contract c = contract_for("sum", ProfileId::kStrict, DType::kF64, DType::kF64);
  std::vector<HostTensor> in = {make_tensor(DType::kF64, {1, 4}, x)};
  const auto exact = find_op("sum")->evaluate_exact(in, c, 0, 0);
  ASSERT_TRUE(exact.has_value());
  EXPECT_EQ(*exact, 1 + 0x1p-20);
  EXPECT_EQ(find_op("sum")->evaluate(in, c).outputs[0].value[0], 1 + 0x1p-20);
}

}  // namespace
}  // namespace kcv
