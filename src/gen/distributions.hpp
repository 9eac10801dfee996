// File: src/gen/distributions.hpp
// One value of a Distribution for one element, from a CounterRng at the element's logical
// index. Values are fp64 before rounding to the input dtype; the dtype is needed for the
// distributions defined relative to the format (near-overflow, subnormal, low bits).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kcv/op.hpp"
#include "kcv/probe.hpp"
#include "kcv/rng.hpp"

namespace kcv::gen {

/// Draws 0 and 1 of (index) are used; kCancellation pairs elements 2p and 2p+1 and draws both
/// from index 2p.
double draw_value(Distribution dist, DType dtype, const CounterRng& rng, uint64_t index);

/// Applies a transform distribution (is_transform(dist)) to base values in place: the
/// KernelBench module's own draw, or N(0, 1) for an op. kShiftedMean shifts by 1024 times
/// `base_rms` (0: the RMS of `values` themselves; an op passes 1, its base's RMS, so that an element
/// still depends on its own index only); factors come from `rng` at the element's index.
void transform_values(Distribution dist, DType dtype, const CounterRng& rng, std::vector<double>& values,
                      double base_rms = 0);
/// transform_values on elements [first, first + values.size()) of a larger array, for every
/// transform but kShiftedMean (whose shift depends on all elements): each element's factor
/// depends on its own index only, so ranges give what the whole array gives, on any split.
void transform_values_at(Distribution dist, DType dtype, const CounterRng& rng,
                         std::span<double> values, uint64_t first);

/// The power of two a scaling transform multiplies by in `dtype` (kLargeScaled, kHugeScaled,
/// kSubnormalScaled, kTinyScaled); 1 for the others.
double transform_scale(Distribution dist, DType dtype);

/// Maps a drawn value into the signature's value domain (kPositive: |x|; kNonZero: |x| >= 0.5,
/// sign kept). NaN and infinities pass through unchanged.
double apply_domain(ValueDomain domain, double x);

}  // namespace kcv::gen
