// File: tests/unit/contract/contract_test.cpp
// Contract parsing: every field is read, unknown fields and wrong types are errors that name the
// field by its path, and contract_to_json round-trips.
#include <gtest/gtest.h>

#include <string>

#include "kcv/contract.hpp"

namespace kcv {
namespace {

constexpr const char* kFull = R"({
  "op": "matmul", "inputs": ["bf16", "bfloat16"], "outputs": ["f32"], "accumulator": "f32",
  "profile": "triton-default", "deterministic": false, "in_place": true,
  "layout_invariant": true, "params": {"alpha": 0.5, "beta": -2},
  "reference_sizes": {"M": 64, "K": 512, "N": 32}, "fixed_dims": ["K"], "tile": 128,
  "launch_configs": [{"block": 64, "threads": 128}, {"threads": 32}],
  "budgets": {"registers_per_thread": 128, "spill_bytes": 0, "stack_bytes": 0, "shared_bytes": 49152,
              "threads_per_block": 256, "tmem_columns": 512, "workspace_bytes": 4096},
  "arch": "sm_100a"})";

std::string error_of(std::string_view json) {
  auto c = parse_contract(json);
  return c ? std::string() : c.error().message;
}

TEST(Contract, ReadsEveryField) {
  auto c = parse_contract(kFull);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->op, "matmul");
  EXPECT_EQ(c->input_dtypes, (std::vector<DType>{DType::kBF16, DType::kBF16}));
  EXPECT_EQ(c->output_dtypes, std::vector<DType>{DType::kF32});
  EXPECT_EQ(c->profile, ProfileId::kTritonDefault);
  EXPECT_FALSE(c->deterministic);
  EXPECT_TRUE(c->in_place);
  EXPECT_TRUE(c->layout_invariant);
  EXPECT_EQ(c->params.at("alpha"), 0.5);
  EXPECT_EQ(c->params.at("beta"), -2.0);
  EXPECT_EQ(c->reference_sizes.at("K"), 512);
  EXPECT_EQ(c->fixed_dims, std::vector<std::string>{"K"});
  EXPECT_EQ(c->tile, 128);
  ASSERT_EQ(c->launch_configs.size(), 2u);
  EXPECT_EQ(c->launch_configs[0], (LaunchConfig{64, 128}));
  EXPECT_EQ(c->launch_configs[1], (LaunchConfig{0, 32}));
  EXPECT_EQ(c->budgets.shared_bytes, 49152);
  EXPECT_EQ(c->budgets.spill_bytes, 0);
  EXPECT_EQ(c->budgets.stack_bytes, 0);
  EXPECT_EQ(c->budgets.tmem_columns, 512);
  EXPECT_EQ(c->arch, "sm_100a");
}

TEST(Contract, EmptyObjectKeepsDefaults) {
  auto c = parse_contract("{}", "softmax");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->op, "softmax");
  EXPECT_EQ(c->accumulator, DType::kF32);
  EXPECT_EQ(c->profile, ProfileId::kStrict);
  EXPECT_TRUE(c->deterministic);
  EXPECT_FALSE(c->budgets.shared_bytes.has_value());
}

TEST(Contract, AccumulatorDefaultsToF64ForF64Inputs) {
  auto c = parse_contract(R"({"inputs": ["f64"]})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->accumulator, DType::kF64);
}

TEST(Contract, UnknownTopLevelFieldIsNamed) {
  EXPECT_NE(error_of(R"({"profil": "strict"})").find("'profil'"), std::string::npos);
}

TEST(Contract, UnknownNestedFieldsAreNamedByPath) {
  EXPECT_NE(error_of(R"({"budgets": {"smem": 1}})").find("'budgets.smem'"), std::string::npos);
  EXPECT_NE(error_of(R"({"launch_configs": [{"threads": 1}, {"grid": 2}]})")
                .find("'launch_configs[1].grid'"),
            std::string::npos);
}

TEST(Contract, WrongTypesAreNamed) {
  EXPECT_NE(error_of(R"({"tile": "256"})").find("'tile'"), std::string::npos);
  EXPECT_NE(error_of(R"({"tile": 2.5})").find("'tile'"), std::string::npos);
  EXPECT_NE(error_of(R"({"deterministic": 1})").find("'deterministic'"), std::string::npos);
  EXPECT_NE(error_of(R"({"params": {"eps": true}})").find("'params.eps'"), std::string::npos);
  EXPECT_NE(error_of(R"({"reference_sizes": {"N": 1.5}})").find("'reference_sizes.N'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"inputs": ["f32", "f24"]})").find("'inputs[1]'"), std::string::npos);
  EXPECT_NE(error_of(R"({"budgets": {"shared_bytes": -1}})").find("'budgets.shared_bytes'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"profile": "ieee"})").find("'profile'"), std::string::npos);
  EXPECT_NE(error_of(R"({"fixed_dims": "N"})").find("'fixed_dims'"), std::string::npos);
}

TEST(Contract, MalformedJsonAndNonObjectsAreErrors) {
  EXPECT_FALSE(parse_contract("{\"op\": ").has_value());
  EXPECT_FALSE(parse_contract("[1, 2]").has_value());
}

TEST(Contract, OpArgumentMustAgreeWithTheContract) {
  EXPECT_TRUE(parse_contract(R"({"op": "sum"})", "sum").has_value());
  auto c = parse_contract(R"({"op": "sum"})", "mean");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("'op'"), std::string::npos);
}

TEST(Contract, ToJsonRoundTrips) {
  auto c = parse_contract(kFull);
  ASSERT_TRUE(c);
  const std::string once = contract_to_json(*c);
  auto back = parse_contract(once);
  ASSERT_TRUE(back) << back.error().message << "\n" << once;
  EXPECT_EQ(contract_to_json(*back), once);
  EXPECT_EQ(back->params, c->params);
  EXPECT_EQ(back->launch_configs, c->launch_configs);
  EXPECT_EQ(back->budgets.workspace_bytes, c->budgets.workspace_bytes);
  EXPECT_EQ(back->input_dtypes, c->input_dtypes);
}

TEST(Contract, DefaultContractRoundTrips) {
  Contract c;
  c.op = "sum";
  auto back = parse_contract(contract_to_json(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(contract_to_json(*back), contract_to_json(c));
}

}  // namespace
}  // namespace kcv
