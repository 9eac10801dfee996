// File: glr/verify/tests/case_test.cpp
// GLR cases as probes: every case survives the token round trip, a malformed GLR probe is refused
// naming its field, inputs are a function of the token, the plans cover the case list of the
// verification (docs/glr/verification.md) and every shrink step is a valid, simpler probe that
// keeps its NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "glr/verify/internal.hpp"

namespace kcv::glr {
namespace {

Case sample(Member m) {
  Case c;
  c.member = m;
  c.lengths = {1, 70, 5};
  c.packing = Packing::kVarlenI32;
  c.qk_heads = 1;
  c.v_heads = 2;
  c.key_dim = 24;
  c.value_dim = 40;
  c.decay = Decay::kStrong;
  c.layout = StateLayout::kVK;
  c.gate_bf16 = traits(m).gate != GateKind::kNone;
  c.beta_f32 = traits(m).delta_rule;
  c.grade = Grade::kBf16;
  return c;
}

TEST(GlrCase, SurvivesTheTokenRoundTrip) {
  ASSERT_TRUE(register_ops().ok());
  for (Member m : kAllMembers) {
    const Case c = sample(m);
    const Probe p = probe_of(c, GateId::kCmp01, "x");
    const Expected<Probe> back = probe_from_token(probe_to_token(p));
    ASSERT_TRUE(back.has_value()) << back.error().to_string();
    const Expected<Case> again = case_of(*back);
    ASSERT_TRUE(again.has_value()) << again.error().to_string();
    EXPECT_EQ(*again, c) << name(m);
    EXPECT_NE(find_op(op_name(m)), nullptr);
    EXPECT_EQ(member_of_op(op_name(m)), m);
  }
}

TEST(GlrCase, RefusesMalformedProbesNamingTheField) {
  const Probe good = probe_of(sample(Member::kGatedDeltaNet), GateId::kCmp01, "");
  const auto refused = [](Probe p, const char* field) {
    const Expected<Case> c = case_of(p);
    ASSERT_FALSE(c.has_value()) << field;
    EXPECT_NE(c.error().message.find(field), std::string::npos) << c.error().to_string();
  };
  Probe p = good;
  p.tags.erase("member");
  refused(p, "tags.member");
  p = good;
  p.tags["grade"] = "fp8";
  refused(p, "tags.grade");
  p = good;
  p.segments.push_back(3);
  refused(p, "sizes.T");
  p = good;
  p.sizes["H"] = 4;  // HV = 2
  refused(p, "sizes.HV");
  p = good;
  p.sizes["K"] = 256;
  refused(p, "sizes.K");
  p = good;
  p.tags["packing"] = "batch";
  refused(p, "segments");
  p = good;
  p.inputs.pop_back();
  refused(p, "inputs");
}

TEST(GlrCase, InputsAreAFunctionOfTheToken) {
  Case c = sample(Member::kKda);
  Probe p = probe_of(c, GateId::kCmp01, "");
  p.seed = 11;
  const auto a = verify_detail::make_tensors(c, p);
  const auto b = verify_detail::make_tensors(c, *probe_from_token(probe_to_token(p)));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].numel(), b[i].numel());
    for (int64_t j = 0; j < a[i].numel(); ++j) ASSERT_EQ(a[i].bits_at(j), b[i].bits_at(j));
  }
  // q rows have unit norm up to bf16 rounding; beta in (0, 1); strong decays are below -0.6/0.01.
  const HostTensor& q = a[static_cast<std::size_t>(input_index(c.member, "q"))];
  double ss = 0;
  for (int64_t d = 0; d < c.key_dim; ++d) ss += q.value_at(d) * q.value_at(d);
  EXPECT_NEAR(ss, 1.0, 0.02);
  const HostTensor& g = a[static_cast<std::size_t>(input_index(c.member, "g"))];
  EXPECT_EQ(g.dtype(), DType::kBF16);
  for (int64_t i = 0; i < g.numel(); ++i) EXPECT_LT(g.value_at(i), -30.0);
  p.seed = 12;
  const auto other = verify_detail::make_tensors(c, p);
  EXPECT_NE(other[0].bits_at(0), a[0].bits_at(0));
}

TEST(GlrPlan, FullListCoversTheVerifiedShapes) {
  GlrOptions o;
  const GlrProbes probes(Member::kGatedDeltaNet, Grade::kFp32, o);
  std::set<int64_t> tokens, dims;
  bool gva = false, varlen = false, vk = false, batch = false;
  for (const Probe& p : probes.plan(GateId::kCmp01, Contract{}, 1)) {
    const Case c = *case_of(p);
    for (int64_t n : c.lengths) tokens.insert(n);
    if (c.key_dim == c.value_dim) dims.insert(c.key_dim);
    gva = gva || c.v_heads > c.qk_heads;
    varlen = varlen || c.lengths.size() >= 5;
    vk = vk || c.layout == StateLayout::kVK;
    batch = batch || c.packing == Packing::kBatch;
  }
  for (int64_t t : {1, 63, 64, 65, 1000, 8192, 32768}) EXPECT_TRUE(tokens.count(t)) << t;
  for (int64_t d : {64, 100, 128}) EXPECT_TRUE(dims.count(d)) << d;
  EXPECT_TRUE(gva && varlen && vk && batch);
  const std::vector<Probe> ord = probes.plan(GateId::kOrd02, Contract{}, 1);
  ASSERT_EQ(ord.size(), 1u);
  EXPECT_EQ(ord[0].repetitions, 10);
  EXPECT_TRUE(ord[0].shift_addresses);
  for (const Probe& p : probes.plan(GateId::kExc01, Contract{}, 1)) {
    ASSERT_FALSE(p.injections.empty());
    for (const Injection& inj : p.injections) {
      EXPECT_EQ(inj.input, input_index(Member::kGatedDeltaNet, "v"));
      EXPECT_EQ(inj.value, Special::kNaN);
    }
  }
  EXPECT_FALSE(probes.not_applicable_reason(GateId::kOrd03, Contract{}).empty());
  EXPECT_TRUE(probes.not_applicable_reason(GateId::kExc01, Contract{}).empty());
}

TEST(GlrPlan, ShrinkStepsAreValidSimplerProbesThatKeepTheirNaN) {
  GlrOptions o;
  o.cases = CaseList::kSmall;
  for (Member m : {Member::kGatedDeltaNet, Member::kLinearAttention}) {
    const GlrProbes probes(m, Grade::kFp32, o);
    for (GateId id : {GateId::kCmp01, GateId::kExc01}) {
      for (const Probe& failing : probes.plan(id, Contract{}, 3)) {
        const Case base = *case_of(failing);
        for (const Probe& p : probes.simplifications(failing, Contract{})) {
          const Expected<Case> c = case_of(p);
          ASSERT_TRUE(c.has_value()) << c.error().to_string();
          EXPECT_LE(c->tokens(), base.tokens());
          EXPECT_LE(c->key_dim, base.key_dim);
          EXPECT_LE(c->v_heads, base.v_heads);
          EXPECT_EQ(p.seed, failing.seed);
          const int64_t v_numel = c->tokens() * c->v_heads * c->value_dim;
          for (const Injection& inj : p.injections) EXPECT_LT(inj.index, v_numel);
          if (p.tags == failing.tags && p.sizes == failing.sizes) continue;  // same shape
          EXPECT_EQ(p.injections.empty(), failing.injections.empty());
        }
      }
    }
  }
}

}  // namespace
}  // namespace kcv::glr
