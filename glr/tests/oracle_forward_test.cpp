// File: glr/tests/oracle_forward_test.cpp
// Properties of the oracle forward that pin down its semantics without a second implementation:
// the delta form it runs equals the literal matrix form of gdn-spec.md §1; packing sequences
// (varlen), sharing q/k heads (GVA), the state layout, and the member reductions (a zero gate is
// no gate; a per-channel gate with equal channels is a scalar gate) change nothing. The structural
// properties hold bit for bit (the same floating-point operations run in the same order), so they
// are compared with ==; the chunked reference is held to the same ones.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kcv/glr/chunked.hpp"
#include "kcv/glr/oracle.hpp"
#include "support/norms.hpp"
#include "support/problems.hpp"
#include "support/tolerances.hpp"

namespace kcv::glr {
namespace {

using testing::Case;
using testing::ProblemSpec;

// §1 as written: S_t = (I − k (b⊙k)ᵀ) Diag(exp g) S_{t−1} + k (w⊙v)ᵀ with explicit K×K matrices,
// one sequence, one value head (H = HV = 1), layout kKV.
Outputs literal_form(const Recurrence& r) {
  const std::int64_t kd = r.shape.key_dim, vd = r.shape.value_dim;
  std::vector<double> s = r.h0.empty() ? std::vector<double>(kd * vd, 0.0) : r.h0;
  Outputs out{std::vector<double>(r.shape.tokens * vd, 0.0), {}};
  for (std::int64_t t = 0; t < r.shape.tokens; ++t) {
    const double* k = &r.k[t * kd];
    std::vector<double> m(kd * kd), next(kd * vd, 0.0);
    for (std::int64_t i = 0; i < kd; ++i)
      for (std::int64_t j = 0; j < kd; ++j) {
        const double g =
            r.gate == GateKind::kNone ? 0.0 : r.g[r.gate == GateKind::kScalar ? t : t * kd + j];
        m[i * kd + j] = ((i == j ? 1.0 : 0.0) - k[i] * r.erase[t * kd + j] * k[j]) * std::exp(g);
      }
    for (std::int64_t i = 0; i < kd; ++i)
      for (std::int64_t e = 0; e < vd; ++e) {
        double acc = k[i] * r.write[t * vd + e] * r.v[t * vd + e];
        for (std::int64_t j = 0; j < kd; ++j) acc += m[i * kd + j] * s[j * vd + e];
        next[i * vd + e] = acc;
      }
    s = next;
    for (std::int64_t e = 0; e < vd; ++e)
      for (std::int64_t i = 0; i < kd; ++i)
        out.o[t * vd + e] += r.scale * s[i * vd + e] * r.q[t * kd + i];
  }
  out.final_state = s;
  return out;
}

TEST(OracleForward, DeltaFormEqualsLiteralMatrixFormForEveryMember) {
  ProblemSpec spec;
  spec.lengths = {40};
  spec.key_dim = 8;
  spec.value_dim = 5;
  const double t = 40, k = 8;
  // Two evaluations with chains T(K+4)+K (delta form) and T(2K+4)+K (literal form), κ ≈ 1.
  const double tol = testing::gamma_n(t * (k + 4) + k + t * (2 * k + 4) + k);
  for (Member m : kAllMembers) {
    const Case c = testing::make_case(m, spec);
    const Recurrence r = as_recurrence(m, c.problem).value();
    const Outputs want = literal_form(r);
    const Outputs got = oracle_forward(m, c.problem).value();
    EXPECT_LE(testing::relative_error(got.o, want.o), tol) << name(m);
    EXPECT_LE(testing::relative_error(got.final_state, want.final_state), tol) << name(m);
  }
}

// Sequence n of a packed problem, alone.
Case slice_sequence(const Case& packed, Member m, std::int64_t n) {
  const Shape& s = packed.problem.shape;
  const std::int64_t b = s.seq_begin(n), e = s.seq_end(n);
  const auto rows = [&](const std::vector<double>& x, std::int64_t per_token) {
    return x.empty() ? x
                     : std::vector<double>(x.begin() + b * per_token, x.begin() + e * per_token);
  };
  const auto state = [&](const std::vector<double>& x) {
    const std::int64_t per_seq = s.v_heads * s.key_dim * s.value_dim;
    return x.empty() ? x
                     : std::vector<double>(x.begin() + n * per_seq, x.begin() + (n + 1) * per_seq);
  };
  Case c = packed;
  Problem& p = c.problem;
  p.shape.tokens = e - b;
  p.shape.cu_seqlens.clear();
  const std::int64_t qk = s.qk_heads * s.key_dim, v = s.v_heads * s.value_dim;
  const std::int64_t gw = s.v_heads * gate_width(traits(m).gate, s.key_dim);
  p.q = rows(packed.problem.q, qk);
  p.k = rows(packed.problem.k, qk);
  p.v = rows(packed.problem.v, v);
  p.g = rows(packed.problem.g, gw);
  p.beta = rows(packed.problem.beta, s.v_heads);
  p.h0 = state(packed.problem.h0);
  c.cot.d_o = rows(packed.cot.d_o, v);
  c.cot.d_final_state = state(packed.cot.d_final_state);
  return c;
}

TEST(OracleForward, PackedSequencesEqualSeparateRunsBitForBit) {
  ProblemSpec spec;
  spec.lengths = {3, 70, 1, 20};
  spec.v_heads = 2;
  spec.key_dim = 8;
  spec.value_dim = 4;
  for (Member m : kAllMembers) {
    const Case packed = testing::make_case(m, spec);
    const Outputs po = oracle_forward(m, packed.problem).value();
    const Outputs pc = chunked_forward(m, packed.problem, {16}).value();
    const Gradients pg = chunked_backward(m, packed.problem, packed.cot, {16}).value();
    const Shape& s = packed.problem.shape;
    for (std::int64_t n = 0; n < s.sequences(); ++n) {
      const Case one = slice_sequence(packed, m, n);
      const Outputs oo = oracle_forward(m, one.problem).value();
      const Outputs oc = chunked_forward(m, one.problem, {16}).value();
      const Gradients og = chunked_backward(m, one.problem, one.cot, {16}).value();
      const std::int64_t v = s.v_heads * s.value_dim, b = s.seq_begin(n);
      for (std::size_t i = 0; i < oo.o.size(); ++i) {
        ASSERT_EQ(oo.o[i], po.o[b * v + i]) << name(m) << " seq " << n;
        ASSERT_EQ(oc.o[i], pc.o[b * v + i]) << name(m) << " seq " << n;
        ASSERT_EQ(og.dv[i], pg.dv[b * v + i]) << name(m) << " seq " << n;
      }
      const std::int64_t per_seq = s.v_heads * s.key_dim * s.value_dim;
      for (std::size_t i = 0; i < oo.final_state.size(); ++i) {
        ASSERT_EQ(oo.final_state[i], po.final_state[n * per_seq + i]) << name(m);
        ASSERT_EQ(og.dh0[i], pg.dh0[n * per_seq + i]) << name(m);
      }
    }
  }
}

TEST(OracleForward, GvaEqualsDuplicatedQkHeadsBitForBit) {
  ProblemSpec spec;
  spec.lengths = {30};
  spec.qk_heads = 2;
  spec.v_heads = 4;
  spec.key_dim = 4;
  spec.value_dim = 3;
  for (Member m : kAllMembers) {
    const Case gva = testing::make_case(m, spec);
    Case dup = gva;
    const Shape& s = gva.problem.shape;
    dup.problem.shape.qk_heads = s.v_heads;
    dup.problem.q.assign(s.tokens * s.v_heads * s.key_dim, 0.0);
    dup.problem.k = dup.problem.q;
    for (std::int64_t t = 0; t < s.tokens; ++t)
      for (std::int64_t hv = 0; hv < s.v_heads; ++hv)
        for (std::int64_t d = 0; d < s.key_dim; ++d) {
          const std::int64_t from = (t * s.qk_heads + hv / 2) * s.key_dim + d;
          const std::int64_t to = (t * s.v_heads + hv) * s.key_dim + d;
          dup.problem.q[to] = gva.problem.q[from];
          dup.problem.k[to] = gva.problem.k[from];
        }
    for (bool chunked : {false, true}) {
      const Gradients a = chunked ? chunked_backward(m, gva.problem, gva.cot).value()
                                  : oracle_backward(m, gva.problem, gva.cot).value();
      const Gradients b = chunked ? chunked_backward(m, dup.problem, dup.cot).value()
                                  : oracle_backward(m, dup.problem, dup.cot).value();
      EXPECT_EQ(a.dv, b.dv) << name(m);
      EXPECT_EQ(a.dh0, b.dh0) << name(m);
      for (std::int64_t t = 0; t < s.tokens; ++t)
        for (std::int64_t h = 0; h < s.qk_heads; ++h)
          for (std::int64_t d = 0; d < s.key_dim; ++d) {
            const std::int64_t i = (t * s.qk_heads + h) * s.key_dim + d;
            const std::int64_t j0 = (t * s.v_heads + 2 * h) * s.key_dim + d;
            const std::int64_t j1 = j0 + s.key_dim;
            ASSERT_EQ(a.dq[i], (0.0 + b.dq[j0]) + b.dq[j1]) << name(m) << " chunked=" << chunked;
            ASSERT_EQ(a.dk[i], (0.0 + b.dk[j0]) + b.dk[j1]) << name(m) << " chunked=" << chunked;
          }
    }
  }
}

// [N, HV, K, V] → [N, HV, V, K].
std::vector<double> transpose_states(const std::vector<double>& x, const Shape& s) {
  std::vector<double> out(x.size());
  const std::int64_t kd = s.key_dim, vd = s.value_dim;
  for (std::int64_t nh = 0; nh < static_cast<std::int64_t>(x.size()) / (kd * vd); ++nh)
    for (std::int64_t d = 0; d < kd; ++d)
      for (std::int64_t e = 0; e < vd; ++e)
        out[nh * kd * vd + e * kd + d] = x[nh * kd * vd + d * vd + e];
  return out;
}

TEST(OracleForward, StateLayoutOnlyTransposesStatesBitForBit) {
  ProblemSpec spec;
  spec.lengths = {9, 40};
  spec.v_heads = 2;
  spec.key_dim = 5;
  spec.value_dim = 3;
  for (Member m : kAllMembers) {
    const Case kv = testing::make_case(m, spec);
    Case vk = kv;
    const Shape& s = kv.problem.shape;
    vk.problem.layout = StateLayout::kVK;
    vk.problem.h0 = transpose_states(kv.problem.h0, s);
    vk.cot.d_final_state = transpose_states(kv.cot.d_final_state, s);
    for (bool chunked : {false, true}) {
      const Outputs a =
          chunked ? chunked_forward(m, kv.problem).value() : oracle_forward(m, kv.problem).value();
      const Outputs b =
          chunked ? chunked_forward(m, vk.problem).value() : oracle_forward(m, vk.problem).value();
      const Gradients ga = chunked ? chunked_backward(m, kv.problem, kv.cot).value()
                                   : oracle_backward(m, kv.problem, kv.cot).value();
      const Gradients gb = chunked ? chunked_backward(m, vk.problem, vk.cot).value()
                                   : oracle_backward(m, vk.problem, vk.cot).value();
      EXPECT_EQ(a.o, b.o) << name(m);
      EXPECT_EQ(transpose_states(a.final_state, s), b.final_state) << name(m);
      EXPECT_EQ(transpose_states(ga.dh0, s), gb.dh0) << name(m);
      EXPECT_EQ(ga.dk, gb.dk) << name(m);
    }
  }
}

// `with` run with a gate of zeros (exp(0) = 1 exactly) equals the gate-free `without`.
void expect_zero_gate_is_no_gate(Member with, Member without) {
  ProblemSpec spec;
  spec.lengths = {70};
  spec.key_dim = 4;
  spec.value_dim = 6;
  Case c = testing::make_case(without, spec);
  const Outputs want = oracle_forward(without, c.problem).value();
  const Outputs want_chunked = chunked_forward(without, c.problem).value();
  const Gradients want_grads = oracle_backward(without, c.problem, c.cot).value();
  c.problem.g.assign(c.problem.shape.tokens * gate_width(traits(with).gate, 4), 0.0);
  EXPECT_EQ(oracle_forward(with, c.problem).value().o, want.o) << name(with);
  EXPECT_EQ(chunked_forward(with, c.problem).value().o, want_chunked.o) << name(with);
  EXPECT_EQ(oracle_backward(with, c.problem, c.cot).value().dk, want_grads.dk) << name(with);
}

TEST(OracleForward, ZeroGateReducesToTheUngatedMember) {
  expect_zero_gate_is_no_gate(Member::kSimpleGla, Member::kLinearAttention);
  expect_zero_gate_is_no_gate(Member::kGla, Member::kLinearAttention);
  expect_zero_gate_is_no_gate(Member::kGatedDeltaNet, Member::kDeltaNet);
  expect_zero_gate_is_no_gate(Member::kKda, Member::kDeltaNet);
}

TEST(OracleForward, ChannelGateWithEqualChannelsIsTheScalarGate) {
  ProblemSpec spec;
  spec.lengths = {50};
  spec.key_dim = 4;
  spec.value_dim = 3;
  for (auto [channel, scalar] : {std::pair{Member::kKda, Member::kGatedDeltaNet},
                                 std::pair{Member::kGla, Member::kSimpleGla}}) {
    const Case c = testing::make_case(scalar, spec);
    Problem wide = c.problem;
    wide.g.clear();
    for (double g : c.problem.g) wide.g.insert(wide.g.end(), 4, g);
    EXPECT_EQ(oracle_forward(channel, wide).value().o, oracle_forward(scalar, c.problem).value().o);
    const Gradients gw = oracle_backward(channel, wide, c.cot).value();
    const Gradients gs = oracle_backward(scalar, c.problem, c.cot).value();
    EXPECT_EQ(gw.dv, gs.dv);
    for (std::size_t t = 0; t < gs.dg.size(); ++t) {
      const double summed =
          ((gw.dg[4 * t] + gw.dg[4 * t + 1]) + gw.dg[4 * t + 2]) + gw.dg[4 * t + 3];
      // The scalar dg sums the same four channel terms in the same order.
      EXPECT_EQ(summed, gs.dg[t]) << name(channel) << " token " << t;
    }
  }
}

}  // namespace
}  // namespace kcv::glr
