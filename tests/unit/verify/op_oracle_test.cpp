// File: tests/unit/verify/op_oracle_test.cpp
// OpOracle's result is shared by the profiles judging a probe, so refine never writes into it:
// with no borderline element it hands back the same result, and with one it returns a copy that
// holds the MPFR value while the evaluated result stays as it was.
#include <gtest/gtest.h>

#include "kcv/op_pipeline.hpp"

namespace kcv {
namespace {

struct Evaluated {
  Probe probe;
  ProbeInputs inputs;
  SharedOracleResult result;
};

Evaluated evaluate_sum(OpOracle& oracle, const Op& op, const Contract& contract) {
  const SignatureProbes probes(op, contract, false);
  Evaluated e;
  e.probe = probes.plan(GateId::kCmp01, contract, 7).front();
  auto inputs = oracle.make_inputs(e.probe);
  EXPECT_TRUE(inputs.has_value());
  e.inputs = std::move(*inputs);
  auto result = oracle.evaluate(e.probe, e.inputs, contract);
  EXPECT_TRUE(result.has_value());
  e.result = std::move(*result);
  return e;
}

// One call whose outputs are the oracle's values, with element `moved` off by `ratio`·tau.
ProbeOutcome outcome_of(const OracleResult& r, int64_t moved, double ratio) {
  CallRecord call;
  for (const OracleOutput& o : r.outputs) {
    std::vector<double> v = o.value;
    if (moved >= 0)
      v[static_cast<std::size_t>(moved)] += ratio * o.tau[static_cast<std::size_t>(moved)];
    call.outputs.push_back(make_tensor(DType::kF64, o.shape, v));
  }
  ProbeOutcome out;
  out.calls.push_back(std::move(call));
  return out;
}

// A sum probe of CMP-01, evaluated.
class OpOracleRefine : public ::testing::Test {
 protected:
  const Op& op = *find_op("sum");
  const Contract contract;
  OpOracle oracle{op, contract};
  const Evaluated e = evaluate_sum(oracle, op, contract);
};

TEST_F(OpOracleRefine, WithoutABorderlineElementReturnsTheSameResult) {
  ASSERT_NE(e.result, nullptr);
  const SharedOracleResult refined =
      oracle.refine(e.probe, e.inputs, contract, outcome_of(*e.result, -1, 0), e.result);
  EXPECT_EQ(refined.get(), e.result.get());
  EXPECT_FALSE(refined->escalated);
}

TEST_F(OpOracleRefine, CopiesTheResultItRecomputesAndLeavesTheSharedOneAlone) {
  ASSERT_NE(e.result, nullptr);
  ASSERT_FALSE(e.result->outputs.empty());
  const OracleResult before = *e.result;
  // Element 0 at 1.0·tau from the value: borderline (0.5 ≤ ratio ≤ 2), so it is recomputed.
  const SharedOracleResult refined =
      oracle.refine(e.probe, e.inputs, contract, outcome_of(*e.result, 0, 1.0), e.result);
  ASSERT_NE(refined, nullptr);
  EXPECT_NE(refined.get(), e.result.get());
  EXPECT_TRUE(refined->escalated);
  EXPECT_FALSE(e.result->escalated);
  EXPECT_EQ(e.result->outputs[0].value, before.outputs[0].value);
  EXPECT_EQ(refined->outputs[0].tau, before.outputs[0].tau);
  // The exact sum differs from the fp64 one by far less than tau: the same value or a neighbour.
  EXPECT_NEAR(refined->outputs[0].value[0], before.outputs[0].value[0],
              before.outputs[0].tau[0] * 1e-3);
}

}  // namespace
}  // namespace kcv
