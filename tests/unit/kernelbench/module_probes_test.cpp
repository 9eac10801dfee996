// File: tests/unit/kernelbench/module_probes_test.cpp
// ModuleProbes plans each gate from the traced facts alone: shapes from the size constants
// get_inputs reads (one changed at a time), reduction sweeps through the constant that sets a
// traced length, determinism only where the reference is repeatable and draws nothing, and
// plans in scope order so a gate's first failing probe names the most basic scope.
#include <gtest/gtest.h>

#include <algorithm>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

// A row sum: x [batch_size, dim] -> [batch_size], summed over dim.
ModuleProblem row_sum() {
  ModuleProblem p;
  p.inputs = {ModuleArg{true, DType::kF32, {16, 4096}}};
  p.outputs = {OutputSpec{DType::kF32, {16}}};
  p.constants = {{"batch_size", 16}, {"dim", 4096}};
  p.facts.constants = {{"batch_size", 16, true, false}, {"dim", 4096, true, false}};
  p.facts.reductions = {{"aten.sum.dim_IntList", ReductionKind::kSum, 4096, "dim"}};
  p.facts.trial_seeds = {1, 2, 3, 4, 5};
  p.device = "cpu";
  return p;
}

std::vector<std::string> labels(const std::vector<Probe>& probes) {
  std::vector<std::string> out;
  for (const Probe& p : probes) out.push_back(p.label);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(ModuleProbes, Cmp01ShapesComeFromTheSizeConstants) {
  const ModuleProblem p = row_sum();
  ModuleProbes src(p, {}, ModuleConfig{});
  const auto probes = src.plan(GateId::kCmp01, Contract{}, 7);
  const auto l = labels(probes);
  EXPECT_TRUE(has(l, "reference drawn"));
  EXPECT_TRUE(has(l, "reference shifted_mean"));
  EXPECT_TRUE(has(l, "reference large_scaled"));
  EXPECT_TRUE(has(l, "prime dim=4093 drawn"));
  EXPECT_TRUE(has(l, "tile-1 dim=4095 drawn"));
  EXPECT_TRUE(has(l, "tile+1 dim=4097 drawn"));
  EXPECT_TRUE(has(l, "larger dim=6145 drawn"));  // dim is not a batch: a larger row
  EXPECT_TRUE(has(l, "ones batch_size=1 drawn"));
  EXPECT_FALSE(has(l, "larger batch_size=25 drawn"));   // the batch gets no larger shape
  for (const Probe& q : probes) EXPECT_EQ(q.seed, 7u);  // one draw per shape serves every probe
  // Scope order: reference first, values, then shapes.
  ASSERT_GE(probes.size(), 6u);
  EXPECT_EQ(src.scope_of(probes[0]), ProbeScope::kReference);
  EXPECT_EQ(src.scope_of(probes[1]), ProbeScope::kValues);
  EXPECT_EQ(src.scope_of(probes.back()), ProbeScope::kShape);
}

TEST(ModuleProbes, Ord01SweepsTheTracedReductionsConstant) {
  const ModuleProblem p = row_sum();
  ModuleProbes src(p, {}, ModuleConfig{});
  const auto probes = src.plan(GateId::kOrd01, Contract{}, 1);
  ASSERT_EQ(probes.size(), 14u);  // seven lengths, two value distributions
  EXPECT_EQ(probes[0].sizes.at("dim"), 1);
  EXPECT_EQ(probes[0].sizes.at("batch_size"), 4);  // the other dims small
  EXPECT_EQ(probes.back().sizes.at("dim"), 65536);
  EXPECT_EQ(src.plan(GateId::kPrc02, Contract{}, 1).size(), 3u);
}

TEST(ModuleProbes, ReductionGatesNeedATracedLengthAConstantSets) {
  ModuleProblem p = row_sum();
  p.facts.reductions[0].constant = "";
  ModuleProbes src(p, {}, ModuleConfig{});
  EXPECT_NE(src.not_applicable_reason(GateId::kOrd01, Contract{}), "");
  EXPECT_NE(src.not_applicable_reason(GateId::kPrc02, Contract{}), "");
}

TEST(ModuleProbes, DeterminismIsDeclaredOnlyWhereTheReferenceHoldsIt) {
  ModuleProblem p = row_sum();
  Contract c;
  EXPECT_EQ(ModuleProbes(p, {}, ModuleConfig{}).not_applicable_reason(GateId::kOrd02, c), "");
  p.facts.stochastic = true;
  EXPECT_NE(ModuleProbes(p, {}, ModuleConfig{}).not_applicable_reason(GateId::kOrd02, c), "");
  p.facts.stochastic = false;
  p.facts.repeatable = false;
  EXPECT_NE(ModuleProbes(p, {}, ModuleConfig{}).not_applicable_reason(GateId::kOrd02, c), "");
  p.facts.repeatable = true;
  c.deterministic = false;
  EXPECT_NE(ModuleProbes(p, {}, ModuleConfig{}).not_applicable_reason(GateId::kOrd02, c), "");
}

TEST(ModuleProbes, Exc01InjectsEverySpecialAtTheFourPositions) {
  const ModuleProblem p = row_sum();
  ModuleProbes src(p, {}, ModuleConfig{});
  const auto probes = src.plan(GateId::kExc01, Contract{}, 1);
  ASSERT_GE(probes.size(), 4u);
  std::vector<int64_t> at;
  for (const Injection& i : probes[0].injections) at.push_back(i.index);
  EXPECT_EQ(at, (std::vector<int64_t>{0, 4095, 16 * 4096 / 2, 16 * 4096 - 1}));
  EXPECT_EQ(probes.back().inputs[0].dist, Distribution::kHugeScaled);
}

TEST(ModuleProbes, Cmp03ViewsEveryFloatingInput) {
  const ModuleProblem p = row_sum();
  ModuleProbes src(p, {}, ModuleConfig{});
  const auto probes = src.plan(GateId::kCmp03, Contract{}, 1);
  std::vector<LayoutKind> kinds;
  for (const Probe& q : probes) kinds.push_back(q.inputs[0].layout.kind);
  EXPECT_EQ(kinds, (std::vector<LayoutKind>{LayoutKind::kTransposed, LayoutKind::kSliced,
                                            LayoutKind::kBroadcast, LayoutKind::kOffset}));
  for (const Probe& q : probes) EXPECT_EQ(src.scope_of(q), ProbeScope::kLayout);
}

TEST(ModuleProbes, Ord03ForcesEachAutotuneConfig) {
  const ModuleProblem p = row_sum();
  ModuleConfig config;
  config.autotune_configs = 3;
  const auto probes = ModuleProbes(p, {}, config).plan(GateId::kOrd03, Contract{}, 1);
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0].concurrency, 4);
  EXPECT_EQ(probes[1].autotune_configs, (std::vector<int>{0, 1, 2}));
}

TEST(ModuleProbes, ShrinkingTriesTheSameShapeFirst) {
  const ModuleProblem p = row_sum();
  ModuleProbes src(p, {}, ModuleConfig{});
  Probe failing = src.plan(GateId::kExc01, Contract{}, 1).front();
  const auto simpler = src.simplifications(failing, Contract{});
  ASSERT_FALSE(simpler.empty());
  EXPECT_EQ(simpler.front().injections.size(), failing.injections.size() - 1);
  EXPECT_TRUE(simpler.front().sizes.empty());
  EXPECT_FALSE(simpler.back().sizes.empty());  // smaller shapes last
}

TEST(ModuleProbes, TheSignatureComesFromTheTrace) {
  ModuleProblem p = row_sum();
  EXPECT_EQ(ModuleProbes(p, {}, ModuleConfig{}).signature().op_class, OpClass::kReduction);
  p.facts.reductions[0].kind = ReductionKind::kDot;
  EXPECT_EQ(ModuleProbes(p, {}, ModuleConfig{}).signature().op_class, OpClass::kMatmul);
  p.facts.reductions.clear();
  const ModuleProbes e(p, {}, ModuleConfig{});
  EXPECT_EQ(e.signature().op_class, OpClass::kElementwise);
  EXPECT_TRUE(e.signature().reduction_dim.empty());
}

}  // namespace
}  // namespace kcv::kb
