// File: glr/verify/tests/oracle_test.cpp
// GlrOracle: the sliced references equal the whole-problem references (values, dg's terms, σ),
// tau is the error model's, the bf16 grade widens the bounds it declares a term for, EXC-01's
// oracle is the token-serial mask with the chunk form as the alternative only inside the poisoned
// token's chunk, and the probe budget refuses long probes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "glr/verify/internal.hpp"
#include "kcv/glr/chunked.hpp"
#include "kcv/glr/error_model.hpp"

namespace kcv::glr {
namespace {

Case gva_varlen(Member m) {
  Case c;
  c.member = m;
  c.lengths = {5, 70, 9};
  c.qk_heads = 1;
  c.v_heads = 2;
  c.key_dim = 16;
  c.value_dim = 8;
  return c;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-13 * (1 + std::fabs(b[i]))) << what << "[" << i << "]";
}

/// compare(got.x, want.x, what + "x") for the six tensors Gradients and BackwardSigma both name.
template <typename Six, typename Compare>
void each_gradient(const Six& got, const Six& want, const std::string& what, Compare&& compare) {
  compare(got.dq, want.dq, what + "dq");
  compare(got.dk, want.dk, what + "dk");
  compare(got.dv, want.dv, what + "dv");
  compare(got.dg, want.dg, what + "dg");
  compare(got.dbeta, want.dbeta, what + "dbeta");
  compare(got.dh0, want.dh0, what + "dh0");
}

TEST(GlrOracle, SlicedReferencesEqualTheWholeProblem) {
  for (Member m : kAllMembers) {
    const Case c = gva_varlen(m);
    Probe p = probe_of(c, GateId::kCmp01, "");
    p.seed = 5;
    const auto d = verify_detail::data_of(c, verify_detail::make_tensors(c, p));
    const bool gated = traits(m).gate != GateKind::kNone;
    auto sliced = verify_detail::run_sliced(
        m, d, {.which = verify_detail::Reference::kChunked, .dg_scale = gated, .sigma = true}, 3);
    ASSERT_TRUE(sliced.has_value()) << sliced.error().to_string();
    auto fwd = chunked_forward(m, d.problem);
    auto grads = chunked_backward(m, d.problem, d.cot);
    auto sigma = declared_rounding_sigma(m, d.problem, contract_for(Grade::kBf16));
    ASSERT_TRUE(fwd && grads && sigma);
    expect_close(sliced->fwd.o, fwd->o, "o");
    expect_close(sliced->fwd.final_state, fwd->final_state, "ht");
    each_gradient(sliced->grads, *grads, "", expect_close);
    expect_close(sliced->sigma.o, sigma->o, "sigma o");
    expect_close(sliced->sigma.final_state, sigma->final_state, "sigma ht");
    // the gradients' σ (GVA: variances added)
    auto gs = declared_backward_sigma(m, d.problem, d.cot, contract_for(Grade::kBf16));
    ASSERT_TRUE(gs.has_value()) << gs.error().to_string();
    each_gradient(sliced->grad_sigma, *gs, "sigma ", expect_close);
    if (gated) {
      auto terms = dg_terms(m, d.problem, d.cot);
      ASSERT_TRUE(terms.has_value());
      expect_close(sliced->dg_scale, terms->scale, "dg terms");
    }
  }
}

// A slice's parts are tasks of their own on the pool: one thread or five, one pass or the values
// and σ apart, every value is the same bits; a σ-only pass computes no values.
TEST(GlrOracle, SliceTasksGiveTheSameBitsOnAnyThreadsAndInSeparatePasses) {
  using verify_detail::Reference;
  for (Member m : {Member::kGatedDeltaNet, Member::kKda, Member::kLinearAttention}) {
    const Case c = gva_varlen(m);
    Probe p = probe_of(c, GateId::kCmp01, "");
    p.seed = 9;
    const auto d = verify_detail::data_of(c, verify_detail::make_tensors(c, p));
    const bool gated = traits(m).gate != GateKind::kNone;
    const verify_detail::SliceRequest all{
        .which = Reference::kChunked, .dg_scale = gated, .sigma = true};
    auto one = verify_detail::run_sliced(m, d, all, 1);
    auto five = verify_detail::run_sliced(m, d, all, 5);
    auto values =
        verify_detail::run_sliced(m, d, {.which = Reference::kChunked, .dg_scale = gated}, 3);
    auto sigma = verify_detail::run_sliced(
        m, d, {.which = Reference::kChunked, .values = false, .sigma = true}, 3);
    ASSERT_TRUE(one && five && values && sigma);
    EXPECT_TRUE(sigma->fwd.o.empty() && sigma->grads.dq.empty() && sigma->dg_scale.empty());
    EXPECT_TRUE(values->sigma.o.empty() && values->grad_sigma.dq.empty());
    const auto same = [&](const std::vector<double>& a, const std::vector<double>& b,
                          const std::string& what) {
      ASSERT_EQ(a.size(), b.size()) << name(m) << " " << what;
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0)
          << name(m) << " " << what;
    };
    for (const verify_detail::Results* r : {&*five, &*values}) {
      same(r->fwd.o, one->fwd.o, "o");
      same(r->fwd.final_state, one->fwd.final_state, "ht");
      each_gradient(r->grads, one->grads, "", same);
      same(r->dg_scale, one->dg_scale, "dg terms");
    }
    for (const verify_detail::Results* r : {&*five, &*sigma}) {
      same(r->sigma.o, one->sigma.o, "sigma o");
      same(r->sigma.final_state, one->sigma.final_state, "sigma ht");
      each_gradient(r->grad_sigma, one->grad_sigma, "sigma ", same);
    }
  }
}

// The bf16 grade widens every output's bound (GDN and KDA: o, ht, dq, dk, dv, dg, dβ, dh0; GLA:
// no dβ).
TEST(GlrOracle, TauIsTheErrorModelsAndTheBf16GradeWidensWhatItDeclares) {
  for (Member m : {Member::kGatedDeltaNet, Member::kGla, Member::kKda}) {
    GlrOptions o;
    o.threads = 2;
    GlrOracle oracle(o);
    Case c = gva_varlen(m);
    Probe p = probe_of(c, GateId::kCmp01, "");
    auto in = oracle.make_inputs(p);
    ASSERT_TRUE(in.has_value());
    auto fp32 = oracle.evaluate(p, *in, Contract{});
    c.grade = Grade::kBf16;
    const Probe pb = probe_of(c, GateId::kCmp01, "");
    auto bf16 = oracle.evaluate(pb, *oracle.make_inputs(pb), Contract{});
    ASSERT_TRUE(fp32 && bf16);
    const std::size_t outputs = traits(m).delta_rule ? 8u : 7u;  // GLA: no dβ
    ASSERT_EQ((*fp32)->outputs.size(), outputs);
    const auto d = verify_detail::data_of(c, in->tensors);
    const auto ref = chunked_forward(c.member, d.problem);
    const std::int64_t gw = gate_width(traits(m).gate, c.key_dim);
    const auto want = glr::tau(Output::kO, ref->o, c.shape(), gw, model_scale(d.problem), 0x1p-8);
    expect_close((*fp32)->outputs[0].tau, *want, "tau o");
    for (std::size_t o = 0; o < outputs; ++o) {
      const auto& a = (*fp32)->outputs[o];
      const auto& b = (*bf16)->outputs[o];
      EXPECT_EQ(a.value, b.value);
      const bool forward = o <= 1;  // o, ht
      std::size_t wider = 0;
      for (std::size_t i = 0; i < a.tau.size(); ++i) {
        const std::string where =
            std::string(name(m)) + " " + std::to_string(o) + " " + std::to_string(i);
        if (forward) {
          ASSERT_GT(b.tau[i], a.tau[i]) << where;
        } else {
          ASSERT_GE(b.tau[i], a.tau[i]) << where;
        }
        wider += b.tau[i] > a.tau[i];
      }
      EXPECT_GT(wider, a.tau.size() / 2) << name(m) << " output " << o;
    }
    EXPECT_EQ((*fp32)->outputs[1].dtype, DType::kF32);
    EXPECT_EQ((*fp32)->outputs[0].dtype, DType::kBF16);
  }
}

TEST(GlrOracle, NanMaskIsTheTokenSerialOneWithTheChunkFormInsideTheChunk) {
  GlrOptions o;
  o.cases = CaseList::kSmall;
  o.threads = 2;
  const Member m = Member::kGatedDeltaNet;
  const GlrProbes probes(m, Grade::kFp32, o);
  const Probe p = probes.plan(GateId::kExc01, Contract{}, 1).front();
  GlrOracle oracle(o);
  auto in = oracle.make_inputs(p);
  auto r = oracle.evaluate(p, *in, Contract{});
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  const Case c = *case_of(p);
  const Shape s = c.shape();
  const int64_t t_star = p.injections.front().index / (s.v_heads * s.value_dim);
  const int64_t hv = p.injections.front().index / s.value_dim % s.v_heads;
  // o: NaN exactly at t >= t* of that sequence and value head, in the poisoned column only.
  const auto& out = (*r)->outputs[0];
  const int64_t col = p.injections.front().index % s.value_dim;
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.v_heads; ++h) {
      for (int64_t e = 0; e < s.value_dim; ++e) {
        const bool nan = std::isnan(out.value[(t * s.v_heads + h) * s.value_dim + e]);
        const bool want = h == hv && e == col && t >= t_star && t < s.seq_end(1);
        ASSERT_EQ(nan, want) << t << " " << h << " " << e;
      }
    }
  }
  EXPECT_TRUE(out.alternative.empty());
  // dg: an alternative that differs from the value only in rows of t*'s chunk.
  const auto& dg = (*r)->outputs[static_cast<std::size_t>(output_index(m, "dg"))];
  ASSERT_EQ(dg.alternative.size(), dg.value.size());
  const int64_t chunk0 = s.seq_begin(1) + (t_star - s.seq_begin(1)) / 64 * 64;
  bool differs = false;
  for (int64_t t = 0; t < s.tokens; ++t) {
    const std::size_t i = static_cast<std::size_t>(t * s.v_heads + hv);
    const bool same = dg.value[i] == dg.alternative[i] ||
                      (std::isnan(dg.value[i]) && std::isnan(dg.alternative[i]));
    if (t < chunk0 || t >= std::min(chunk0 + 64, s.seq_end(1))) {
      ASSERT_TRUE(same) << t;
    } else {
      differs = differs || !same;
    }
  }
  EXPECT_TRUE(differs);
}

TEST(GlrOracle, ProbeBudgetRefusesLongProbes) {
  GlrOptions o;
  o.max_tokens = 100;
  GlrOracle oracle(o);
  Case c = gva_varlen(Member::kLinearAttention);
  c.lengths = {64, 64};
  auto in = oracle.make_inputs(probe_of(c, GateId::kCmp01, ""));
  ASSERT_TRUE(in.has_value());
  EXPECT_NE(in->refused.find("probe budget"), std::string::npos);
  c.lengths = {64};
  in = oracle.make_inputs(probe_of(c, GateId::kCmp01, ""));
  EXPECT_TRUE(in->refused.empty());
}

}  // namespace
}  // namespace kcv::glr
