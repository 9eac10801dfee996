// File: tests/unit/contract/profile_test.cpp
// The profile table: names parse (both spellings), unknown names are refused with the valid list,
// and the sourced facts the oracle depends on hold (NaN semantics, FTZ, exp budgets).
#include <gtest/gtest.h>

#include "kcv/profile.hpp"

namespace kcv {
namespace {

TEST(Profile, EveryProfileParsesByItsOwnName) {
  ASSERT_EQ(all_profiles().size(), 5u);
  for (const Profile& p : all_profiles()) {
    auto id = parse_profile(p.name);
    ASSERT_TRUE(id) << p.name;
    EXPECT_EQ(*id, p.id);
    EXPECT_EQ(profile(p.id).name, p.name);
    EXPECT_FALSE(p.source.empty());
  }
}

TEST(Profile, AcceptsUnderscoreAndUpperCaseSpellings) {
  auto id = parse_profile("Triton_Default");
  ASSERT_TRUE(id);
  EXPECT_EQ(*id, ProfileId::kTritonDefault);
}

TEST(Profile, UnknownNameIsAnErrorListingTheValidNames) {
  auto id = parse_profile("ieee");
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message.find("'ieee'"), std::string::npos);
  EXPECT_NE(id.error().message.find("pytorch-eager"), std::string::npos);
}

TEST(Profile, NanSemanticsFollowTheResearchTable) {
  EXPECT_EQ(profile(ProfileId::kStrict).nan_minmax, NanMinMax::kPropagate);
  EXPECT_EQ(profile(ProfileId::kPytorchEager).nan_minmax, NanMinMax::kPropagate);
  EXPECT_EQ(profile(ProfileId::kCudaDefault).nan_minmax, NanMinMax::kNumber);
  EXPECT_EQ(profile(ProfileId::kTritonDefault).nan_minmax, NanMinMax::kNumber);
  EXPECT_TRUE(profile(ProfileId::kStrict).clamp_propagates_nan);
  EXPECT_FALSE(profile(ProfileId::kTritonDefault).clamp_propagates_nan);
}

TEST(Profile, OnlyFastMathFlushesSubnormals) {
  for (const Profile& p : all_profiles()) {
    EXPECT_EQ(p.flush_subnormals, p.id == ProfileId::kFastMath) << p.name;
  }
  EXPECT_FALSE(profile(ProfileId::kStrict).fma_contraction);
  EXPECT_TRUE(profile(ProfileId::kTritonDefault).tf32_dot);
}

TEST(Profile, ExpBudgetGrowsWithArgumentOnlyForApproximateExp) {
  const Profile& fast = profile(ProfileId::kFastMath);
  EXPECT_EQ(exp_ulp_budget(fast, 0.0), 2.0);
  EXPECT_EQ(exp_ulp_budget(fast, -10.0), 2.0 + 1.173 * 10.0);
  EXPECT_EQ(exp_ulp_budget(profile(ProfileId::kStrict), -10.0), 1.0);
  EXPECT_EQ(exp_ulp_budget(profile(ProfileId::kCudaDefault), 50.0), 2.0);
}

}  // namespace
}  // namespace kcv
