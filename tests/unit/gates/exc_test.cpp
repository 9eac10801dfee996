// File: tests/unit/gates/exc_test.cpp
// EXC judges: EXC-01 compares the NaN/+Inf/-Inf class of every element exactly (index outputs
// exactly by value) and holds finite elements to tau; EXC-02 separates "flushed a subnormal"
// under keeping profiles from "kept a subnormal" under FTZ profiles.
#include <gtest/gtest.h>

#include <limits>

#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

using testing::Synthetic;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<double> kY = {kNaN, kInf, -kInf, 1.0, 0.0};
const std::vector<double> kTau = {0, 0, 0, 0x1p-10, 0};

Synthetic with_candidate(const std::vector<double>& got) {
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau).with_call(got);
  return s;
}

TEST(Exc01Judge, PassesWhenMaskMatches) {
  const GateResult r = with_candidate({kNaN, kInf, -kInf, 1.0 + 0x1p-11, -0.0}).judge(GateId::kExc01);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
}

TEST(Exc01Judge, RejectsDroppedNaN) {  // a maxNum reduction under a NaN-propagating profile
  const GateResult r = with_candidate({1.0, kInf, -kInf, 1.0, 0.0}).judge(GateId::kExc01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_index, 0);
  EXPECT_EQ(r.evidence.violations, 1);
  EXPECT_NE(r.evidence.summary.find("where the oracle is NaN"), std::string::npos) << r.evidence.summary;
}

TEST(Exc01Judge, RejectsWrongInfinitySign) {
  EXPECT_EQ(with_candidate({kNaN, -kInf, -kInf, 1.0, 0.0}).judge(GateId::kExc01).verdict, Verdict::kFail);
}

TEST(Exc01Judge, RejectsOverflowWhereOracleIsFinite) {  // softmax without max subtraction
  EXPECT_EQ(with_candidate({kNaN, kInf, -kInf, kNaN, 0.0}).judge(GateId::kExc01).verdict, Verdict::kFail);
}

// The mask only: a wrong finite value is CMP-01's finding (one defect, one gate).
TEST(Exc01Judge, LeavesWrongFiniteValuesToCmp01) {
  const GateResult r = with_candidate({kNaN, kInf, -kInf, 0.5, 0.0}).judge(GateId::kExc01);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
}

// EXC-01 reads no bound (judge_reads_bound): any tau gives the same verdict and evidence, so an
// oracle may hand its probes a bound without the pooled scale.
TEST(Exc01Judge, ReadsNoBound) {
  EXPECT_FALSE(judge_reads_bound(GateId::kExc01));
  for (const std::vector<double>& got : {std::vector<double>{kNaN, kInf, -kInf, 0.5, 0.0},
                                         std::vector<double>{1.0, kInf, -kInf, 1.0, 0.0}}) {
    const GateResult base = with_candidate(got).judge(GateId::kExc01);
    for (const double t : {0.0, kNaN, 1e300}) {
      Synthetic s;
      s.with_oracle(DType::kF32, kY, std::vector<double>(kY.size(), t)).with_call(got);
      const GateResult r = s.judge(GateId::kExc01);
      EXPECT_EQ(r.verdict, base.verdict);
      EXPECT_EQ(r.evidence.summary, base.evidence.summary);
      EXPECT_EQ(r.evidence.violations, base.evidence.violations);
    }
  }
  for (const GateId id : kAllGates) {
    if (id != GateId::kExc01) {
      EXPECT_TRUE(judge_reads_bound(id)) << gate_def(id).code;
    }
  }
}

TEST(Exc01Judge, AcceptsTheAlternativeClassThatTheProfileSanctions) {  // maxNum drops the NaN
  Synthetic s = with_candidate({1.0, kInf, -kInf, 1.0, 0.0});
  s.oracle.outputs[0].alternative = {1.0, kInf, -kInf, 1.0, 0.0};
  const GateResult r = s.judge(GateId::kExc01);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
}

TEST(Exc01Judge, LeavesAmbiguousElementsUnjudged) {
  // The declared-type run overflows where fp64 does not: no fp32 evaluation is bound to the fp64
  // class there, so a candidate's Inf at that element is not a finding; elsewhere it is.
  Synthetic s = with_candidate({kNaN, kInf, -kInf, kInf, 0.0});
  s.oracle.outputs[0].declared = {kNaN, kInf, -kInf, kInf, 0.0};
  GateResult r = s.judge(GateId::kExc01);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
  EXPECT_NE(r.evidence.summary.find("1 element(s) not judged"), std::string::npos) << r.evidence.summary;
  s.oracle.outputs[0].declared = {kNaN, kInf, -kInf, 1.0, 0.0};
  r = s.judge(GateId::kExc01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kClassMismatch);
}

TEST(Exc01Judge, ProbeWithoutInjectionsJudgesFiniteOutputs) {
  Synthetic s;
  s.probe.injections.clear();
  s.with_oracle(DType::kF32, {1.0, 2.0}, {0x1p-10, 0x1p-9}).with_call(std::vector<double>{1.0, 2.0});
  EXPECT_EQ(s.judge(GateId::kExc01).verdict, Verdict::kPass);
}

TEST(Exc01Judge, AllNaNOracleAndCandidatePass) {
  Synthetic s;
  s.with_oracle(DType::kF32, {kNaN, kNaN, kNaN}, {0, 0, 0}).with_call(std::vector<double>{kNaN, kNaN, kNaN});
  EXPECT_EQ(s.judge(GateId::kExc01).verdict, Verdict::kPass);
}

TEST(Exc01Judge, IndexOutputsCompareExactly) {  // argmax: the first NaN wins under pytorch-eager
  Synthetic s;
  s.with_oracle(DType::kI64, {3, 0}, {0, 0}).with_call(testing::call_of(DType::kI64, {3, 0}));
  EXPECT_EQ(s.judge(GateId::kExc01).verdict, Verdict::kPass);
  Synthetic t;
  t.with_oracle(DType::kI64, {3, 0}, {0, 0}).with_call(testing::call_of(DType::kI64, {3, 2}));
  EXPECT_EQ(t.judge(GateId::kExc01).verdict, Verdict::kFail);
}

TEST(Exc01Judge, ChecksEveryCall) {
  Synthetic s = with_candidate(kY);
  s.with_call(std::vector<double>{kNaN, kInf, kNaN, 1.0, 0.0});
  const GateResult r = s.judge(GateId::kExc01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("call 1"), std::string::npos) << r.evidence.summary;
}

// A product of two tiny fp32 values: exactly 3 subnormal spacings, bound of a single rounding.
const double kSub = 3 * min_subnormal(DType::kF32);

Synthetic subnormal_case(ProfileId profile, double oracle, double got) {
  Synthetic s;
  s.contract.profile = profile;
  const PrecisionModel m = precision_model(s.contract, DType::kF32);
  s.with_oracle(DType::kF32, {oracle, 1.0}, {rounding_bound(m, oracle, 0), rounding_bound(m, 1.0, 0)});
  s.with_call(std::vector<double>{got, 1.0});
  return s;
}

TEST(Exc02Judge, KeepingProfilePassesGradualUnderflow) {
  const GateResult r = subnormal_case(ProfileId::kStrict, kSub, kSub).judge(GateId::kExc02);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
}

TEST(Exc02Judge, KeepingProfileRejectsFlushToZero) {
  for (double zero : {0.0, -0.0}) {
    const GateResult r = subnormal_case(ProfileId::kCudaDefault, kSub, zero).judge(GateId::kExc02);
    EXPECT_EQ(r.verdict, Verdict::kFail);
    EXPECT_EQ(r.finding, Finding::kSubnormalFlushed);
    EXPECT_NE(r.evidence.summary.find("1 subnormal result(s) read as zero"), std::string::npos) << r.evidence.summary;
  }
}

TEST(Exc02Judge, FtzProfilePassesFlushedZeroOfEitherSign) {
  for (double zero : {0.0, -0.0}) {
    EXPECT_EQ(subnormal_case(ProfileId::kFastMath, 0.0, zero).judge(GateId::kExc02).verdict, Verdict::kPass);
  }
}

// FTZ is a permission: where the flushed result is the oracle's value and the kept one its
// alternative (and the other way round), keeping passes as flushing does.
TEST(Exc02Judge, FtzProfilePermitsKeepingTheSubnormal) {
  Synthetic s = subnormal_case(ProfileId::kFastMath, 0.0, kSub);
  s.oracle.outputs[0].alternative = {kSub, 1.0};
  EXPECT_EQ(s.judge(GateId::kExc02).verdict, Verdict::kPass);
  Synthetic t = subnormal_case(ProfileId::kFastMath, kSub, 0.0);
  t.oracle.outputs[0].alternative = {0.0, 1.0};
  EXPECT_EQ(t.judge(GateId::kExc02).verdict, Verdict::kPass);
}

// By class: a wrong value where no subnormal is involved is CMP-01's finding.
TEST(Exc02Judge, LeavesWrongNormalValuesToCmp01) {
  EXPECT_EQ(subnormal_case(ProfileId::kStrict, 1.0, kNaN).judge(GateId::kExc02).verdict, Verdict::kPass);
}

}  // namespace
}  // namespace kcv
