// File: glr/tests/oracle_gradient_test.cpp
// The oracle's analytic reverse-time backward against central finite differences, for every input
// (q, k, v, g, β, h0; and b, w of the general recurrence), every member and gate kind, on small
// varlen + GVA problems in both state layouts. Step and per-component bound are derived in
// support/finite_difference.hpp; the analytic gradient's own rounding error is modelled as
// γ_m · max|∇| with m = 2·T·(K + V + 8) (the adjoint's longest chain, twice for safety of the
// model); it is ~1e-14 and six orders below the rounding term of the differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kcv/glr/oracle.hpp"
#include "support/finite_difference.hpp"
#include "support/problems.hpp"
#include "support/tolerances.hpp"

namespace kcv::glr {
namespace {

using testing::Dependence;
using testing::FdReport;
using testing::ProblemSpec;

ProblemSpec fd_spec(std::uint64_t seed, StateLayout layout) {
  ProblemSpec s;
  s.lengths = {5, 7};  // varlen: two sequences, two initial / final states
  s.qk_heads = 1;
  s.v_heads = 2;  // GVA: both value heads read the one q/k head
  s.key_dim = 4;
  s.value_dim = 3;  // K ≠ V catches transposed states
  s.layout = layout;
  s.quantize = true;  // x ± 2^-17 exact
  s.seed = seed;
  return s;
}

double gradient_error(const std::vector<double>& grad, const ProblemSpec& s) {
  const double t = 7.0;  // longest sequence
  double mx = 0.0;
  for (double g : grad) mx = std::max(mx, std::abs(g));
  return testing::gamma_n(2.0 * t * static_cast<double>(s.key_dim + s.value_dim + 8)) * mx;
}

void expect_fd(const char* input, const FdReport& rep, const std::string& where) {
  EXPECT_LE(rep.worst_ratio, 1.0) << "d" << input << " of " << where << ": component "
                                  << rep.worst_index << " fd=" << rep.fd
                                  << " analytic=" << rep.analytic << " bound=" << rep.bound;
  EXPECT_GT(rep.count, 0u) << input;
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", rep.worst_ratio);
  ::testing::Test::RecordProperty(std::string("ratio_d") + input, text);
}

class OracleGradient : public ::testing::TestWithParam<std::tuple<Member, StateLayout>> {};

TEST_P(OracleGradient, MatchesCentralDifferencesForEveryInput) {
  const auto [member, layout] = GetParam();
  const ProblemSpec spec = fd_spec(7 + static_cast<std::uint64_t>(member), layout);
  const std::string where = testing::describe(member, spec);
  testing::Case c = testing::make_case(member, spec);
  Problem& p = c.problem;
  const Gradients g = oracle_backward(member, p, c.cot).value();
  const testing::LossFn loss = [&] { return testing::member_loss(member, p, c.cot); };
  const auto check = [&](const char* input, std::vector<double>& x, const std::vector<double>& dx,
                         Dependence dep) {
    expect_fd(input, testing::check_gradient(x, dx, dep, loss, gradient_error(dx, spec)), where);
  };
  check("q", p.q, g.dq, Dependence::kQuadratic);
  check("k", p.k, g.dk, Dependence::kQuadratic);
  check("v", p.v, g.dv, Dependence::kQuadratic);
  check("h0", p.h0, g.dh0, Dependence::kQuadratic);
  if (traits(member).gate != GateKind::kNone) check("g", p.g, g.dg, Dependence::kExpAffine);
  if (traits(member).delta_rule) check("beta", p.beta, g.dbeta, Dependence::kQuadratic);
}

INSTANTIATE_TEST_SUITE_P(AllMembers, OracleGradient,
                         ::testing::Combine(::testing::ValuesIn(kAllMembers),
                                            ::testing::Values(StateLayout::kKV, StateLayout::kVK)),
                         [](const ::testing::TestParamInfo<std::tuple<Member, StateLayout>>& info) {
                           std::string n(name(std::get<0>(info.param)));
                           n[0] = static_cast<char>(n[0] - 'a' + 'A');
                           return n + (std::get<1>(info.param) == StateLayout::kKV ? "Kv" : "Vk");
                         });

class RecurrenceGradient : public ::testing::TestWithParam<GateKind> {};

TEST_P(RecurrenceGradient, MatchesCentralDifferencesIncludingEraseAndWriteVectors) {
  const GateKind gate = GetParam();
  const ProblemSpec spec = fd_spec(40 + static_cast<std::uint64_t>(gate), StateLayout::kVK);
  Recurrence r = testing::make_recurrence(gate, spec);
  testing::Case c = testing::make_case(Member::kKda, spec);  // for the cotangents
  const RecurrenceGradients g = recurrence_backward(r, c.cot).value();
  const testing::LossFn loss = [&] { return testing::recurrence_loss(r, c.cot); };
  const auto check = [&](const char* input, std::vector<double>& x, const std::vector<double>& dx,
                         Dependence dep) {
    expect_fd(input, testing::check_gradient(x, dx, dep, loss, gradient_error(dx, spec)),
              "general");
  };
  check("q", r.q, g.dq, Dependence::kQuadratic);
  check("k", r.k, g.dk, Dependence::kQuadratic);
  check("v", r.v, g.dv, Dependence::kQuadratic);
  check("h0", r.h0, g.dh0, Dependence::kQuadratic);
  check("erase", r.erase, g.d_erase, Dependence::kQuadratic);
  check("write", r.write, g.d_write, Dependence::kQuadratic);
  if (gate != GateKind::kNone) check("g", r.g, g.dg, Dependence::kExpAffine);
}

INSTANTIATE_TEST_SUITE_P(GateKinds, RecurrenceGradient,
                         ::testing::Values(GateKind::kNone, GateKind::kScalar, GateKind::kChannel),
                         [](const ::testing::TestParamInfo<GateKind>& info) {
                           return info.param == GateKind::kNone     ? std::string("NoGate")
                                  : info.param == GateKind::kScalar ? std::string("ScalarGate")
                                                                    : std::string("ChannelGate");
                         });

// The bound must be tight enough to matter: a 1e-6 relative error in one gradient is caught.
TEST(OracleGradientCheck, RejectsAGradientOffByOnePartPerMillion) {
  const ProblemSpec spec = fd_spec(3, StateLayout::kKV);
  testing::Case c = testing::make_case(Member::kGatedDeltaNet, spec);
  Gradients g = oracle_backward(Member::kGatedDeltaNet, c.problem, c.cot).value();
  const testing::LossFn loss = [&] {
    return testing::member_loss(Member::kGatedDeltaNet, c.problem, c.cot);
  };
  for (std::vector<double>* dx : {&g.dg, &g.dbeta, &g.dk}) {
    const auto largest = std::max_element(
        dx->begin(), dx->end(), [](double a, double b) { return std::abs(a) < std::abs(b); });
    *largest *= 1.0 + 1e-6;
  }
  EXPECT_GT(testing::check_gradient(c.problem.g, g.dg, Dependence::kExpAffine, loss,
                                    gradient_error(g.dg, spec))
                .worst_ratio,
            1.0);
  EXPECT_GT(testing::check_gradient(c.problem.beta, g.dbeta, Dependence::kQuadratic, loss,
                                    gradient_error(g.dbeta, spec))
                .worst_ratio,
            1.0);
  EXPECT_GT(testing::check_gradient(c.problem.k, g.dk, Dependence::kQuadratic, loss,
                                    gradient_error(g.dk, spec))
                .worst_ratio,
            1.0);
}

}  // namespace
}  // namespace kcv::glr
