// File: glr/verify/tests/pipeline_test.cpp
// The GLR kernels through kcv's pipeline on the CPU: the sm_90a stage kernels compiled as host C++
// (libkcv_glr_emulated.so) pass CMP-01, ORD-02 and EXC-01 under the fp32 grade on the small case
// list, every member; the planted defects of libkcv_glr_redteam.so each fail their gate through
// the same pipeline and shrink, and a stored failing token replays to the same failure (and
// passes on the conforming twin).
#include <gtest/gtest.h>

#include "glr/verify/tests/pipeline_support.hpp"
#include "kcv/glr/verify.hpp"

namespace kcv::glr {
namespace {

using pipeline_test::load;
using pipeline_test::result_of;
using pipeline_test::small;

VerifyReport verify_one(Candidate& candidate, std::vector<GateId> gates, GlrOptions o = small()) {
  auto executor = make_forked_executor();
  VerifyOptions v;
  v.gates = std::move(gates);
  auto reports = verify(candidate, *executor, v, o);
  EXPECT_TRUE(reports.has_value()) << reports.error().to_string();
  EXPECT_EQ(reports->size(), o.grades.size());
  return reports->front();
}

class ConformingEmulation : public ::testing::TestWithParam<Member> {};

TEST_P(ConformingEmulation, PassesCmp01Ord02Exc01UnderTheFp32Grade) {
  auto candidate = load(KCV_GLR_EMULATED, op_name(GetParam()));
  ASSERT_NE(candidate, nullptr);
  const VerifyReport r = verify_one(*candidate, {});
  for (GateId id : {GateId::kCmp01, GateId::kOrd02, GateId::kExc01}) {
    const GateResult& g = result_of(r, id);
    EXPECT_EQ(g.verdict, Verdict::kPass) << gate_code(id) << ": " << g.evidence.summary;
    EXPECT_GT(g.probes_run, 0) << gate_code(id);
  }
  EXPECT_EQ(result_of(r, GateId::kRes02).verdict, Verdict::kNotApplicable);
  EXPECT_TRUE(r.replay_lines.empty());
  EXPECT_TRUE(r.passed());
}

INSTANTIATE_TEST_SUITE_P(Members, ConformingEmulation, ::testing::ValuesIn(kAllMembers),
                         [](const auto& info) { return std::string(name(info.param)); });

TEST(PlantedDefect, PerturbedOutputFailsCmp01AndShrinksToOneToken) {
  auto candidate = load(KCV_GLR_REDTEAM, "redteam.glr.gdn.perturbed_output");
  ASSERT_NE(candidate, nullptr);
  const VerifyReport r = verify_one(*candidate, {GateId::kCmp01});
  const GateResult& g = result_of(r, GateId::kCmp01);
  ASSERT_EQ(g.verdict, Verdict::kFail) << g.evidence.summary;
  EXPECT_EQ(g.finding, Finding::kValueOverBound);
  ASSERT_TRUE(g.failing_probe.has_value());
  const Case shrunk = *case_of(*g.failing_probe);
  EXPECT_EQ(shrunk.tokens(), 1) << g.failing_probe->label;
  EXPECT_EQ(shrunk.v_heads, 1);
  EXPECT_LE(shrunk.value_dim, 8);
  EXPECT_NE(g.failing_probe->label.find("(shrunk)"), std::string::npos);
  ASSERT_EQ(r.replay_lines.size(), 1u);

  // The stored token replays to the same failure; the conforming twin passes it.
  const Expected<Probe> token = probe_from_token(probe_to_token(*g.failing_probe));
  ASSERT_TRUE(token.has_value());
  auto executor = make_forked_executor();
  const GateResult again = run_probe(*candidate, *executor, *token, r.contract, small());
  EXPECT_EQ(again.verdict, Verdict::kFail) << again.evidence.summary;
  auto twin = load(KCV_GLR_REDTEAM, "glr.gdn");
  const GateResult twin_result = run_probe(*twin, *executor, *token, r.contract, small());
  EXPECT_EQ(twin_result.verdict, Verdict::kPass) << twin_result.evidence.summary;
}

TEST(PlantedDefect, StaleOutputBitFailsOrd02AloneAndShrinksToTwoCalls) {
  auto candidate = load(KCV_GLR_REDTEAM, "redteam.glr.gdn.stale_output_bit");
  ASSERT_NE(candidate, nullptr);
  const VerifyReport r = verify_one(*candidate, {GateId::kCmp01, GateId::kOrd02});
  EXPECT_EQ(result_of(r, GateId::kCmp01).verdict, Verdict::kPass)
      << result_of(r, GateId::kCmp01).evidence.summary;
  const GateResult& g = result_of(r, GateId::kOrd02);
  ASSERT_EQ(g.verdict, Verdict::kFail) << g.evidence.summary;
  EXPECT_EQ(g.finding, Finding::kNondeterministic);
  ASSERT_TRUE(g.failing_probe.has_value());
  EXPECT_EQ(g.failing_probe->repetitions, 2);
  EXPECT_EQ(case_of(*g.failing_probe)->tokens(), 1) << g.failing_probe->label;
}

TEST(PlantedDefect, ZeroedNanFailsExc01WithAClassMismatch) {
  auto candidate = load(KCV_GLR_REDTEAM, "redteam.glr.gdn.nan_zeroed");
  ASSERT_NE(candidate, nullptr);
  const VerifyReport r = verify_one(*candidate, {GateId::kCmp01, GateId::kExc01});
  EXPECT_EQ(result_of(r, GateId::kCmp01).verdict, Verdict::kPass);
  const GateResult& g = result_of(r, GateId::kExc01);
  ASSERT_EQ(g.verdict, Verdict::kFail) << g.evidence.summary;
  EXPECT_EQ(g.finding, Finding::kClassMismatch);
  ASSERT_TRUE(g.failing_probe.has_value());
  EXPECT_FALSE(g.failing_probe->injections.empty());
  EXPECT_NE(g.evidence.summary.find("o["), std::string::npos) << g.evidence.summary;
}

TEST(GlrVerify, OneReportPerGradeAndAProbeOfAnotherMemberIsAnError) {
  auto candidate = load(KCV_GLR_EMULATED, "glr.la");
  ASSERT_NE(candidate, nullptr);
  GlrOptions o = small();
  o.grades = {Grade::kFp32, Grade::kBf16};
  auto executor = make_forked_executor();
  VerifyOptions v;
  v.gates = {GateId::kCmp01};
  auto reports = verify(*candidate, *executor, v, o);
  ASSERT_TRUE(reports.has_value());
  ASSERT_EQ(reports->size(), 2u);
  EXPECT_EQ((*reports)[0].kernel, "glr.la [fp32]");
  EXPECT_EQ((*reports)[1].kernel, "glr.la [bf16]");
  EXPECT_TRUE((*reports)[1].passed());
  Case c;
  c.member = Member::kKda;
  const GateResult wrong =
      run_probe(*candidate, *executor, probe_of(c, GateId::kCmp01, ""), Contract{}, small());
  EXPECT_EQ(wrong.verdict, Verdict::kError);
  EXPECT_NE(wrong.reason.find("glr.kda"), std::string::npos) << wrong.reason;
}

}  // namespace
}  // namespace kcv::glr
