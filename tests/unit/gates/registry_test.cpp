// File: tests/unit/gates/registry_test.cpp
// The gate table: one entry per ID in order, text for `kcv gates` / `kcv explain`, plans and
// judges wired, and applicability reasons that say why.
#include <gtest/gtest.h>

#include <algorithm>

#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

TEST(GateRegistry, OneEntryPerGateInOrder) {
  for (GateId id : kAllGates) {
    const GateDef& def = gate_def(id);
    EXPECT_EQ(def.id, id);
    EXPECT_EQ(def.code, gate_code(id));
    EXPECT_FALSE(def.title.empty());
    EXPECT_EQ(def.title.find('\n'), std::string_view::npos) << def.code;
    EXPECT_GE(std::count(def.explanation.begin(), def.explanation.end(), '\n'), 4) << def.code;
    EXPECT_NE(def.explanation.find("Pass"), std::string_view::npos) << def.code;
    ASSERT_NE(def.plan, nullptr) << def.code;
    ASSERT_NE(def.not_applicable_reason, nullptr) << def.code;
    EXPECT_EQ(def.judge == nullptr, id == GateId::kRes02) << def.code;
  }
}

TEST(GateRegistry, ToleranceFreeGatesAreTheSixOfTheDesign) {
  std::vector<std::string_view> tf;
  for (GateId id : kAllGates) {
    if (gate_def(id).tolerance_free) tf.push_back(gate_def(id).code);
  }
  EXPECT_EQ(tf, (std::vector<std::string_view>{"CMP-02", "ORD-02", "EXC-01", "EXC-02", "RES-01", "RES-02"}));
}

TEST(GateApplicability, ReductionGatesNeedAReductionDim) {
  const OpSignature add = testing::synthetic_sig("add");
  const Contract c;
  EXPECT_FALSE(gate_def(GateId::kOrd01).not_applicable_reason(add, c).empty());
  EXPECT_FALSE(gate_def(GateId::kPrc02).not_applicable_reason(add, c).empty());
  EXPECT_TRUE(gate_def(GateId::kOrd01).plan(add, c, 1).empty());
  const OpSignature sum = testing::synthetic_sig("sum", true);
  EXPECT_TRUE(gate_def(GateId::kOrd01).not_applicable_reason(sum, c).empty());
  EXPECT_TRUE(gate_def(GateId::kPrc02).not_applicable_reason(sum, c).empty());
}

TEST(GateApplicability, DeterminismMustBeDeclaredForOrd02) {
  const OpSignature sum = testing::synthetic_sig("sum", true);
  Contract c;
  EXPECT_TRUE(gate_def(GateId::kOrd02).not_applicable_reason(sum, c).empty());
  c.deterministic = false;
  EXPECT_NE(gate_def(GateId::kOrd02).not_applicable_reason(sum, c).find("determinism"), std::string::npos);
  EXPECT_TRUE(gate_def(GateId::kOrd02).plan(sum, c, 1).empty());
}

TEST(GateApplicability, IndexOutputsSkipSubnormalAndPrecisionGates) {
  OpSignature argmax = testing::synthetic_sig("argmax", true);
  argmax.index_output = true;
  argmax.uses_minmax = true;
  const Contract c;
  for (GateId id : {GateId::kExc02, GateId::kPrc01, GateId::kPrc02}) {
    EXPECT_FALSE(gate_def(id).not_applicable_reason(argmax, c).empty()) << gate_code(id);
  }
  for (GateId id : {GateId::kCmp01, GateId::kExc01, GateId::kOrd01, GateId::kRes01}) {
    EXPECT_TRUE(gate_def(id).not_applicable_reason(argmax, c).empty()) << gate_code(id);
  }
}

TEST(GateApplicability, ComparisonReductionsHaveNoAccumulator) {
  OpSignature max = testing::synthetic_sig("max", true);
  max.uses_minmax = true;
  EXPECT_FALSE(gate_def(GateId::kPrc02).not_applicable_reason(max, Contract{}).empty());
}

}  // namespace
}  // namespace kcv

namespace kcv {
namespace {

// The audit's judge binding copies input values only for these gates (a KernelBench input can
// be gigabytes), so a judge that starts reading inputs must be listed here too.
TEST(GateRegistry, OnlyPrc01ReadsInputValues) {
  for (GateId id : kAllGates) {
    EXPECT_EQ(judge_reads_input_values(id), id == GateId::kPrc01) << gate_code(id);
  }
}

}  // namespace
}  // namespace kcv
