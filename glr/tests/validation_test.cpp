// File: glr/tests/validation_test.cpp
// Bad input is rejected before any arithmetic, by every entry point, with an InvalidArgument
// error whose message names the offending field.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "kcv/glr/chunked.hpp"
#include "kcv/glr/oracle.hpp"
#include "support/problems.hpp"

namespace kcv::glr {
namespace {

testing::Case valid_case(Member m) {
  testing::ProblemSpec spec;
  spec.lengths = {4, 6};
  spec.qk_heads = 1;
  spec.v_heads = 2;
  spec.key_dim = 4;
  spec.value_dim = 3;
  return testing::make_case(m, spec);
}

// Every entry point rejects `c` with a message containing `field`.
void expect_rejected(Member m, const testing::Case& c, const std::string& field) {
  const auto check = [&](const Error& e, const char* api) {
    EXPECT_EQ(e.code, ErrorCode::kInvalidArgument) << api;
    EXPECT_NE(e.message.find(field), std::string::npos) << api << ": " << e.to_string();
  };
  Expected<Outputs> a = oracle_forward(m, c.problem);
  Expected<Gradients> b = oracle_backward(m, c.problem, c.cot);
  Expected<Outputs> d = chunked_forward(m, c.problem);
  Expected<Gradients> e = chunked_backward(m, c.problem, c.cot);
  ASSERT_FALSE(a.has_value() || b.has_value() || d.has_value() || e.has_value()) << field;
  check(a.error(), "oracle_forward");
  check(b.error(), "oracle_backward");
  check(d.error(), "chunked_forward");
  check(e.error(), "chunked_backward");
}

TEST(Validation, AcceptsAWellFormedProblem) {
  for (Member m : kAllMembers) {
    const testing::Case c = valid_case(m);
    EXPECT_TRUE(validate(m, c.problem).ok()) << name(m);
    EXPECT_TRUE(validate(c.problem, c.cot).ok()) << name(m);
  }
}

TEST(Validation, NamesTheTensorWithTheWrongSize) {
  const std::pair<const char*, std::function<void(testing::Case&)>> edits[] = {
      {"'q'", [](testing::Case& c) { c.problem.q.pop_back(); }},
      {"'k'", [](testing::Case& c) { c.problem.k.push_back(0.0); }},
      {"'v'", [](testing::Case& c) { c.problem.v.pop_back(); }},
      {"'g'", [](testing::Case& c) { c.problem.g.pop_back(); }},
      {"'beta'", [](testing::Case& c) { c.problem.beta.pop_back(); }},
      {"'h0'", [](testing::Case& c) { c.problem.h0.pop_back(); }},
  };
  for (const auto& [field, edit] : edits) {
    testing::Case c = valid_case(Member::kKda);
    edit(c);
    expect_rejected(Member::kKda, c, field);
  }
}

TEST(Validation, RejectsInputsAMemberDoesNotTake) {
  testing::Case c = valid_case(Member::kLinearAttention);
  c.problem.beta.assign(c.problem.shape.tokens * c.problem.shape.v_heads, 0.5);
  expect_rejected(Member::kLinearAttention, c, "'beta'");
  testing::Case d = valid_case(Member::kDeltaNet);
  d.problem.g.assign(d.problem.shape.tokens * d.problem.shape.v_heads, -0.1);
  expect_rejected(Member::kDeltaNet, d, "'g'");
}

TEST(Validation, RejectsMalformedCuSeqlens) {
  for (const std::vector<std::int64_t>& bad :
       {std::vector<std::int64_t>{0, 6, 4, 10}, {0, 4, 4, 10}, {1, 4, 10}, {0, 4, 9}}) {
    testing::Case c = valid_case(Member::kGatedDeltaNet);
    c.problem.shape.cu_seqlens = bad;
    expect_rejected(Member::kGatedDeltaNet, c, "cu_seqlens");
  }
}

TEST(Validation, RejectsValueHeadsNotAMultipleOfQkHeads) {
  testing::Case c = valid_case(Member::kSimpleGla);
  c.problem.shape.qk_heads = 3;  // v_heads = 2
  expect_rejected(Member::kSimpleGla, c, "v_heads");
}

TEST(Validation, RejectsMisfitCotangents) {
  testing::Case c = valid_case(Member::kGla);
  c.cot.d_o.pop_back();
  EXPECT_NE(oracle_backward(Member::kGla, c.problem, c.cot).error().message.find("'d_o'"),
            std::string::npos);
  EXPECT_NE(chunked_backward(Member::kGla, c.problem, c.cot).error().message.find("'d_o'"),
            std::string::npos);
  testing::Case d = valid_case(Member::kGla);
  d.cot.d_final_state.pop_back();
  EXPECT_NE(
      chunked_backward(Member::kGla, d.problem, d.cot).error().message.find("'d_final_state'"),
      std::string::npos);
}

TEST(Validation, RejectsAChunkSizeThatIsNotAMultipleOfTheSubChunk) {
  const testing::Case c = valid_case(Member::kKda);
  for (std::int64_t bad : {0, 8, 40, -64}) {
    Expected<Outputs> out = chunked_forward(Member::kKda, c.problem, {bad});
    ASSERT_FALSE(out.has_value()) << bad;
    EXPECT_NE(out.error().message.find("chunk_size"), std::string::npos);
  }
  EXPECT_TRUE(chunked_forward(Member::kKda, c.problem, {48}).has_value());
}

}  // namespace
}  // namespace kcv::glr
