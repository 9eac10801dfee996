// File: tests/unit/oracle/registry_test.cpp
// The registry holds exactly the op table of docs/01_contracts_and_profiles.md, with its
// signatures, defaults and reference sizes; contract dtypes resolve against signatures; size
// binding names bad inputs.
#include <gtest/gtest.h>

#include <set>

#include "oracle_test_util.hpp"

namespace kcv {
namespace {

TEST(OracleRegistry, HoldsEveryOpOfTheTable) {
  const std::set<std::string> expected = {
      "add",         "mul",       "maximum", "div",    "sqrt", "exp",    "relu",   "gelu",
      "gelu_tanh",   "sigmoid",   "clamp",   "sum",    "mean", "max",    "argmax", "softmax",
      "log_softmax", "layernorm", "rmsnorm", "matmul", "bmm",  "cumsum", "conv1d", "conv2d"};
  std::set<std::string> got;
  for (const Op* op : all_ops()) got.insert(op->signature().name);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(op_names().size(), expected.size());
  EXPECT_EQ(find_op("softmax_v2"), nullptr);
}

// The success path (an op of another library joins find_op and all_ops) is tested where such ops
// exist (glr/verify/tests/case_test.cpp): registering one here would reach the property tests
// that run every op when this binary runs whole.
TEST(OracleRegistry, RegisterOpRefusesNoOpAndATakenName) {
  EXPECT_FALSE(register_op(nullptr).ok());
  const auto* softmax = find_op("softmax");
  struct Copy final : Op {
    explicit Copy(const Op& o) : of(o) {}
    const OpSignature& signature() const override { return of.signature(); }
    OracleResult evaluate(std::span<const HostTensor> in, const Contract& c) const override {
      return of.evaluate(in, c);
    }
    const Op& of;
  };
  const Status taken = register_op(std::make_unique<Copy>(*softmax));
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message.find("'softmax' exists"), std::string::npos);
  EXPECT_EQ(find_op("softmax"), softmax);
  EXPECT_EQ(op_names().size(), all_ops().size());
}

TEST(OracleRegistry, SignaturesFollowTheTable) {
  const OpSignature& ln = find_op("layernorm")->signature();
  ASSERT_EQ(ln.inputs.size(), 3u);
  EXPECT_EQ(ln.inputs[1].dims, std::vector<std::string>{"N"});
  EXPECT_EQ(ln.default_params.at("eps"), 1e-5);
  EXPECT_EQ(find_op("rmsnorm")->signature().default_params.at("eps"), 1e-6);
  EXPECT_EQ(find_op("clamp")->signature().default_params.at("min"), -0.5);
  EXPECT_EQ(find_op("div")->signature().inputs[1].domain, ValueDomain::kNonZero);
  EXPECT_EQ(find_op("sqrt")->signature().inputs[0].domain, ValueDomain::kPositive);
  EXPECT_TRUE(find_op("argmax")->signature().index_output);
  EXPECT_EQ(find_op("matmul")->signature().reduction_dim, "K");
  EXPECT_EQ(find_op("conv1d")->signature().reduction_dim, "C");
  const auto& conv2d = find_op("conv2d")->signature();
  EXPECT_EQ(conv2d.reference_sizes.at("R"), 3);
  EXPECT_EQ(conv2d.outputs[0].dims, (std::vector<std::string>{"B", "O", "H", "W"}));
  EXPECT_EQ(find_op("bmm")->signature().reference_sizes.at("K"), 128);
  EXPECT_EQ(find_op("sum")->signature().outputs[0].dims, std::vector<std::string>{"M"});
}

TEST(OracleRegistry, ShapeOfAndMergedParams) {
  const OpSignature& mm = find_op("matmul")->signature();
  EXPECT_EQ(shape_of(mm.outputs[0], {{"M", 3}, {"N", 5}, {"K", 7}}), (Shape{3, 5}));
  Contract c;
  c.params["max"] = 2.0;
  const auto p = merged_params(find_op("clamp")->signature(), c);
  EXPECT_EQ(p.at("min"), -0.5);
  EXPECT_EQ(p.at("max"), 2.0);
}

TEST(OracleRegistry, DtypesResolveWithRepeatAndDefaults) {
  const OpSignature& ln = find_op("layernorm")->signature();
  Contract c;
  EXPECT_EQ(input_dtypes(ln, c), std::vector<DType>(3, DType::kF32));
  c.input_dtypes = {DType::kF16};
  EXPECT_EQ(input_dtypes(ln, c), std::vector<DType>(3, DType::kF16));
  EXPECT_EQ(output_dtypes(ln, c), std::vector<DType>{DType::kF16});
  c.output_dtypes = {DType::kF32};
  EXPECT_EQ(output_dtypes(ln, c), std::vector<DType>{DType::kF32});
  EXPECT_EQ(output_dtypes(find_op("argmax")->signature(), c), std::vector<DType>{DType::kI64});
}

TEST(OracleRegistry, BindSizesNamesTheInconsistentSymbol) {
  const OpSignature& mm = find_op("matmul")->signature();
  std::vector<HostTensor> ok = {HostTensor(DType::kF32, {2, 3}), HostTensor(DType::kF32, {3, 4})};
  auto sizes = bind_sizes(mm, ok);
  ASSERT_TRUE(sizes);
  EXPECT_EQ(sizes->at("K"), 3);
  std::vector<HostTensor> bad = {HostTensor(DType::kF32, {2, 3}), HostTensor(DType::kF32, {5, 4})};
  auto err = bind_sizes(mm, bad);
  ASSERT_FALSE(err);
  EXPECT_NE(err.error().message.find("K"), std::string::npos);
  std::vector<HostTensor> rank = {HostTensor(DType::kF32, {2, 3, 1}),
                                  HostTensor(DType::kF32, {3, 4})};
  EXPECT_FALSE(bind_sizes(mm, rank));
  EXPECT_TRUE(find_op("matmul")->evaluate(bad, Contract{}).outputs.empty());
}

}  // namespace
}  // namespace kcv
