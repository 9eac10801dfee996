// File: include/kcv/generate.hpp
// Input generators and plans. Generators are strategies (Hypothesis): they say what is valid;
// every value comes from CounterRng(probe.seed, input) at the element's logical index, so a
// probe's inputs are identical on every machine and survive shrinking of other inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kcv/op.hpp"
#include "kcv/probe.hpp"
#include "kcv/tensor.hpp"

namespace kcv {

/// The probe's inputs with their layouts, values and injections.
std::vector<HostTensor> make_inputs(const Probe& probe, const OpSignature& sig);

/// The value of a special for a dtype (kSubnormal: the smallest subnormal times a few; kHuge:
/// near the largest finite value).
double special_value(Special s, DType t);

struct ShapeCase {
  std::string label;                     // "reference", "ones", "small", "prime", "tile-1", ...
  std::map<std::string, int64_t> sizes;
};

/// Shape plan: reference shape, all ones, small sizes (2, 3, 7), primes, tile-1/tile+1,
/// 2*tile-1, and (when `include_large`) a large size (>= 2^20 elements or K >= 8192 for a
/// reduction). Sizes named in contract.fixed_dims keep their reference value.
std::vector<ShapeCase> shape_plan(const OpSignature& sig, const Contract& contract, bool include_large);

/// Layout plan for inputs of rank >= 1: transposed (rank >= 2), sliced with step 2, broadcast
/// (rank >= 2), storage offset, padded rows.
std::vector<Layout> layout_plan(const Shape& shape);

/// A view with `layout` over freshly laid out storage, values from `values` (row-major).
HostTensor make_with_layout(DType dtype, const Shape& shape, const Layout& layout,
                            const std::vector<double>& values);
/// make_with_layout(values.dtype(), values.shape(), layout, values.to_f64()) without the fp64
/// values: `values`' elements read and written back (a NaN gets its quiet bit), bits otherwise.
HostTensor make_with_layout(const HostTensor& values, const Layout& layout);

}  // namespace kcv
