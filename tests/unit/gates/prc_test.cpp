// File: tests/unit/gates/prc_test.cpp
// PRC judges: the bits-lost statistic against the declared-type simulation (or the correctly
// rounded result for elementwise ops), its thresholds, and PRC-01's bitwise check of exact ties.
#include <gtest/gtest.h>

#include <cmath>

#include "gates/families.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

using testing::Synthetic;

/// fp64 values with bits below fp32's last place (never fp32 ties), like products of fp32 inputs.
std::vector<double> unrounded_values() {
  std::vector<double> y;
  for (int i = 0; i < 64; ++i) y.push_back(1.0 + 0.1 * i);
  return y;
}

std::vector<double> rounded(DType t, const std::vector<double>& y) {
  std::vector<double> out;
  for (double v : y) out.push_back(round_to(t, v));
  return out;
}

Synthetic elementwise(const std::vector<double>& y, const std::vector<double>& got) {
  Synthetic s;
  const PrecisionModel m = precision_model(s.contract, DType::kF32);
  std::vector<double> tau;
  for (double v : y) tau.push_back(rounding_bound(m, v, 0));
  s.with_oracle(DType::kF32, y, tau).with_call(got);
  return s;
}

TEST(Prc01Judge, CorrectlyRoundedElementwiseLosesNoBits) {
  const std::vector<double> y = unrounded_values();
  const GateResult r = elementwise(y, rounded(DType::kF32, y)).judge(GateId::kPrc01);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
  EXPECT_LE(r.evidence.bits_lost, 0.0);  // e == d; the RMS floor can only lower the statistic
}

TEST(Prc01Judge, RejectsSilentDowncastToBf16) {
  const std::vector<double> y = unrounded_values();
  const GateResult r = elementwise(y, rounded(DType::kBF16, y)).judge(GateId::kPrc01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  // bf16 keeps 8 of fp32's 24 significand bits: ~16 bits lost, far beyond the 2-bit limit.
  EXPECT_GT(r.evidence.bits_lost, significand_bits(DType::kF32) - significand_bits(DType::kBF16) - 2);
}

TEST(Prc01Judge, TiesMustRoundToNearestEven) {
  // 1 + 3*2^-24 lies halfway between 1 + 2^-23 (odd) and 1 + 2^-22 (even).
  const double tie = 1.0 + 3 * 0x1p-24;
  ASSERT_TRUE(is_tie(DType::kF32, tie));
  const GateResult even = elementwise({tie}, {1.0 + 0x1p-22}).judge(GateId::kPrc01);
  EXPECT_EQ(even.verdict, Verdict::kPass) << even.evidence.summary;
  // Truncation errs by exactly half an ulp: inside tau, same RMS error, caught only by the bits.
  const GateResult truncated = elementwise({tie}, {1.0 + 0x1p-23}).judge(GateId::kPrc01);
  EXPECT_EQ(truncated.verdict, Verdict::kFail);
  EXPECT_EQ(truncated.evidence.violations, 1);
  EXPECT_NE(truncated.evidence.summary.find("1 of 1 exact ties"), std::string::npos) << truncated.evidence.summary;
}

TEST(Prc01Judge, TiesOfANarrowOutputComputedInFp32AreChecked) {
  // bf16 add computed in fp32: the oracle's bound adds half an fp32 ulp for the double rounding;
  // a bf16 tie (9 significant bits) is exact in fp32, so RN-even is still the only right answer.
  const double tie = 1.0 + 3 * 0x1p-8;  // between 1 + 2^-7 (odd) and 1 + 2^-6 (even) in bf16
  ASSERT_TRUE(is_tie(DType::kBF16, tie));
  Synthetic s;
  s.contract.input_dtypes = {DType::kBF16, DType::kBF16};
  s.contract.output_dtypes = {DType::kBF16};
  const PrecisionModel m = precision_model(s.contract, DType::kBF16);
  ASSERT_LT(m.u_c, m.u_out);
  s.with_oracle(DType::kBF16, {tie}, {rounding_bound(m, tie, 0.5)});
  Synthetic truncated = s;
  s.with_call(testing::call_of(DType::kBF16, {1.0 + 0x1p-6}));
  EXPECT_EQ(s.judge(GateId::kPrc01).verdict, Verdict::kPass) << s.judge(GateId::kPrc01).evidence.summary;
  truncated.with_call(testing::call_of(DType::kBF16, {1.0 + 0x1p-7}));
  EXPECT_EQ(truncated.judge(GateId::kPrc01).verdict, Verdict::kFail);
}

TEST(Prc01Judge, TieCheckSkipsBoundsWiderThanOneRounding) {
  const double tie = 1.0 + 3 * 0x1p-24;
  Synthetic s;
  s.with_oracle(DType::kF32, {tie}, {0x1p-20}).with_call(std::vector<double>{1.0 + 0x1p-23});
  EXPECT_EQ(s.judge(GateId::kPrc01).verdict, Verdict::kPass);
}

// A reduction whose declared simulation errs by ±2^-18 per element.
Synthetic reduction(double candidate_error_scale) {
  Synthetic s;
  s.sig = testing::synthetic_sig("sum", /*reduction=*/true);
  std::vector<double> y, declared, got, tau;
  for (int i = 0; i < 32; ++i) {
    const double sign = i % 2 == 0 ? 1.0 : -1.0;
    y.push_back(1.0 + i / 16.0);
    declared.push_back(y.back() + sign * 0x1p-18);
    got.push_back(y.back() + candidate_error_scale * sign * 0x1p-18);
    tau.push_back(0x1p-10);
  }
  s.with_oracle(DType::kF32, y, tau).with_call(got);
  s.oracle.outputs[0].declared = declared;
  return s;
}

TEST(Prc02Judge, PassesAtTheDeclaredAccumulatorsError) {
  const GateResult r = reduction(1).judge(GateId::kPrc02);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
  EXPECT_EQ(r.evidence.bits_lost, 0.0);
}

TEST(Prc02Judge, TwoBitsLostIsTheLimit) {
  EXPECT_EQ(reduction(4).judge(GateId::kPrc02).verdict, Verdict::kPass);
  const GateResult r = reduction(8).judge(GateId::kPrc02);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.bits_lost, 3.0);
}

TEST(Prc02Judge, MissingDeclaredSimulationIsAnError) {
  Synthetic s = reduction(1);
  s.oracle.outputs[0].declared.clear();
  const GateResult r = s.judge(GateId::kPrc02);
  EXPECT_EQ(r.verdict, Verdict::kError);
  EXPECT_NE(r.reason.find("declared"), std::string::npos);
}

TEST(Prc01Judge, ExactCandidateOfExactOracleLosesNothing) {
  Synthetic s;  // all-zero outputs: the RMS floor is zero and so is the error
  s.with_oracle(DType::kF32, {0.0, -0.0}, {0, 0}).with_call(std::vector<double>{-0.0, 0.0});
  const GateResult r = s.judge(GateId::kPrc01);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
}

TEST(PrcThresholds, FollowTheProfileBudget) {
  EXPECT_EQ(gates::prc01_bits_threshold(0), 2.0);
  EXPECT_EQ(gates::prc01_bits_threshold(1), 3.0);
  EXPECT_EQ(gates::prc01_bits_threshold(3), 4.0);
  OpSignature div = testing::synthetic_sig("div");
  Contract strict;
  Contract fast;
  fast.profile = ProfileId::kFastMath;
  EXPECT_EQ(gates::op_ulp_budget(div, strict, 1.0), profile(ProfileId::kStrict).ulp_div);
  EXPECT_EQ(gates::op_ulp_budget(div, fast, 1.0), profile(ProfileId::kFastMath).ulp_div);
  EXPECT_EQ(gates::op_ulp_budget(testing::synthetic_sig("add"), fast, 1.0), 0.0);
  OpSignature exp = testing::synthetic_sig("exp");
  exp.uses_exp = true;
  const Profile& fm = profile(ProfileId::kFastMath);
  EXPECT_EQ(gates::op_ulp_budget(exp, fast, 10.0), exp_ulp_budget(fm, 10.0));
  EXPECT_GT(gates::op_ulp_budget(exp, fast, 80.0), gates::op_ulp_budget(exp, fast, 10.0));
}

}  // namespace
}  // namespace kcv
