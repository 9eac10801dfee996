// File: tests/unit/gates/ord_test.cpp
// ORD judges: ORD-01 is numeric agreement; ORD-02 bitwise equality across calls (NaN payloads and
// zero signs included); ORD-03 schedule disagreement beyond 2*tau and agreement with the oracle.
#include <gtest/gtest.h>

#include <limits>

#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

using testing::offset_by;
using testing::Synthetic;

const std::vector<double> kY = {1.0, -2.5, 0.75, 1024.0};
const std::vector<double> kTau = {0x1p-10, 0x1p-9, 0x1p-12, 0x1p-3};

Synthetic repeated(int calls, const std::vector<double>& values) {
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau);
  for (int k = 0; k < calls; ++k) s.with_call(values);
  return s;
}

TEST(Ord01Judge, PassesInsideAndFailsOutsideTheAccumulationBound) {
  EXPECT_EQ(repeated(1, offset_by(kY, kTau, -1)).judge(GateId::kOrd01).verdict, Verdict::kPass);
  const GateResult r = repeated(1, offset_by(kY, kTau, -1.25)).judge(GateId::kOrd01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_ratio, 1.25);
}

TEST(Ord02Judge, PassesWhenEveryCallIsBitwiseIdentical) {
  const GateResult r = repeated(8, offset_by(kY, kTau, 0.75)).judge(GateId::kOrd02);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
  EXPECT_EQ(r.evidence.violations, 0);
}

TEST(Ord02Judge, FailsOnOneBitInOneCall) {
  Synthetic s = repeated(8, kY);
  HostTensor& t = s.outcome.calls[5].outputs[0];
  t.set_bits_at(2, t.bits_at(2) ^ 1u);
  const GateResult r = s.judge(GateId::kOrd02);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_index, 2);
  EXPECT_EQ(r.evidence.violations, 1);
  EXPECT_NE(r.evidence.summary.find("call 5"), std::string::npos) << r.evidence.summary;
}

TEST(Ord02Judge, SignedZerosAndNaNPayloadsCount) {
  Synthetic zeros;
  zeros.with_oracle(DType::kF32, {0.0}, {0}).with_call(std::vector<double>{0.0}).with_call(std::vector<double>{-0.0});
  EXPECT_EQ(zeros.judge(GateId::kOrd02).verdict, Verdict::kFail);

  Synthetic nans;
  nans.with_oracle(DType::kF32, {1.0}, {0x1p-10});
  nans.with_call(std::vector<double>{1.0}).with_call(std::vector<double>{1.0});
  nans.outcome.calls[0].outputs[0].set_bits_at(0, 0x7fc00001u);
  nans.outcome.calls[1].outputs[0].set_bits_at(0, 0x7fc00001u);
  EXPECT_EQ(nans.judge(GateId::kOrd02).verdict, Verdict::kPass);
  nans.outcome.calls[1].outputs[0].set_bits_at(0, 0x7fc00002u);
  EXPECT_EQ(nans.judge(GateId::kOrd02).verdict, Verdict::kFail);
}

TEST(Ord02Judge, OneCallIsTriviallyDeterministic) {
  EXPECT_EQ(repeated(1, kY).judge(GateId::kOrd02).verdict, Verdict::kPass);
}

TEST(Ord03Judge, PassesWhenConfigsAgreeWithinTwiceTau) {
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau).with_call(offset_by(kY, kTau, 0.875)).with_call(offset_by(kY, kTau, -0.875));
  const GateResult r = s.judge(GateId::kOrd03);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
}

TEST(Ord03Judge, FailsWhenConfigsDisagreeBeyondTwiceTau) {
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau).with_call(offset_by(kY, kTau, 1.5)).with_call(offset_by(kY, kTau, -1.5));
  s.outcome.calls[1].launch = LaunchConfig{128, 4};
  const GateResult r = s.judge(GateId::kOrd03);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_ratio, 1.5);  // spread 3 tau against 2 tau
  EXPECT_NE(r.evidence.summary.find("disagree"), std::string::npos) << r.evidence.summary;
}

TEST(Ord03Judge, FailsWhenAllConfigsAgreeOnAWrongValue) {
  const GateResult r = repeated(3, offset_by(kY, kTau, 2)).judge(GateId::kOrd03);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_ratio, 2.0);
}

TEST(Ord03Judge, ExactElementsMustAgreeExactly) {
  Synthetic s;
  s.with_oracle(DType::kI64, {3, 4}, {0, 0});
  s.with_call(testing::call_of(DType::kI64, {3, 4})).with_call(testing::call_of(DType::kI64, {3, 5}));
  EXPECT_EQ(s.judge(GateId::kOrd03).verdict, Verdict::kFail);
}

}  // namespace
}  // namespace kcv
