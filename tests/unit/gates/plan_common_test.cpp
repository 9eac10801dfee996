// File: tests/unit/gates/plan_common_test.cpp
// Plan building blocks on hand-made signatures: seeds, tail and spread sizes, fixed dims, and
// the element index of a position along a reduction line.
#include <gtest/gtest.h>

#include <set>

#include "gates/plan_common.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv::gates {
namespace {

OpSignature matmul_like() {
  OpSignature sig;
  sig.name = "mm";
  sig.op_class = OpClass::kMatmul;
  sig.inputs = {TensorSig{"a", {"M", "K"}, ValueDomain::kAny}, TensorSig{"b", {"K", "N"}, ValueDomain::kAny}};
  sig.outputs = {TensorSig{"out", {"M", "N"}, ValueDomain::kAny}};
  sig.reference_sizes = {{"M", 32}, {"K", 256}, {"N", 32}};
  sig.reduction_dim = "K";
  return sig;
}

OpSignature conv_like() {
  OpSignature sig;
  sig.name = "cv";
  sig.op_class = OpClass::kConvolution;
  sig.inputs = {TensorSig{"x", {"B", "C", "L"}, ValueDomain::kAny}, TensorSig{"w", {"O", "C", "R"}, ValueDomain::kAny}};
  sig.outputs = {TensorSig{"out", {"B", "O", "L"}, ValueDomain::kAny}};
  sig.reference_sizes = {{"B", 2}, {"C", 8}, {"L", 16}, {"O", 8}, {"R", 5}};
  sig.reduction_dim = "C";
  return sig;
}

TEST(ProbeSeed, DistinctAcrossProbesGatesAndBaseSeeds) {
  std::set<uint64_t> seen;
  for (uint64_t base : {0ull, 1ull, 0x6b6376ull}) {
    for (GateId g : kAllGates) {
      for (std::size_t k = 0; k < 64; ++k) seen.insert(probe_seed(base, g, k));
    }
  }
  EXPECT_EQ(seen.size(), 3u * kAllGates.size() * 64u);
  EXPECT_EQ(probe_seed(7, GateId::kExc01, 3), probe_seed(7, GateId::kExc01, 3));
}

TEST(PlanSizes, TailPutsTilePlusOneOnTheInnermostDimUnlessFixed) {
  const OpSignature sig = matmul_like();
  Contract c;
  c.tile = 64;
  EXPECT_EQ(tail_sizes(sig, c).at("K"), 65);
  EXPECT_EQ(tail_sizes(sig, c).at("M"), 32);
  c.fixed_dims = {"K"};
  EXPECT_EQ(tail_sizes(sig, c).at("K"), 256);
}

TEST(PlanSizes, ContractReferenceSizesOverrideTheOps) {
  Contract c;
  c.reference_sizes = {{"M", 5}};
  EXPECT_EQ(reference_sizes(matmul_like(), c).at("M"), 5);
  EXPECT_EQ(reference_sizes(matmul_like(), c).at("K"), 256);
}

TEST(PlanSizes, SpreadOutputsReachesTheMinimumWithSmallOtherDims) {
  const OpSignature sig = matmul_like();
  Sizes s = reference_sizes(sig, Contract{});
  s["K"] = 8192;
  const Sizes spread = spread_outputs(sig, Contract{}, s, "K", 32);
  EXPECT_EQ(spread.at("K"), 8192);
  EXPECT_EQ(output_numel(sig, spread), 32);
  EXPECT_EQ(spread.at("M") * spread.at("N"), 32);
  EXPECT_EQ(output_numel(sig, spread_outputs(sig, Contract{}, s, "K", 1)), 1);
}

TEST(PlanSizes, KernelSizeSymbolsNeverVary) {
  const OpSignature sig = conv_like();
  const Sizes spread = spread_outputs(sig, Contract{}, reference_sizes(sig, Contract{}), "C", 1);
  EXPECT_EQ(spread.at("R"), 5);
  EXPECT_EQ(spread.at("B") * spread.at("O") * spread.at("L"), 1);
  EXPECT_TRUE(is_fixed(Contract{}, "R"));
  EXPECT_TRUE(is_fixed(Contract{}, "S"));
  EXPECT_FALSE(is_fixed(Contract{}, "C"));
}

TEST(LineIndex, WalksTheReductionDimOfTheChosenLine) {
  const OpSignature sig = matmul_like();
  const Sizes s = {{"M", 4}, {"K", 10}, {"N", 3}};
  EXPECT_EQ(line_index(sig, 0, s, "K", 0, 0), 0);
  EXPECT_EQ(line_index(sig, 0, s, "K", 2, 7), 2 * 10 + 7);  // a[2, 7]
  EXPECT_EQ(line_index(sig, 1, s, "K", 1, 4), 4 * 3 + 1);   // b[4, 1]
  EXPECT_EQ(line_index(sig, 0, s, "K", 0, 10), -1);         // past the line
  EXPECT_EQ(line_index(sig, 0, s, "N", 0, 0), -1);          // a has no N
  EXPECT_EQ(line_count(sig, 0, s, "K"), 4);
}

TEST(LineIndex, SkipsSizeOneDimsWhenChoosingTheLine) {
  const OpSignature sig = conv_like();
  const Sizes s = {{"B", 1}, {"C", 6}, {"L", 5}, {"O", 2}, {"R", 5}};
  EXPECT_EQ(line_index(sig, 0, s, "C", 3, 2), 2 * 5 + 3);  // x[0, 2, 3]: the line runs over L
}

TEST(MakeProbe, UsesTheContractsDtypesAndOneDistribution) {
  const OpSignature sig = matmul_like();
  Contract c;
  c.input_dtypes = {DType::kBF16, DType::kF16};
  const Probe p = make_probe(sig, c, reference_sizes(sig, c), Distribution::kUniform01, "x");
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.inputs[0].dtype, DType::kBF16);
  EXPECT_EQ(p.inputs[1].dtype, DType::kF16);
  EXPECT_EQ(p.inputs[1].dist, Distribution::kUniform01);
  EXPECT_EQ(p.inputs[0].layout.kind, LayoutKind::kContiguous);
  EXPECT_EQ(p.repetitions, 1);
}

}  // namespace
}  // namespace kcv::gates
