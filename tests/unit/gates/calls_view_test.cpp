// File: tests/unit/gates/calls_view_test.cpp
// A judge reads its calls through a CallsView: records owned elsewhere (the Python binding's,
// viewed by pointer) are judged exactly as the same records owned by a ProbeOutcome.
#include <gtest/gtest.h>

#include <vector>

#include "kcv/gate.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

using testing::Synthetic;

TEST(CallsView, ViewsAProbeOutcomeInOrder) {
  ProbeOutcome outcome;
  outcome.calls.resize(3);
  outcome.calls[1].message = "second";
  const CallsView view(outcome);
  ASSERT_EQ(view.size(), 3u);
  EXPECT_FALSE(view.empty());
  EXPECT_EQ(&view.front(), &outcome.calls[0]);
  EXPECT_EQ(view[1].message, "second");
  std::size_t k = 0;
  for (const CallRecord& c : view) EXPECT_EQ(&c, &outcome.calls[k++]);
  EXPECT_EQ(k, 3u);
  EXPECT_TRUE(CallsView().empty());
}

TEST(CallsView, RecordsViewedByPointerJudgeAsTheOwnedOnes) {
  const std::vector<double> y = {1.0, -2.0, 0.5, 4.0};
  const std::vector<double> tau = {1e-3, 1e-3, 1e-3, 1e-3};
  const std::vector<double> moved = {1.0, -2.0, 0.5, 4.5};  // one element over its bound
  for (const GateId gate : {GateId::kCmp01, GateId::kCmp02, GateId::kOrd02, GateId::kRes01}) {
    Synthetic s;
    s.with_oracle(DType::kF32, y, tau).with_call(y).with_call(moved);
    s.contract.deterministic = true;
    s.for_gate(gate);
    const GateResult owned = gate_def(gate).judge(s.input());
    std::vector<const CallRecord*> records;
    for (const CallRecord& c : s.outcome.calls) records.push_back(&c);
    const GateResult viewed = gate_def(gate).judge(
        JudgeInput{s.probe, s.sig, s.contract, s.oracle, CallsView(records), s.inputs});
    EXPECT_EQ(viewed.verdict, owned.verdict) << gate_code(gate);
    EXPECT_EQ(viewed.evidence.summary, owned.evidence.summary) << gate_code(gate);
    EXPECT_EQ(viewed.evidence.worst_index, owned.evidence.worst_index) << gate_code(gate);
    EXPECT_EQ(viewed.evidence.violations, owned.evidence.violations) << gate_code(gate);
  }
}

}  // namespace
}  // namespace kcv
