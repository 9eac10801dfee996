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

/// Whether gate `id`'s judge gives another result with real inputs than with none, on a
/// synthetic fast-math probe of `sig` (the largest input, 80, would set an exp budget).
bool judge_depends_on_inputs(GateId id, const OpSignature& sig) {
  Contract fast;
  fast.profile = ProfileId::kFastMath;
  const std::vector<double> y = {0.5, 1.0, 2.0, 4.0, -3.0, 0.25};
  const std::vector<double> tau = testing::rounding_taus(DType::kF32, y);
  HostTensor big(DType::kF32, Shape{2});
  big.set_value_at(0, 80.0);
  big.set_value_at(1, -1.0);
  auto judged = [&](std::vector<HostTensor> inputs) {
    testing::Synthetic s;
    s.sig = sig;
    s.contract = fast;
    s.with_oracle(DType::kF32, y, tau).with_call(testing::offset_by(y, tau, 0.5));
    s.inputs = std::move(inputs);
    return s.judge(id);
  };
  const GateResult none = judged({});
  const GateResult some = judged({big});
  return none.verdict != some.verdict || none.reason != some.reason ||
         none.evidence.summary != some.evidence.summary;
}

// The audit's judge binding passes input values only to the judges that say they read them (a
// KernelBench input can be gigabytes). So every other judge must give the same result with no
// inputs as with real ones; PRC-01 of an op with exp must not (its exp budget follows the
// largest input), which shows the comparison can tell.
TEST(GateRegistry, OnlyJudgesThatSayTheyReadInputsDependOnThem) {
  OpSignature sig = testing::synthetic_sig("exp");
  sig.uses_exp = true;
  for (GateId id : kAllGates) {
    if (gate_def(id).judge == nullptr) continue;
    EXPECT_EQ(judge_depends_on_inputs(id, sig), judge_reads_input_values(id, sig)) << gate_code(id);
  }
}

// Without exp in the op, PRC-01 has no exp budget either: no judge reads input values, so the
// binding copies none.
TEST(GateRegistry, NoJudgeReadsInputsOfAnOpWithoutExp) {
  const OpSignature sig = testing::synthetic_sig("add");
  for (GateId id : kAllGates) {
    EXPECT_FALSE(judge_reads_input_values(id, sig)) << gate_code(id);
    if (gate_def(id).judge != nullptr) {
      EXPECT_FALSE(judge_depends_on_inputs(id, sig)) << gate_code(id);
    }
  }
  OpSignature sigmoid = testing::synthetic_sig("sigmoid");
  sigmoid.uses_exp = true;  // sigmoid's budget is a fixed ulp count, not the exp one
  EXPECT_FALSE(judge_reads_input_values(GateId::kPrc01, sigmoid));
}

}  // namespace
}  // namespace kcv
