// File: tests/unit/kernelbench/problem_test.cpp
// The reference worker's description of a problem is read strictly: a load reply as docs/06
// §7.1-7.2 writes it becomes a ModuleProblem with its facts; a malformed one is an Error naming
// the field.
#include <gtest/gtest.h>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

constexpr const char* kReply = R"({"type": "loaded", "device": "cpu", "problem": {
  "inputs": [{"kind": "tensor", "dtype": "f32", "shape": [16, 4096]}, {"kind": "scalar", "value": 1}],
  "outputs": [{"dtype": "f32", "shape": [16]}],
  "constants": {"batch_size": 16, "dim": 4096},
  "facts": {"constants": [{"name": "batch_size", "value": 16, "get_inputs": true, "init": false},
                          {"name": "dim", "value": 4096, "get_inputs": true, "init": false}],
            "reductions": [{"op": "aten.sum.dim_IntList", "kind": "sum", "length": 4096, "constant": "dim"}],
            "minmax": false, "stochastic": false, "repeatable": true, "ops": ["aten.sum.dim_IntList"],
            "trial_seeds": [1, 2, 3, 4, 5]}}})";

TEST(ModuleProblem, ReadsTheLoadReplyWithItsFacts) {
  auto p = parse_problem(kReply);
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_EQ(p->inputs.size(), 2u);
  EXPECT_TRUE(p->inputs[0].tensor);
  EXPECT_FALSE(p->inputs[1].tensor);
  EXPECT_EQ(p->tensor_inputs().size(), 1u);
  EXPECT_EQ(p->io_bytes(), 16 * 4096 * 4 + 16 * 4);
  EXPECT_EQ(p->constants.at("dim"), 4096);
  ASSERT_EQ(p->facts.reductions.size(), 1u);
  EXPECT_EQ(p->facts.reductions[0].kind, ReductionKind::kSum);
  EXPECT_EQ(p->facts.reductions[0].constant, "dim");
  EXPECT_EQ(p->facts.trial_seeds.size(), 5u);
  EXPECT_TRUE(p->facts.constants[1].in_get_inputs);
}

TEST(ModuleProblem, NamesTheBadField) {
  auto p =
      parse_problem(R"({"problem": {"inputs": [], "outputs": [{"dtype": "f99", "shape": [1]}]}})");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("outputs.dtype"), std::string::npos) << p.error().message;
  auto q = parse_problem(R"({"problem": {"inputs": [], "outputs": [],
                             "facts": {"reductions": [{"kind": "sum", "length": "long"}]}}})");
  ASSERT_FALSE(q);
  auto r = parse_problem(R"({"type": "loaded"})");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no problem"), std::string::npos);
}

TEST(ModuleProblem, AReferenceWithoutOutputsIsRefused) {
  auto p = parse_problem(R"({"problem": {"inputs": [], "outputs": []}})");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("no tensor output"), std::string::npos);
}

}  // namespace
}  // namespace kcv::kb
