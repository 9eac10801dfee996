// File: glr/verify/tests/decode_test.cpp
// The decode ops (glr.<member>.decode) through kcv's pipeline on the CPU: decode cases survive the
// token round trip and are refused where the op does not take them (a chunk case with K = 256 or
// fp16 q, a decode case under the bf16 grade); the decode plans cover one and a few tokens, with
// and without an initial state, varlen, GVA, fp16, fp32 and K = V = 256; the oracle is the
// token-serial forward with the decode bound (decode_model_scale); the decode kernel's body on
// the CPU (libkcv_glr_emulated.so) passes CMP-01, ORD-02 and EXC-01 for every member; the planted
// decode defects of libkcv_glr_redteam.so (no state decay, a bf16 final state) fail CMP-01 and
// shrink, and the shrunk token passes on the conforming twin.
#include <gtest/gtest.h>

#include <set>

#include "glr/verify/internal.hpp"
#include "glr/verify/tests/pipeline_support.hpp"
#include "kcv/glr/oracle.hpp"

namespace kcv::glr {
namespace {

using pipeline_test::load;
using pipeline_test::result_of;
using pipeline_test::small;

Case decode_case(Member m) {
  Case c;
  c.member = m;
  c.op = OpKind::kDecode;
  c.lengths = {1, 3, 2};
  c.qk_heads = 1;
  c.v_heads = 2;
  c.key_dim = 256;
  c.value_dim = 256;
  c.io = DType::kF16;
  c.initial_state = false;
  c.layout = StateLayout::kVK;
  return c;
}

std::vector<VerifyReport> verify_all(Candidate& candidate, std::vector<GateId> gates,
                                     GlrOptions o = small()) {
  auto executor = make_forked_executor();
  VerifyOptions v;
  v.gates = std::move(gates);
  auto reports = verify(candidate, *executor, v, o);
  EXPECT_TRUE(reports.has_value()) << reports.error().to_string();
  return reports ? std::move(*reports) : std::vector<VerifyReport>{};
}

TEST(GlrDecodeCase, SurvivesTheTokenRoundTripAndNamesItsOp) {
  ASSERT_TRUE(register_ops().ok());
  for (Member m : kAllMembers) {
    const Case c = decode_case(m);
    const Probe p = probe_of(c, GateId::kCmp01, "x");
    const Expected<Probe> back = probe_from_token(probe_to_token(p));
    ASSERT_TRUE(back.has_value());
    const Expected<Case> again = case_of(*back);
    ASSERT_TRUE(again.has_value()) << again.error().to_string();
    EXPECT_EQ(*again, c) << name(m);
    EXPECT_EQ(op_name(m, OpKind::kDecode), "glr." + std::string(name(m)) + ".decode");
    ASSERT_NE(find_op(op_name(m, OpKind::kDecode)), nullptr);
    EXPECT_EQ(member_of_op(op_name(m, OpKind::kDecode)), m);
    EXPECT_EQ(glr_op_of(op_name(m, OpKind::kDecode))->op, OpKind::kDecode);
    EXPECT_EQ(glr_op_of(op_name(m))->op, OpKind::kChunk);
    const OpSignature& sig = signature(m, OpKind::kDecode);
    EXPECT_EQ(sig.outputs.size(), 2u);
    EXPECT_EQ(input_index(m, "do", OpKind::kDecode), -1);
    EXPECT_EQ(p.inputs.front().dtype, DType::kF16);
  }
}

TEST(GlrDecodeCase, RefusesWhatTheOpDoesNotTakeNamingTheField) {
  const auto refused = [](const Probe& p, const char* field) {
    const Expected<Case> c = case_of(p);
    ASSERT_FALSE(c.has_value()) << field;
    EXPECT_NE(c.error().message.find(field), std::string::npos) << c.error().to_string();
  };
  Case c = decode_case(Member::kGatedDeltaNet);
  Probe p = probe_of(c, GateId::kCmp01, "");
  p.sizes["K"] = 257;
  refused(p, "sizes.K");
  p = probe_of(c, GateId::kCmp01, "");
  p.tags["grade"] = "bf16";
  refused(p, "tags.grade");
  p.tags["grade"] = "fp32";
  p.tags["op"] = "prefill";
  refused(p, "tags.op");
  c.op = OpKind::kChunk;  // the chunk kernels take bf16 q, k, v and K, V <= 128
  c.io = DType::kBF16;
  refused(probe_of(c, GateId::kCmp01, ""), "sizes.K");
  c.key_dim = c.value_dim = 128;
  c.io = DType::kF16;
  refused(probe_of(c, GateId::kCmp01, ""), "inputs[0]");
}

TEST(GlrDecodePlan, CoversOneAndFewTokensStatesVarlenGvaDtypesAndHeadDims) {
  for (CaseList list : {CaseList::kSmall, CaseList::kFull}) {
    GlrOptions o;
    o.cases = list;
    const GlrProbes probes(Member::kGatedDeltaNet, OpKind::kDecode, Grade::kBf16, o);
    std::set<DType> dtypes;
    bool single = false, few = false, no_h0 = false, h0 = false, varlen = false, gva = false,
         d256 = false, vk = false;
    for (const Probe& p : probes.plan(GateId::kCmp01, Contract{}, 1)) {
      const Case c = *case_of(p);
      EXPECT_EQ(c.op, OpKind::kDecode);
      EXPECT_EQ(c.grade, Grade::kFp32);
      dtypes.insert(c.io);
      for (std::int64_t n : c.lengths) (n == 1 ? single : few) = true;
      (c.initial_state ? h0 : no_h0) = true;
      varlen = varlen || (c.packing != Packing::kBatch && c.lengths.size() > 1);
      gva = gva || c.v_heads > c.qk_heads;
      d256 = d256 || (c.key_dim == 256 && c.value_dim == 256);
      vk = vk || c.layout == StateLayout::kVK;
    }
    EXPECT_EQ(dtypes, (std::set<DType>{DType::kBF16, DType::kF16, DType::kF32}));
    EXPECT_TRUE(single && few && h0 && no_h0 && varlen && gva && d256 && vk);
    const Probe ord = probes.plan(GateId::kOrd02, Contract{}, 1).front();
    EXPECT_EQ(case_of(ord)->op, OpKind::kDecode);
    EXPECT_TRUE(ord.shift_addresses);
    EXPECT_EQ(probes.plan(GateId::kExc01, Contract{}, 1).size(), 3u);
  }
}

TEST(GlrDecodeOracle, IsTheTokenSerialForwardWithTheDecodeBound) {
  GlrOptions o;
  o.threads = 2;
  GlrOracle oracle(o);
  const Case c = decode_case(Member::kKda);
  const Probe p = probe_of(c, GateId::kCmp01, "");
  auto in = oracle.make_inputs(p);
  ASSERT_TRUE(in.has_value());
  ASSERT_EQ(in->outputs.size(), 2u);
  EXPECT_EQ(in->outputs[0].dtype, DType::kF16);
  auto r = oracle.evaluate(p, *in, Contract{});
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  ASSERT_EQ((*r)->outputs.size(), 2u);
  const auto d = verify_detail::data_of(c, in->tensors);
  for (double h : d.problem.h0) ASSERT_EQ(h, 0.0);  // no initial state
  const auto want = oracle_forward(c.member, d.problem);
  ASSERT_TRUE(want.has_value());
  EXPECT_EQ((*r)->outputs[0].value, want->o);
  EXPECT_EQ((*r)->outputs[1].value, want->final_state);
  const ModelScale m = decode_model_scale(d.problem);
  EXPECT_EQ(m.depth, 2 * (3 + 256));
  EXPECT_EQ(m.log_decay, 0.0);
  const auto tau_o = glr::tau(Output::kO, want->o, c.shape(), 256, m, 0x1p-11);
  const auto tau_ht = glr::tau(Output::kFinalState, want->final_state, c.shape(), 256, m, 0x1p-24);
  EXPECT_EQ((*r)->outputs[0].tau, *tau_o);
  EXPECT_EQ((*r)->outputs[1].tau, *tau_ht);
}

class ConformingDecode : public ::testing::TestWithParam<Member> {};

TEST_P(ConformingDecode, PassesCmp01Ord02Exc01InOneReport) {
  auto candidate = load(KCV_GLR_EMULATED, op_name(GetParam(), OpKind::kDecode));
  ASSERT_NE(candidate, nullptr);
  GlrOptions o = small();
  o.grades = {Grade::kFp32, Grade::kBf16};  // a decode op has one contract: one report
  const std::vector<VerifyReport> reports = verify_all(*candidate, {}, o);
  ASSERT_EQ(reports.size(), 1u);
  const VerifyReport& r = reports.front();
  EXPECT_EQ(r.kernel, op_name(GetParam(), OpKind::kDecode) + " [fp32]");
  for (GateId id : {GateId::kCmp01, GateId::kOrd02, GateId::kExc01}) {
    const GateResult& g = result_of(r, id);
    EXPECT_EQ(g.verdict, Verdict::kPass) << gate_code(id) << ": " << g.evidence.summary;
    EXPECT_GT(g.probes_run, 0) << gate_code(id);
  }
  EXPECT_EQ(result_of(r, GateId::kRes02).verdict, Verdict::kNotApplicable);
  EXPECT_TRUE(r.passed());
}

INSTANTIATE_TEST_SUITE_P(Members, ConformingDecode, ::testing::ValuesIn(kAllMembers),
                         [](const auto& info) { return std::string(name(info.param)); });

// The planted defect fails CMP-01 on `output`, shrinks to one token, and the shrunk token passes
// on the conforming twin.
void expect_cmp01_failure(const char* kernel, const char* output) {
  auto candidate = load(KCV_GLR_REDTEAM, kernel);
  ASSERT_NE(candidate, nullptr);
  const std::vector<VerifyReport> reports = verify_all(*candidate, {GateId::kCmp01});
  ASSERT_EQ(reports.size(), 1u);
  const GateResult& g = result_of(reports.front(), GateId::kCmp01);
  ASSERT_EQ(g.verdict, Verdict::kFail) << g.evidence.summary;
  EXPECT_EQ(g.finding, Finding::kValueOverBound);
  EXPECT_NE(g.evidence.summary.find(output), std::string::npos) << g.evidence.summary;
  ASSERT_TRUE(g.failing_probe.has_value());
  EXPECT_EQ(case_of(*g.failing_probe)->tokens(), 1) << g.failing_probe->label;
  EXPECT_EQ(reports.front().replay_lines.size(), 1u);
  auto executor = make_forked_executor();
  auto twin = load(KCV_GLR_REDTEAM, "glr.gdn.decode");
  const GateResult again =
      run_probe(*twin, *executor, *g.failing_probe, reports.front().contract, small());
  EXPECT_EQ(again.verdict, Verdict::kPass) << again.evidence.summary;
}

TEST(PlantedDecodeDefect, SkippedStateDecayFailsCmp01AndShrinksToOneToken) {
  expect_cmp01_failure("redteam.glr.gdn.decode.no_decay", "[");
}

TEST(PlantedDecodeDefect, OneBf16RoundingOfTheStateFailsCmp01OnHt) {
  expect_cmp01_failure("redteam.glr.gdn.decode.bf16_state", "ht[");
}

TEST(GlrDecodeVerify, AProbeOfTheChunkOpIsAnErrorOnADecodeCandidate) {
  auto candidate = load(KCV_GLR_EMULATED, "glr.gdn.decode");
  ASSERT_NE(candidate, nullptr);
  auto executor = make_forked_executor();
  Case c;
  const GateResult wrong =
      run_probe(*candidate, *executor, probe_of(c, GateId::kCmp01, ""), Contract{}, small());
  EXPECT_EQ(wrong.verdict, Verdict::kError);
  EXPECT_NE(wrong.reason.find("glr.gdn,"), std::string::npos) << wrong.reason;
}

}  // namespace
}  // namespace kcv::glr
