// File: src/gen/distributions.cpp
// The value distributions of the gate definitions. Every draw uses only exact operations or
// the portable transcendentals of src/numeric, so values are identical on every machine.
// Magnitudes are built as mantissa * 2^e with ldexp where a distribution is defined by
// exponents (wide range, tiny, subnormal), which keeps them exact.
#include "gen/distributions.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "numeric/portable_math.hpp"

namespace kcv::gen {
namespace {

constexpr double kCancellationScale = 1.0 / 1024.0;  // delta ~ 2^-10 * u
constexpr int kWideExponent = 20;                     // exponents in [-20, 20]
constexpr int kTinyLowExponent = -70;                 // magnitudes in [2^-70, 2^-60]
constexpr int kTinyExponentSpan = 10;
constexpr double kExpUnderflowLow = -103.0;           // fp32 exp(x) subnormal for x in here
constexpr double kExpUnderflowHigh = -88.0;
constexpr double kHeavyTailSigma = 2.0;               // lognormal(0, 2)
constexpr uint64_t kSmallIndexCount = 8;

double random_sign(const CounterRng& rng, uint64_t index, uint32_t draw) {
  return (rng.bits(index, draw) & 1) != 0 ? -1.0 : 1.0;
}

// Uniform integer in [lo, lo + span] from a separate draw.
int uniform_int(const CounterRng& rng, uint64_t index, uint32_t draw, int lo, int span) {
  return lo + static_cast<int>(rng.bits(index, draw) % static_cast<uint64_t>(span + 1));
}

// Largest and smallest binary exponents of the dtype's normal range (f64 for integers).
int max_exponent(DType dtype) { return std::ilogb(max_finite(is_floating(dtype) ? dtype : DType::kF64)); }
int min_exponent(DType dtype) { return std::ilogb(min_normal(is_floating(dtype) ? dtype : DType::kF64)); }

// Random sign, exponent in [-E, E] with E = 20 or less where the dtype's range is narrower
// (fp16: 14), mantissa uniform in [1, 2): finite and normal in the dtype.
double wide_range(DType dtype, const CounterRng& rng, uint64_t index) {
  const int span = std::min({kWideExponent, max_exponent(dtype) - 1, -min_exponent(dtype)});
  const int e = uniform_int(rng, index, 1, -span, 2 * span);
  return random_sign(rng, index, 2) * std::ldexp(1.0 + rng.uniform(index, 0), e);
}

// Random sign, magnitude in [2^-70, 2^-60); for fp16, whose normal range ends at 2^-14, the
// window starts at the smallest normal instead so that values do not all round to zero.
double tiny(DType dtype, const CounterRng& rng, uint64_t index) {
  const int low = std::max(kTinyLowExponent, min_exponent(dtype));
  const int e = uniform_int(rng, index, 1, low, kTinyExponentSpan - 1);
  return random_sign(rng, index, 2) * std::ldexp(1.0 + rng.uniform(index, 0), e);
}

double heavy_tail(DType dtype, const CounterRng& rng, uint64_t index) {
  const double magnitude = numeric::portable_exp(kHeavyTailSigma * rng.normal(index, 0));
  // Keep finite in the dtype: a heavy tail is about spread, not about overflow.
  const double cap = is_floating(dtype) ? std::ldexp(max_finite(dtype), -4) : magnitude;
  return random_sign(rng, index, 1) * std::fmin(magnitude, cap);
}

double cancellation(const CounterRng& rng, uint64_t index) {
  const uint64_t pair = index - index % 2;
  const double x = rng.normal(pair, 0);
  if (index % 2 == 0) {
    return x;
  }
  const double delta = kCancellationScale * rng.uniform(pair, 1);
  return -x * (1.0 + delta);
}

double subnormal(DType dtype, const CounterRng& rng, uint64_t index) {
  if (!is_floating(dtype)) {
    return 0.0;
  }
  const int mant_bits = significand_bits(dtype) - 1;
  const uint64_t max_mant = (uint64_t{1} << mant_bits) - 1;
  const uint64_t mant = 1 + rng.bits(index, 0) % max_mant;  // 1 .. 2^m - 1: never zero
  return random_sign(rng, index, 1) * static_cast<double>(mant) * min_subnormal(dtype);
}

// A value whose lowest significand bit in `dtype` is set: exact in dtype, inexact in any format
// with fewer significand bits.
double low_bits(DType dtype, const CounterRng& rng, uint64_t index) {
  if (!is_floating(dtype)) {
    return static_cast<double>(rng.bits(index, 0) % 1024) * 2 + 1;
  }
  const int p = significand_bits(dtype);
  const uint64_t top = uint64_t{1} << (p - 1);
  const uint64_t sig = top | (rng.bits(index, 0) & (top - 1)) | 1;
  const int e = uniform_int(rng, index, 1, -2, 3);  // values in [2^-2, 2^2)
  return random_sign(rng, index, 2) * std::ldexp(static_cast<double>(sig), e - (p - 1));
}

constexpr double kShiftRms = 1024.0;     // kShiftedMean: mean 1024 RMS, spread RMS
constexpr double kParetoExponent = -2.0 / 3.0;  // (1 - U)^(-1/alpha), alpha = 1.5
constexpr int kLargeExponent = 7;        // x * 128

double rms(const std::vector<double>& values) {
  double sum = 0;
  int64_t n = 0;
  for (double x : values) {
    if (!std::isfinite(x)) continue;
    sum += x * x;
    ++n;
  }
  return n == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(n));
}

}  // namespace

double transform_scale(Distribution dist, DType dtype) {
  const DType t = is_floating(dtype) ? dtype : DType::kF64;
  switch (dist) {
    case Distribution::kLargeScaled: return std::ldexp(1.0, kLargeExponent);
    case Distribution::kHugeScaled:
      return std::ldexp(1.0, std::max(max_exponent(t) - 27, max_exponent(t) / 2 + 4));
    case Distribution::kSubnormalScaled: return std::ldexp(1.0, min_exponent(t) - 4);
    case Distribution::kTinyScaled: return std::ldexp(1.0, (min_exponent(t) - 6) / 2);
    default: return 1.0;
  }
}

void transform_values(Distribution dist, DType dtype, const CounterRng& rng, std::vector<double>& values,
                      double base_rms) {
  if (dist == Distribution::kShiftedMean) {
    const double base = base_rms > 0 ? base_rms : rms(values);
    const double shift = kShiftRms * (base > 0 ? base : 1.0);
    for (double& x : values) x += shift;
    return;
  }
  transform_values_at(dist, dtype, rng, values, 0);
}

void transform_values_at(Distribution dist, DType dtype, const CounterRng& rng,
                         std::span<double> values, uint64_t first) {
  switch (dist) {
    case Distribution::kShiftedMean:
      throw std::invalid_argument("transform_values_at: shifted_mean depends on every element");
    case Distribution::kParetoScaled:
      for (std::size_t i = 0; i < values.size(); ++i) {
        const double u = rng.uniform(first + i, 0);  // in [0, 1): 1 - u in (0, 1]
        values[i] *= numeric::portable_exp(kParetoExponent * numeric::portable_log(1.0 - u));
      }
      return;
    case Distribution::kWideScaled: {
      // As wide_range: +-20 binades, fewer where the dtype's range is narrower (fp16: +-11).
      const DType t = is_floating(dtype) ? dtype : DType::kF64;
      const int span = std::min({kWideExponent, max_exponent(t) - 4, -min_exponent(t)});
      for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = std::ldexp(values[i], uniform_int(rng, first + i, 1, -span, 2 * span));
      }
      return;
    }
    case Distribution::kLargeScaled:
    case Distribution::kHugeScaled:
    case Distribution::kSubnormalScaled:
    case Distribution::kTinyScaled: {
      const double f = transform_scale(dist, dtype);
      for (double& x : values) x *= f;  // a power of two: exact until the range ends
      return;
    }
    default: return;  // kDrawn and the non-transforms: the base as it is
  }
}

double draw_value(Distribution dist, DType dtype, const CounterRng& rng, uint64_t index) {
  switch (dist) {
    case Distribution::kNormal: return rng.normal(index, 0);
    case Distribution::kUniform01: return rng.uniform(index, 0);
    case Distribution::kHeavyTail: return heavy_tail(dtype, rng, index);
    case Distribution::kCancellation: return cancellation(rng, index);
    case Distribution::kWideRange: return wide_range(dtype, rng, index);
    case Distribution::kNearOverflow: {
      const double top = is_floating(dtype) ? max_finite(dtype) : 1e300;
      return random_sign(rng, index, 1) * (0.25 + 0.25 * rng.uniform(index, 0)) * top;
    }
    case Distribution::kSubnormal: return subnormal(dtype, rng, index);
    case Distribution::kLowBits: return low_bits(dtype, rng, index);
    case Distribution::kPositive: return 0.5 + 1.5 * rng.uniform(index, 0);
    case Distribution::kSmallIndex: return static_cast<double>(rng.bits(index, 0) % kSmallIndexCount);
    case Distribution::kExpUnderflow:
      return kExpUnderflowLow + (kExpUnderflowHigh - kExpUnderflowLow) * rng.uniform(index, 0);
    case Distribution::kTiny: return tiny(dtype, rng, index);
    default: return rng.normal(index, 0);  // a transform's base draw for an op (transform_values)
  }
  return 0.0;
}

double apply_domain(ValueDomain domain, double x) {
  if (!std::isfinite(x)) {
    return x;
  }
  switch (domain) {
    case ValueDomain::kAny: return x;
    case ValueDomain::kPositive: return std::fabs(x);
    case ValueDomain::kNonZero:
      return std::fabs(x) >= 0.5 ? x : std::copysign(0.5 + std::fabs(x), x);
  }
  return x;
}

}  // namespace kcv::gen
