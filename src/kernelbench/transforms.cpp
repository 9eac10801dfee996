// File: src/kernelbench/transforms.cpp
// A module probe's inputs from the reference's draw of get_inputs(): each floating tensor's
// values transformed by its InputSpec's distribution (kcv/probe.hpp: the transforms keep signs
// and shapes), laid out by its layout (the values of a broadcast view are its first row's),
// then the probe's special values injected. Integer and bool tensors keep the drawn values.
#include "kernelbench/transforms.hpp"

#include "gen/distributions.hpp"
#include "kcv/generate.hpp"

namespace kcv::kb {

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
      out.push_back(make_with_layout(d, layout));
    } else {
      std::vector<double> values;
      const CounterRng rng(probe.seed, j + (uint64_t{1} << 32));
      if (is_transform(spec.dist)) {
        values = d.to_f64();
        gen::transform_values(spec.dist, d.dtype(), rng, values);
      } else {
        values.resize(static_cast<std::size_t>(d.numel()));
        for (std::size_t i = 0; i < values.size(); ++i)
          values[i] = gen::draw_value(spec.dist, d.dtype(), rng, i);
      }
      out.push_back(make_with_layout(d.dtype(), d.shape(), layout, values));
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
