// File: src/kernelbench/transforms.cpp
// A module probe's inputs from the reference's draw of get_inputs(): each floating tensor's
// values transformed by its InputSpec's distribution (kcv/probe.hpp: the transforms keep signs
// and shapes), laid out by its layout (the values of a broadcast view are its first row's),
// then the probe's special values injected. Integer and bool tensors keep the drawn values.
//
// A probe's inputs are made once per probe on the orchestrator's CPU, and a corpus problem's
// are tens of millions of elements: large tensors are read, transformed and written on threads
// by contiguous index ranges (gates/parallel.hpp). Each element's value depends on its own
// index only (counter-based draws, element-wise conversions), so any split gives the same bits.
#include "kernelbench/transforms.hpp"

#include <span>

#include "gates/parallel.hpp"
#include "gen/distributions.hpp"
#include "kcv/generate.hpp"

namespace kcv::kb {
namespace {

// body(begin, end) over [0, n) in chunks, on threads when n is large.
template <class Body>
void for_ranges(std::size_t n, Body&& body) {
  gates::for_each_chunk(n, gates::chunk_count(n, {}),
                        [&](std::size_t, std::size_t begin, std::size_t end) { body(begin, end); });
}

// The fp64 values of input j under `dist`: the draw transformed, or drawn afresh.
std::vector<double> values_of(const HostTensor& drawn, Distribution dist, const CounterRng& rng) {
  std::vector<double> values(static_cast<std::size_t>(drawn.numel()));
  if (!is_transform(dist)) {
    for_ranges(values.size(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i)
        values[i] = gen::draw_value(dist, drawn.dtype(), rng, i);
    });
    return values;
  }
  if (drawn.is_contiguous()) {
    for_ranges(values.size(), [&](std::size_t begin, std::size_t end) {
      drawn.to_f64(static_cast<int64_t>(begin),
                   std::span<double>(values.data() + begin, end - begin));
    });
  } else {
    drawn.to_f64(values);
  }
  if (dist == Distribution::kShiftedMean) {  // its shift is the RMS of all elements: serial
    gen::transform_values(dist, drawn.dtype(), rng, values);
  } else {
    for_ranges(values.size(), [&](std::size_t begin, std::size_t end) {
      gen::transform_values_at(dist, drawn.dtype(), rng,
                               std::span<double>(values.data() + begin, end - begin), begin);
    });
  }
  return values;
}

// make_with_layout(drawn, layout), written on threads unless two elements share a position.
HostTensor laid_out(const HostTensor& drawn, const Layout& layout) {
  HostTensor t = make_with_layout(drawn.dtype(), drawn.shape(), layout, {});
  if (!t.elements_distinct() || !drawn.is_contiguous()) {  // a broadcast keeps its first elements
    t.assign_values_of(drawn);
    return t;
  }
  for_ranges(static_cast<std::size_t>(t.numel()), [&](std::size_t begin, std::size_t end) {
    t.assign_values_of(drawn, static_cast<int64_t>(begin), static_cast<int64_t>(end - begin));
  });
  return t;
}

// make_with_layout(dtype, shape, layout, values), a dense result written on threads.
HostTensor laid_out(DType dtype, const Shape& shape, const Layout& layout,
                    const std::vector<double>& values) {
  HostTensor t = make_with_layout(dtype, shape, layout, {});
  if (!t.is_contiguous()) {
    t.assign_f64(values);
    return t;
  }
  for_ranges(values.size(), [&](std::size_t begin, std::size_t end) {
    t.assign_f64(static_cast<int64_t>(begin),
                 std::span<const double>(values.data() + begin, end - begin));
  });
  return t;
}

}  // namespace

std::vector<HostTensor> transform_inputs(const Probe& probe, const std::vector<HostTensor>& drawn) {
  std::vector<HostTensor> out;
  out.reserve(drawn.size());
  for (std::size_t j = 0; j < drawn.size(); ++j) {
    const HostTensor& d = drawn[j];
    const InputSpec spec =
        j < probe.inputs.size() ? probe.inputs[j] : InputSpec{d.dtype(), Distribution::kDrawn, {}};
    const bool floating = is_floating(d.dtype());
    const Layout layout = floating ? spec.layout : Layout{};
    if (!floating || spec.dist == Distribution::kDrawn) {
      // The draw as it is: its elements read and written back in the layout, with no fp64
      // values in between.
      out.push_back(laid_out(d, layout));
    } else {
      const CounterRng rng(probe.seed, j + (uint64_t{1} << 32));
      out.push_back(laid_out(d.dtype(), d.shape(), layout, values_of(d, spec.dist, rng)));
    }
    for (const Injection& inj : probe.injections) {
      if (inj.input == static_cast<int>(j) && inj.index >= 0 && inj.index < out.back().numel()) {
        out.back().set_value_at(inj.index, special_value(inj.value, d.dtype()));
      }
    }
  }
  return out;
}

}  // namespace kcv::kb
