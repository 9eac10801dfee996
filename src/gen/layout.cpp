// File: src/gen/layout.cpp
// Physical layouts for one logical tensor: the strides and storage offset of each LayoutKind,
// and filling such a view from row-major values. Storage shared by several logical elements
// (broadcast, stride 0) keeps the value of the first logical element that maps to it, so every
// row of a broadcast view equals row 0 and reads back consistently by logical index.
// The values are rounded to the dtype in bulk (HostTensor::assign_f64 / assign_values_of).
// Layout::offset applies to every kind (padded rows behind an odd offset is a useful mix);
// kOffset is the contiguous layout that exists to carry it.
#include <vector>

#include "kcv/generate.hpp"

namespace kcv {
namespace {

constexpr int64_t kPlanOffset = 3;   // odd, so vector loads from the view are misaligned
constexpr int64_t kPlanPad = 3;      // odd, so consecutive rows start misaligned
constexpr int64_t kPlanStep = 2;

// Row-major strides over `extents`, then `shape`'s view of it is taken by the caller.
std::vector<int64_t> strides_over(const Shape& extents) { return contiguous_strides(extents); }

std::vector<int64_t> transposed_strides(const Shape& shape) {
  const std::size_t n = shape.size();
  if (n < 2) {
    return contiguous_strides(shape);
  }
  Shape stored = shape;  // storage holds [..., B, A] for a view [..., A, B]
  std::swap(stored[n - 1], stored[n - 2]);
  std::vector<int64_t> strides = strides_over(stored);
  std::swap(strides[n - 1], strides[n - 2]);
  return strides;
}

std::vector<int64_t> sliced_strides(const Shape& shape, int64_t step) {
  if (shape.empty()) {
    return {};
  }
  Shape larger = shape;
  larger.back() *= step;
  std::vector<int64_t> strides = strides_over(larger);
  strides.back() = step;
  return strides;
}

std::vector<int64_t> broadcast_strides(const Shape& shape) {
  if (shape.empty()) {
    return {};
  }
  std::vector<int64_t> strides = contiguous_strides(shape);
  strides[0] = 0;
  return strides;
}

std::vector<int64_t> padded_strides(const Shape& shape, int64_t pad) {
  const std::size_t n = shape.size();
  if (n < 2) {
    return contiguous_strides(shape);
  }
  Shape padded = shape;
  padded[n - 1] += pad;
  std::vector<int64_t> strides = strides_over(padded);
  return strides;
}

std::vector<int64_t> layout_strides(const Shape& shape, const Layout& layout) {
  switch (layout.kind) {
    case LayoutKind::kContiguous: return contiguous_strides(shape);
    case LayoutKind::kTransposed: return transposed_strides(shape);
    case LayoutKind::kSliced: return sliced_strides(shape, layout.step < 1 ? 1 : layout.step);
    case LayoutKind::kBroadcast: return broadcast_strides(shape);
    case LayoutKind::kOffset: return contiguous_strides(shape);
    case LayoutKind::kPaddedRows: return padded_strides(shape, layout.pad < 0 ? 0 : layout.pad);
  }
  return contiguous_strides(shape);
}

}  // namespace

std::vector<Layout> layout_plan(const Shape& shape) {
  std::vector<Layout> plan;
  if (shape.empty()) {
    return plan;
  }
  const bool matrix = shape.size() >= 2;
  if (matrix) {
    plan.push_back(Layout{LayoutKind::kTransposed, kPlanStep, 0, 0});
  }
  plan.push_back(Layout{LayoutKind::kSliced, kPlanStep, 0, 0});
  if (matrix) {
    plan.push_back(Layout{LayoutKind::kBroadcast, kPlanStep, 0, 0});
  }
  plan.push_back(Layout{LayoutKind::kOffset, kPlanStep, kPlanOffset, 0});
  if (matrix) {
    plan.push_back(Layout{LayoutKind::kPaddedRows, kPlanStep, 0, kPlanPad});
  }
  return plan;
}

HostTensor make_with_layout(DType dtype, const Shape& shape, const Layout& layout,
                            const std::vector<double>& values) {
  const int64_t offset = layout.offset > 0 ? layout.offset : 0;  // honoured for every kind
  HostTensor t(dtype, shape, layout_strides(shape, layout), offset);
  t.assign_f64(values);  // a position shared by a broadcast keeps its first element's value
  return t;
}

HostTensor make_with_layout(const HostTensor& values, const Layout& layout) {
  const int64_t offset = layout.offset > 0 ? layout.offset : 0;
  HostTensor t(values.dtype(), values.shape(), layout_strides(values.shape(), layout), offset);
  t.assign_values_of(values);
  return t;
}

}  // namespace kcv
