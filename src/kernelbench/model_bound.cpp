// File: src/kernelbench/model_bound.cpp
// The error model of an opaque module (docs/08_audit.md §3): E is what PyTorch eager fp32 itself
// gets wrong on the probe's very inputs, floored at one output rounding of the RMS; tau =
// u_out |y*| + 4 E. A reordering of sums or a fused epilogue stays within 4 E; a silent downcast
// (bf16, fp16, TF32) costs 2^8 to 2^13 times E. Where E itself is comparable to the output, or
// looser than KernelBench's own allclose, no value claim is made at all.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "gates/parallel.hpp"
#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

constexpr double kClaimFraction = 1.0 / 16;  // E above RMS(y*)/16: fp32 itself is lost
constexpr double kKernelBenchTol = 1e-2;     // allclose(atol = rtol = 1e-2), KernelBench v0/v0.1

}  // namespace

namespace {

/// E of n elements, value(i) the fp64 value of element i.
template <class Value>
EagerScale scale_of(DType out_dtype, std::size_t n, Value&& value, const HostTensor& eager) {
  EagerScale s;
  if (!is_floating(out_dtype)) return s;
  // One pass over outputs of up to hundreds of millions of elements: on threads by fixed blocks
  // (gates::reduce_blocks), so the sum of squares is the same on any machine.
  struct Part {
    double worst = 0;
    double sum_sq = 0;
    int64_t finite = 0;
    int64_t informative = 0;
  };
  n = std::min(n, static_cast<std::size_t>(std::max<int64_t>(eager.numel(), 0)));
  Part total;
  gates::reduce_blocks(
      n, {}, total,
      [&](std::size_t begin, std::size_t end, Part& p) {
        for (std::size_t i = begin; i < end; ++i) {
          const double v = value(i);
          const double e = eager.value_at(static_cast<int64_t>(i));
          if (!std::isfinite(v) || !std::isfinite(e)) continue;
          p.worst = std::max(p.worst, std::fabs(e - v));
          p.sum_sq += v * v;
          ++p.finite;
          if (!(v == 0 && e == 0)) ++p.informative;
        }
      },
      [](Part& t, const Part& p) {
        t.worst = std::max(t.worst, p.worst);
        t.sum_sq += p.sum_sq;
        t.finite += p.finite;
        t.informative += p.informative;
      });
  s.informative = total.informative;
  const double rms =
      total.finite == 0 ? 0.0 : std::sqrt(total.sum_sq / static_cast<double>(total.finite));
  s.e = std::max(total.worst, unit_roundoff(out_dtype) * rms);
  return s;
}

}  // namespace

EagerScale eager_scale(DType out_dtype, const std::vector<double>& value, const HostTensor& eager) {
  return scale_of(
      out_dtype, value.size(), [&](std::size_t i) { return value[i]; }, eager);
}

EagerScale eager_scale(DType out_dtype, const HostTensor& value64, const HostTensor& eager) {
  if (value64.dtype() != DType::kF64)
    throw std::invalid_argument("eager_scale: the fp64 value must be an f64 tensor");
  return scale_of(
      out_dtype, static_cast<std::size_t>(value64.numel()),
      [&](std::size_t i) { return value64.value_at(static_cast<int64_t>(i)); }, eager);
}

int ModuleConfig::call_budget_ms() const {
  if (deadline == std::chrono::steady_clock::time_point::max()) return call_timeout_ms;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 1, call_timeout_ms));
}

std::string no_claim_reason(double e, double rms_value) {
  if (e > kClaimFraction * rms_value) {
    return fmt::format(
        "no fp64 claim: fp32 eager itself is off by E = {:.3g}, more than 1/16 of RMS(y*) = {:.3g}",
        e, rms_value);
  }
  if (kEagerMultiple * e > kKernelBenchTol * (1 + rms_value)) {
    return fmt::format(
        "no fp64 claim: the bound 4E = {:.3g} is looser than KernelBench's allclose(1e-2, 1e-2) "
        "at RMS(y*) = {:.3g}",
        kEagerMultiple * e, rms_value);
  }
  return {};
}

}  // namespace kcv::kb
