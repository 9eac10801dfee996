// File: tests/unit/contract/tolerance_test.cpp
// The bound formulas of research §2.4/§6.7, checked against hand evaluation: gamma_n, the
// probabilistic and deterministic accumulation terms, and the rounding term with its floors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kcv/tolerance.hpp"

namespace kcv {
namespace {

constexpr double kU32 = 0x1p-24;
constexpr double kU16 = 0x1p-11;

Contract contract_of(DType in, DType acc, ProfileId p) {
  Contract c;
  c.input_dtypes = {in};
  c.accumulator = acc;
  c.profile = p;
  return c;
}

TEST(Tolerance, ComputeTypeIsFp32For16BitInputs) {
  const auto m = precision_model(contract_of(DType::kF16, DType::kF16, ProfileId::kCudaDefault),
                                 DType::kF16);
  EXPECT_EQ(m.u_out, kU16);
  EXPECT_EQ(m.u_acc, kU16);
  EXPECT_EQ(m.u_c, kU32);
  EXPECT_EQ(m.c, 4.0);
  EXPECT_FALSE(m.deterministic_bound);
  EXPECT_EQ(precision_model(contract_of(DType::kF64, DType::kF64, ProfileId::kStrict), DType::kF64)
                .u_c,
            0x1p-53);
}

TEST(Tolerance, StrictUsesTheDeterministicBound) {
  EXPECT_TRUE(precision_model(contract_of(DType::kF32, DType::kF32, ProfileId::kStrict),
                              DType::kF32)
                  .deterministic_bound);
}

TEST(Tolerance, GammaIsInfiniteOnceNuReachesOne) {
  EXPECT_EQ(gamma_n(0, kU32), 0.0);
  EXPECT_DOUBLE_EQ(gamma_n(3, 0.25), 3.0);  // 0.75 / 0.25
  EXPECT_EQ(gamma_n(2048, kU16), std::numeric_limits<double>::infinity());
}

TEST(Tolerance, ProbabilisticAccumulationIsCTimesURootNTimesS) {
  const auto m = precision_model(contract_of(DType::kF32, DType::kF32, ProfileId::kCudaDefault),
                                 DType::kF32);
  // N = 16, ||p||_2 = 3, |sum p| = 5: 4 * u * 4 * 8.
  EXPECT_EQ(accumulation_bound(m, 16, 3.0, 5.0, 100.0), 4.0 * kU32 * 4.0 * 8.0);
  EXPECT_EQ(accumulation_bound(m, 1, 3.0, 3.0, 3.0), 0.0);
}

TEST(Tolerance, DeterministicAccumulationIsGammaNMinusOneTimesSumAbs) {
  const auto m = precision_model(contract_of(DType::kF32, DType::kF32, ProfileId::kStrict),
                                 DType::kF32);
  EXPECT_EQ(accumulation_bound(m, 11, 3.0, 5.0, 100.0), gamma_n(10, kU32) * 100.0);
}

TEST(Tolerance, FtzAddsOneSmallestNormalPerTerm) {
  const auto m = precision_model(contract_of(DType::kF32, DType::kF32, ProfileId::kFastMath),
                                 DType::kF32);
  EXPECT_EQ(accumulation_bound(m, 4, 0.0, 0.0, 0.0), 4.0 * 0x1p-126);
}

TEST(Tolerance, RoundingBoundAddsUlpsOfTheComputeType) {
  const auto m = precision_model(contract_of(DType::kF16, DType::kF32, ProfileId::kStrict),
                                 DType::kF16);
  const double y = 3.0;
  const double floor16 = 0x1p-25;  // half of fp16's smallest subnormal 2^-24
  EXPECT_EQ(rounding_bound(m, y, 0), kU16 * y + floor16);
  EXPECT_EQ(rounding_bound(m, y, 2), kU16 * y + floor16 + 2 * (2 * kU32 * y + 0x1p-149));
  EXPECT_EQ(rounding_bound(m, 0.0, 0), floor16);  // subnormal spacing, not zero
}

TEST(Tolerance, IndexOutputsAreExact) {
  const auto m = precision_model(contract_of(DType::kF32, DType::kF32, ProfileId::kStrict),
                                 DType::kI64);
  EXPECT_EQ(rounding_bound(m, 7.0, 3.0), 0.0);
}

}  // namespace
}  // namespace kcv
