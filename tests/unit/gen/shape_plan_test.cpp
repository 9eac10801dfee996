// File: tests/unit/gen/shape_plan_test.cpp
// Shape plans: the documented case classes appear, tile edges land on the reduction (or last)
// dim, fixed dims and kernel sizes never vary, no size is 0, and every generated case stays
// within the CPU budget the plan promises.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "gen/sizes.hpp"
#include "kcv/generate.hpp"
#include "unit/gen/test_signatures.hpp"

namespace kcv {
namespace {

// Mirrors the budget documented in src/gen/shape_plan.cpp.
constexpr int64_t kMaxElements = int64_t{1} << 22;
constexpr int64_t kMaxWork = int64_t{1} << 24;

const ShapeCase* find_case(const std::vector<ShapeCase>& plan, const std::string& label) {
  for (const ShapeCase& c : plan) {
    if (c.label == label) {
      return &c;
    }
  }
  return nullptr;
}

void expect_sane(const OpSignature& sig, const std::vector<ShapeCase>& plan) {
  for (const ShapeCase& c : plan) {
    for (const auto& [dim, size] : c.sizes) {
      EXPECT_GE(size, 1) << c.label << " " << dim;
    }
    if (c.label != "reference") {
      EXPECT_LE(gen::total_elements(sig, c.sizes), kMaxElements) << sig.name << " " << c.label;
      EXPECT_LE(gen::work_estimate(sig, c.sizes), kMaxWork) << sig.name << " " << c.label;
    }
  }
}

TEST(ShapePlan, ElementwiseHasEveryCaseClass) {
  const OpSignature sig = testing::binary_sig();
  const auto plan = shape_plan(sig, Contract{}, true);
  for (const char* label : {"reference", "ones", "small", "prime", "tile-1", "tile+1", "2tile-1", "large"}) {
    EXPECT_NE(find_case(plan, label), nullptr) << label;
  }
  EXPECT_EQ(plan.front().label, "reference");
  EXPECT_EQ(plan.front().sizes, (std::map<std::string, int64_t>{{"M", 16}, {"N", 1024}}));
  EXPECT_EQ(find_case(plan, "tile-1")->sizes.at("N"), 255);
  EXPECT_EQ(find_case(plan, "tile+1")->sizes.at("N"), 257);
  EXPECT_EQ(find_case(plan, "2tile-1")->sizes.at("N"), 511);
  EXPECT_EQ(find_case(plan, "prime")->sizes.at("N"), 127);
  EXPECT_EQ(find_case(plan, "ones")->sizes, (std::map<std::string, int64_t>{{"M", 1}, {"N", 1}}));
  const ShapeCase* large = find_case(plan, "large");
  EXPECT_GE(numel(gen::shape_from_sizes(sig, sig.inputs[0], large->sizes)), int64_t{1} << 20);
  expect_sane(sig, plan);
}

TEST(ShapePlan, LargeIsOnlyThereWhenAsked) {
  EXPECT_EQ(find_case(shape_plan(testing::binary_sig(), Contract{}, false), "large"), nullptr);
}

TEST(ShapePlan, SmallCasesUseTwoThreeAndSeven) {
  const auto plan = shape_plan(testing::matmul_sig(), Contract{}, false);
  std::set<int64_t> seen;
  for (const ShapeCase& c : plan) {
    if (c.label == "small") {
      for (const auto& [dim, size] : c.sizes) {
        seen.insert(size);
      }
    }
  }
  EXPECT_EQ(seen, (std::set<int64_t>{2, 3, 7}));
}

TEST(ShapePlan, TileEdgesFollowTheContractTileOnTheReductionDim) {
  Contract c;
  c.tile = 64;
  const auto plan = shape_plan(testing::matmul_sig(), c, true);
  EXPECT_EQ(find_case(plan, "tile-1")->sizes.at("K"), 63);
  EXPECT_EQ(find_case(plan, "tile+1")->sizes.at("K"), 65);
  EXPECT_EQ(find_case(plan, "2tile-1")->sizes.at("K"), 127);
  EXPECT_EQ(find_case(plan, "tile+1")->sizes.at("M"), 32);  // other dims keep the reference
  const ShapeCase* large = find_case(plan, "large");
  EXPECT_GE(large->sizes.at("K"), 8192);
  EXPECT_EQ(large->sizes.at("M"), 8);
  EXPECT_EQ(large->sizes.at("N"), 8);
  expect_sane(testing::matmul_sig(), plan);
}

TEST(ShapePlan, ReductionLargeCaseReducesOverAtLeast8192) {
  const OpSignature sig = testing::softmax_sig();
  const auto plan = shape_plan(sig, Contract{}, true);
  EXPECT_GE(find_case(plan, "large")->sizes.at("N"), 8192);
  expect_sane(sig, plan);
}

TEST(ShapePlan, FixedDimsAndKernelSizesNeverVary) {
  const OpSignature sig = testing::conv2d_sig();
  Contract c;
  c.fixed_dims = {"W"};
  c.reference_sizes = {{"H", 12}};
  const auto plan = shape_plan(sig, c, true);
  EXPECT_GT(plan.size(), 5u);
  for (const ShapeCase& sc : plan) {
    EXPECT_EQ(sc.sizes.at("R"), 3) << sc.label;
    EXPECT_EQ(sc.sizes.at("S"), 3) << sc.label;
    EXPECT_EQ(sc.sizes.at("W"), 16) << sc.label;
  }
  EXPECT_EQ(plan.front().sizes.at("H"), 12);  // the contract overrides the reference
  EXPECT_EQ(find_case(plan, "tile+1")->sizes.at("C"), 257);
  expect_sane(sig, plan);
}

TEST(ShapePlan, FixedReductionDimMovesTileEdgesElsewhere) {
  Contract c;
  c.fixed_dims = {"N"};
  const auto plan = shape_plan(testing::softmax_sig(), c, true);
  for (const ShapeCase& sc : plan) {
    EXPECT_EQ(sc.sizes.at("N"), 1024) << sc.label;
  }
  EXPECT_EQ(find_case(plan, "tile+1")->sizes.at("M"), 257);
}

TEST(ShapePlan, EverythingFixedLeavesOnlyTheReference) {
  Contract c;
  c.fixed_dims = {"M", "N"};
  const auto plan = shape_plan(testing::binary_sig(), c, true);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].label, "reference");
}

TEST(ShapePlan, TinyTileNeverProducesSizeZero) {
  Contract c;
  c.tile = 1;
  const OpSignature sig = testing::binary_sig();
  const auto plan = shape_plan(sig, c, false);
  expect_sane(sig, plan);
  for (const ShapeCase& sc : plan) {
    EXPECT_GE(sc.sizes.at("N"), 1);
  }
}

TEST(ShapePlan, CasesAreDistinct) {
  const auto plan = shape_plan(testing::softmax_sig(), Contract{}, true);
  for (std::size_t a = 0; a < plan.size(); ++a) {
    for (std::size_t b = a + 1; b < plan.size(); ++b) {
      EXPECT_NE(plan[a].sizes, plan[b].sizes) << plan[a].label << " vs " << plan[b].label;
    }
  }
}

}  // namespace
}  // namespace kcv
