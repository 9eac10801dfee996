// File: glr/tests/chunked_vs_oracle_test.cpp
// The chunked reference against the token-serial oracle, for every member, on the scenarios the
// issue names: T not a multiple of 64 (T ∈ {1, 63, 64, 65, 200}), strong and weak decay, GVA,
// varlen with skewed lengths, with and without initial state / final-state gradient, both state
// layouts, and chunk sizes 16, 32, 64. Compared norm-wise: o, final state and every gradient.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kcv/glr/chunked.hpp"
#include "kcv/glr/oracle.hpp"
#include "support/norms.hpp"
#include "support/problems.hpp"
#include "support/tolerances.hpp"

namespace kcv::glr {
namespace {

using testing::Decay;
using testing::ProblemSpec;

struct Scenario {
  std::string label;
  ProblemSpec spec;
  std::int64_t chunk_size = 64;
};

struct Param {
  Member member;
  Scenario scenario;
};

std::vector<Scenario> scenarios() {
  std::vector<Scenario> out;
  const auto add = [&](std::string label, auto edit, std::int64_t chunk = 64) {
    ProblemSpec s;
    s.key_dim = 16;
    s.value_dim = 24;
    edit(s);
    s.seed = out.size() + 101;
    out.push_back({std::move(label), s, chunk});
  };
  for (std::int64_t t : {1, 63, 64, 65, 200}) {
    std::string label = "T";
    label += std::to_string(t);  // not "T" + ...: GCC 12 -Wrestrict false positive
    add(label, [t](ProblemSpec& s) { s.lengths = {t}; });
  }
  add("StrongDecay", [](ProblemSpec& s) {
    s.lengths = {200};
    s.decay = Decay::kStrong;
  });
  add("WeakDecay", [](ProblemSpec& s) {
    s.lengths = {200};
    s.decay = Decay::kWeak;
  });
  add("Gva", [](ProblemSpec& s) {
    s.lengths = {130};
    s.qk_heads = 2;
    s.v_heads = 4;
  });
  add("VarlenSkewed", [](ProblemSpec& s) {
    s.lengths = {1, 150, 7, 64, 3};
    s.qk_heads = 1;
    s.v_heads = 2;
    s.layout = StateLayout::kVK;
  });
  add("VarlenStrongDecayVk", [](ProblemSpec& s) {
    s.lengths = {65, 2, 128};
    s.decay = Decay::kStrong;
    s.layout = StateLayout::kVK;
  });
  add("NoStates", [](ProblemSpec& s) {
    s.lengths = {100};
    s.initial_state = false;
    s.final_state_grad = false;
  });
  add("WideKey", [](ProblemSpec& s) {
    s.lengths = {129};
    s.key_dim = 32;
    s.value_dim = 8;
  });
  add(
      "Chunk16", [](ProblemSpec& s) { s.lengths = {100}; }, 16);
  add(
      "Chunk32Varlen",
      [](ProblemSpec& s) {
        s.lengths = {33, 31};
      },
      32);
  return out;
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (Member m : kAllMembers)
    for (const Scenario& s : scenarios()) out.push_back({m, s});
  return out;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << testing::describe(p.member, p.scenario.spec) << "/C=" << p.scenario.chunk_size;
}

class ChunkedVsOracle : public ::testing::TestWithParam<Param> {};

void expect_close(const char* what, const std::vector<double>& got, const std::vector<double>& want,
                  double tol, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << what << " " << where;
  const double err = testing::relative_error(got, want);
  EXPECT_LE(err, tol) << what << " of " << where;
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", err);
  ::testing::Test::RecordProperty(what, text);
}

TEST_P(ChunkedVsOracle, MatchesOutputsStateAndEveryGradient) {
  const Param& p = GetParam();
  const testing::Case c = testing::make_case(p.member, p.scenario.spec);
  const std::string where =
      testing::describe(p.member, p.scenario.spec) + "/C=" + std::to_string(p.scenario.chunk_size);
  const ChunkOptions opt{p.scenario.chunk_size};
  Expected<Outputs> of = oracle_forward(p.member, c.problem);
  Expected<Outputs> cf = chunked_forward(p.member, c.problem, opt);
  Expected<Gradients> ob = oracle_backward(p.member, c.problem, c.cot);
  Expected<Gradients> cb = chunked_backward(p.member, c.problem, c.cot, opt);
  ASSERT_TRUE(of && cf && ob && cb) << where;
  const double tol = testing::chunked_tolerance(c.problem.shape, opt.chunk_size);
  expect_close("o", cf->o, of->o, tol, where);
  expect_close("final_state", cf->final_state, of->final_state, tol, where);
  expect_close("dq", cb->dq, ob->dq, tol, where);
  expect_close("dk", cb->dk, ob->dk, tol, where);
  expect_close("dv", cb->dv, ob->dv, tol, where);
  expect_close("dh0", cb->dh0, ob->dh0, tol, where);
  expect_close("dg", cb->dg, ob->dg, tol, where);
  expect_close("dbeta", cb->dbeta, ob->dbeta, tol, where);
}

INSTANTIATE_TEST_SUITE_P(AllMembers, ChunkedVsOracle, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           std::string n(name(info.param.member));
                           n[0] = static_cast<char>(n[0] - 'a' + 'A');
                           return n + info.param.scenario.label;
                         });

}  // namespace
}  // namespace kcv::glr
