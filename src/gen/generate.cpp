// File: src/gen/generate.cpp
// make_inputs: for input j, element i (logical row-major) takes its value from
// CounterRng(probe.seed, j) at index i, so a value never depends on the tensor's size, layout
// or the other inputs. Order: draw -> value domain -> layout (rounds to the dtype) ->
// injections. Injections beyond the tensor's size are skipped: a shrunk shape keeps the
// injections that still fit.
#include <cmath>
#include <limits>

#include "gen/distributions.hpp"
#include "gen/sizes.hpp"
#include "kcv/generate.hpp"

namespace kcv {
namespace {

constexpr double kSubnormalMultiple = 3.0;  // "the smallest subnormal times a few"
constexpr double kHugeFraction = 0.75;      // two of them overflow when added

std::vector<double> draw_values(const Probe& probe, const InputSpec& spec, ValueDomain domain,
                                uint64_t stream, int64_t n) {
  const CounterRng rng(probe.seed, stream);
  std::vector<double> values(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double x = gen::draw_value(spec.dist, spec.dtype, rng, static_cast<uint64_t>(i));
    values[static_cast<std::size_t>(i)] = gen::apply_domain(domain, x);
  }
  if (is_transform(spec.dist)) {
    // The transform's own factors come from a second stream, so the base stays N(0, 1).
    gen::transform_values(spec.dist, spec.dtype, CounterRng(probe.seed, stream + (uint64_t{1} << 32)), values,
                          /*base_rms=*/1.0);
  }
  return values;
}

void inject(const Probe& probe, int input, HostTensor& t) {
  for (const Injection& inj : probe.injections) {
    if (inj.input == input && inj.index >= 0 && inj.index < t.numel()) {
      t.set_value_at(inj.index, special_value(inj.value, t.dtype()));
    }
  }
}

}  // namespace

std::vector<HostTensor> make_inputs(const Probe& probe, const OpSignature& sig) {
  std::vector<HostTensor> inputs;
  inputs.reserve(sig.inputs.size());
  for (std::size_t j = 0; j < sig.inputs.size(); ++j) {
    const InputSpec spec = j < probe.inputs.size() ? probe.inputs[j] : InputSpec{};
    const Shape shape = gen::shape_from_sizes(sig, sig.inputs[j], probe.sizes);
    const std::vector<double> values = draw_values(probe, spec, sig.inputs[j].domain, j, numel(shape));
    inputs.push_back(make_with_layout(spec.dtype, shape, spec.layout, values));
    inject(probe, static_cast<int>(j), inputs.back());
  }
  return inputs;
}

double special_value(Special s, DType t) {
  switch (s) {
    case Special::kNaN: return std::numeric_limits<double>::quiet_NaN();
    case Special::kPosInf: return std::numeric_limits<double>::infinity();
    case Special::kNegInf: return -std::numeric_limits<double>::infinity();
    case Special::kPosZero: return 0.0;
    case Special::kNegZero: return -0.0;
    case Special::kSubnormal: return is_floating(t) ? kSubnormalMultiple * min_subnormal(t) : 0.0;
    case Special::kHuge: return round_to(t, kHugeFraction * max_finite(t));
  }
  return 0.0;
}

}  // namespace kcv
