// File: tests/unit/gen/layout_test.cpp
// Layouts: each kind gives its documented strides and offset, and a tensor built from row-major
// values reads them back (rounded to the dtype) by logical index.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "kcv/generate.hpp"

namespace kcv {
namespace {

std::vector<double> ramp(int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<std::size_t>(i)] = 0.1 * static_cast<double>(i) - 1.0;
  }
  return v;
}

struct LayoutCase {
  Layout layout;
  std::vector<int64_t> strides;
  int64_t offset;
};

TEST(Layouts, GiveDocumentedStridesAndReadBackByLogicalIndex) {
  const Shape shape = {3, 5};
  const LayoutCase cases[] = {
      {Layout{LayoutKind::kContiguous, 2, 0, 0}, {5, 1}, 0},
      {Layout{LayoutKind::kTransposed, 2, 0, 0}, {1, 3}, 0},
      {Layout{LayoutKind::kSliced, 3, 0, 0}, {15, 3}, 0},
      {Layout{LayoutKind::kOffset, 2, 7, 0}, {5, 1}, 7},
      {Layout{LayoutKind::kPaddedRows, 2, 0, 4}, {9, 1}, 0},
  };
  const std::vector<double> values = ramp(15);
  for (const LayoutCase& c : cases) {
    const HostTensor t = make_with_layout(DType::kBF16, shape, c.layout, values);
    EXPECT_EQ(t.strides(), c.strides) << layout_name(c.layout.kind);
    EXPECT_EQ(t.storage_offset(), c.offset) << layout_name(c.layout.kind);
    for (int64_t i = 0; i < 15; ++i) {
      ASSERT_EQ(t.value_at(i), round_to(DType::kBF16, values[static_cast<std::size_t>(i)]))
          << layout_name(c.layout.kind) << " " << i;
    }
  }
}

TEST(Layouts, BroadcastHasStrideZeroAndRowZeroValues) {
  const std::vector<double> values = ramp(12);
  const HostTensor t = make_with_layout(DType::kF32, {4, 3}, Layout{LayoutKind::kBroadcast, 2, 0, 0}, values);
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(t.storage_elems(), 3);
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(t.value_at(i), round_to(DType::kF32, values[static_cast<std::size_t>(i % 3)]));
  }
}

TEST(Layouts, HigherRankTransposeSwapsOnlyTheLastTwoDims) {
  const HostTensor t = make_with_layout(DType::kF32, {2, 3, 4}, Layout{LayoutKind::kTransposed, 2, 0, 0}, ramp(24));
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{12, 1, 3}));
  const HostTensor p = make_with_layout(DType::kF32, {2, 3, 4}, Layout{LayoutKind::kPaddedRows, 2, 0, 1}, ramp(24));
  EXPECT_EQ(p.strides(), (std::vector<int64_t>{15, 5, 1}));
}

TEST(Layouts, SlicedAndPaddedLeaveUncoveredStorage) {
  const HostTensor s = make_with_layout(DType::kF32, {2, 4}, Layout{LayoutKind::kSliced, 2, 0, 0}, ramp(8));
  const auto covered = s.covered_storage();
  EXPECT_EQ(std::count(covered.begin(), covered.end(), true), 8);
  EXPECT_GT(static_cast<int64_t>(covered.size()), 8);
}

TEST(Layouts, OffsetCombinesWithOtherKinds) {
  const std::vector<double> values = ramp(6);
  const HostTensor t = make_with_layout(DType::kF32, {2, 3}, Layout{LayoutKind::kPaddedRows, 2, 5, 3}, values);
  EXPECT_EQ(t.storage_offset(), 5);
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(t.storage_index(3), 11);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(t.value_at(i), round_to(DType::kF32, values[static_cast<std::size_t>(i)]));
  }
}

TEST(LayoutPlan, OffersEveryNonContiguousKindForMatrices) {
  const auto plan = layout_plan({4, 8});
  std::vector<LayoutKind> kinds;
  for (const Layout& l : plan) {
    kinds.push_back(l.kind);
    EXPECT_NE(l.kind, LayoutKind::kContiguous);
  }
  EXPECT_EQ(kinds, (std::vector<LayoutKind>{LayoutKind::kTransposed, LayoutKind::kSliced, LayoutKind::kBroadcast,
                                            LayoutKind::kOffset, LayoutKind::kPaddedRows}));
  for (const Layout& l : plan) {
    const HostTensor t = make_with_layout(DType::kF32, {4, 8}, l, ramp(32));
    EXPECT_FALSE(t.is_contiguous() && t.storage_offset() == 0) << layout_name(l.kind);
  }
}

TEST(LayoutPlan, VectorsGetOnlyRankOneLayouts) {
  const auto plan = layout_plan({16});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].kind, LayoutKind::kSliced);
  EXPECT_EQ(plan[1].kind, LayoutKind::kOffset);
  EXPECT_TRUE(layout_plan({}).empty());
}

// make_with_layout(tensor, layout) is make_with_layout of the tensor's fp64 values, every raw
// byte: layouts of every kind (a broadcast keeps row 0), every dtype, NaNs with payloads (a
// signaling one reads back quiet), subnormals, -0 and int64 beyond 2^53.
TEST(Layouts, FromATensorIsFromItsValues) {
  const Shape shape = {4, 6};
  std::vector<Layout> layouts = layout_plan(shape);
  layouts.push_back(Layout{});
  layouts.push_back(Layout{LayoutKind::kPaddedRows, 2, 5, 3});
  const uint64_t f32_bits[] = {0x7F800001u, 0xFFC0DEADu, 0x00000001u,
                               0x80000000u, 0x7F7FFFFFu, 0x3F800000u};
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64,
                  DType::kBool}) {
    HostTensor src(t, shape);
    for (int64_t i = 0; i < src.numel(); ++i) {
      uint64_t bits = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
      if (t == DType::kF32) bits = f32_bits[i % 6] ^ static_cast<uint64_t>(i % 3);
      src.set_bits_at(i, bits);
    }
    for (const Layout& l : layouts) {
      const HostTensor fast = make_with_layout(src, l);
      const HostTensor slow = make_with_layout(t, shape, l, src.to_f64());
      ASSERT_EQ(fast.strides(), slow.strides());
      ASSERT_EQ(fast.storage_offset(), slow.storage_offset());
      ASSERT_EQ(fast.raw().size(), slow.raw().size());
      ASSERT_EQ(std::memcmp(fast.raw().data(), slow.raw().data(), fast.raw().size()), 0)
          << dtype_name(t) << " " << layout_name(l.kind);
    }
  }
}

}  // namespace
}  // namespace kcv
