// File: tests/unit/gates/cmp_test.cpp
// CMP judges on hand-built outcomes: a conforming call passes, a broken one fails with evidence
// naming what broke; crashes and malformed outputs fail the gate being probed.
#include <gtest/gtest.h>

#include <limits>

#include "gates/judge_common.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

using testing::offset_by;
using testing::Synthetic;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Oracle values exact in fp32 and bounds that are powers of two, so candidate offsets of
// k*tau are exact and the ratio is exactly k.
const std::vector<double> kY = {1.0, -2.5, 0.75, 1024.0};
const std::vector<double> kTau = {0x1p-10, 0x1p-9, 0x1p-12, 0x1p-3};

Synthetic conforming() {
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau).with_call(offset_by(kY, kTau, 0.5));
  return s;
}

TEST(Cmp01Judge, PassesWithinTheBound) {
  const GateResult r = conforming().judge(GateId::kCmp01);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
  EXPECT_EQ(r.evidence.worst_ratio, 0.5);
  EXPECT_EQ(r.evidence.ratio_quantiles.size(), 4u);
  EXPECT_FALSE(r.failing_probe.has_value());
}

TEST(Cmp01Judge, FailsJustBeyondTheBoundWithEvidence) {
  Synthetic s;
  std::vector<double> got = kY;
  got[3] = kY[3] + 2 * kTau[3];
  s.with_oracle(DType::kF32, kY, kTau).with_call(got);
  const GateResult r = s.judge(GateId::kCmp01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_index, 3);
  EXPECT_EQ(r.evidence.worst_ratio, 2.0);
  EXPECT_EQ(r.evidence.candidate_value, got[3]);
  EXPECT_EQ(r.evidence.oracle_value, kY[3]);
  EXPECT_EQ(r.evidence.violations, 1);
  EXPECT_TRUE(r.failing_probe.has_value());
  EXPECT_NE(r.evidence.summary.find("out[3]"), std::string::npos) << r.evidence.summary;
}

TEST(Cmp01Judge, RejectsSilentNaNWhereOracleIsFinite) {
  Synthetic s;
  std::vector<double> got = kY;
  got[0] = kNaN;
  s.with_oracle(DType::kF32, kY, kTau).with_call(got);
  const GateResult r = s.judge(GateId::kCmp01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_ratio, std::numeric_limits<double>::infinity());
}

TEST(Cmp01Judge, CrashFailsTheGateWithItsStatus) {
  Synthetic s = conforming();
  s.outcome.calls[0].status = CallStatus::kCrash;
  s.outcome.calls[0].message = "SIGSEGV";
  const GateResult r = s.judge(GateId::kCmp01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("status crash"), std::string::npos);
  EXPECT_NE(r.evidence.summary.find("SIGSEGV"), std::string::npos);
}

TEST(Cmp01Judge, WrongOutputCountFails) {
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau).with_call(std::vector<double>{1.0, 2.0});
  EXPECT_EQ(s.judge(GateId::kCmp01).verdict, Verdict::kFail);
}

TEST(Cmp01Judge, NoCallIsAnError) {
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau);
  const GateResult r = s.judge(GateId::kCmp01);
  EXPECT_EQ(r.verdict, Verdict::kError);
  EXPECT_FALSE(r.reason.empty());
}

TEST(Cmp01Judge, InconsistentOracleIsAnError) {
  Synthetic s = conforming();
  s.oracle.outputs[0].tau.pop_back();
  EXPECT_EQ(s.judge(GateId::kCmp01).verdict, Verdict::kError);
}

TEST(Cmp01Judge, ZeroTauElementsDemandExactValues) {
  Synthetic s;
  s.with_oracle(DType::kF32, {3.0, 0.0}, {0, 0}).with_call(std::vector<double>{3.0, -0.0});
  EXPECT_EQ(s.judge(GateId::kCmp01).verdict, Verdict::kPass);
  Synthetic t;
  t.with_oracle(DType::kF32, {3.0, 0.0}, {0, 0}).with_call(std::vector<double>{3.0, 0x1p-149});
  EXPECT_EQ(t.judge(GateId::kCmp01).verdict, Verdict::kFail);
}

TEST(Cmp01Judge, SingleElementAndAllNaNOracle) {
  Synthetic one;
  one.with_oracle(DType::kF32, {2.0}, {0x1p-8}).with_call(std::vector<double>{2.0 + 0x1p-9});
  EXPECT_EQ(one.judge(GateId::kCmp01).verdict, Verdict::kPass);
  Synthetic nan;  // nothing finite to compare: the mask is EXC-01's business
  nan.with_oracle(DType::kF32, {kNaN, kNaN}, {0, 0}).with_call(std::vector<double>{1.0, kNaN});
  const GateResult r = nan.judge(GateId::kCmp01);
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.evidence.worst_index, -1);
}

TEST(Cmp01Judge, JudgesTheWorstOfSeveralCalls) {
  Synthetic s = conforming();
  s.with_call(offset_by(kY, kTau, -3));
  const GateResult r = s.judge(GateId::kCmp01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_ratio, 3.0);
}

TEST(Cmp03Judge, SharesTheNumericCriterion) {
  EXPECT_EQ(conforming().judge(GateId::kCmp03).verdict, Verdict::kPass);
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau).with_call(offset_by(kY, kTau, 1.5));
  EXPECT_EQ(s.judge(GateId::kCmp03).verdict, Verdict::kFail);
}

TEST(Cmp02Judge, PassesWhenBuffersIntactAndValuesRight) {
  const GateResult r = conforming().judge(GateId::kCmp02);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
}

TEST(Cmp02Judge, FailsOnInputMutationAndSaysSo) {
  Synthetic s = conforming();
  s.outcome.calls[0].inputs_unchanged = false;
  s.outcome.calls[0].mutated_input = 0;
  s.outcome.calls[0].first_mutated_input_elem = 7;
  const GateResult r = s.judge(GateId::kCmp02);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kInputModified);
  EXPECT_NE(r.evidence.summary.find("x modified"), std::string::npos) << r.evidence.summary;
}

TEST(Cmp02Judge, FailsOnGuardWriteAndSaysSo) {
  Synthetic s = conforming();
  s.outcome.calls[0].guards_intact = false;
  s.outcome.calls[0].first_guard_violation = 16;
  const GateResult r = s.judge(GateId::kCmp02);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kWrittenOutside);
  EXPECT_NE(r.evidence.summary.find("guard"), std::string::npos) << r.evidence.summary;
}

TEST(Cmp02Judge, FailsOnAnUnwrittenOutputElement) {
  Synthetic s = conforming();
  s.outcome.calls[0].all_written = false;
  s.outcome.calls[0].unwritten_output = 0;
  s.outcome.calls[0].first_unwritten = 2;
  const GateResult r = s.judge(GateId::kCmp02);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kOutputUnwritten);
  EXPECT_EQ(r.evidence.worst_index, 2);
}

// Structural only: a wrong value read by stride is CMP-03's finding, not CMP-02's (one defect,
// one gate), so CMP-02 passes where the buffers are intact and CMP-03 fails on the same calls.
TEST(Cmp02Judge, LeavesWrongElementReadsToCmp03) {
  Synthetic s;  // a contiguity-assuming kernel reads a neighbour's value
  s.with_oracle(DType::kF32, kY, kTau).with_call(std::vector<double>{kY[0], kY[2], kY[2], kY[3]});
  EXPECT_EQ(s.judge(GateId::kCmp02).verdict, Verdict::kPass);
  const GateResult r = s.judge(GateId::kCmp03);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kValueOverBound);
  EXPECT_EQ(r.evidence.worst_index, 1);
}

}  // namespace
}  // namespace kcv
