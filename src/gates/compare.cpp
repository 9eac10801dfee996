// File: src/gates/compare.cpp
// Element ratios and their distribution. Quantiles are nearest-rank (nth_element), so
// a ratio of inf is simply the largest value; ties for the worst element keep the first index,
// which makes evidence deterministic.
#include "gates/compare.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace kcv::gates {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Index (0-based) of the nearest-rank q-quantile among n values.
std::size_t nearest_rank_index(std::size_t n, double q) {
  auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  return std::clamp<std::size_t>(k, 1, n) - 1;
}

}  // namespace

double element_ratio(DType out_dtype, double candidate, double oracle, double tau) {
  if (!std::isfinite(oracle) || std::isnan(tau)) return kNaN;
  if (!std::isfinite(candidate)) return kInf;
  const double err = std::fabs(candidate - oracle);
  if (tau == 0) return err == 0 ? 0.0 : kInf;
  return err / effective_tau(out_dtype, oracle, tau);
}

double effective_tau(DType out_dtype, double oracle, double tau) {
  if (!(tau > 0) || !std::isfinite(oracle) || !is_floating(out_dtype)) return tau;
  return std::max(tau, 0.5 * ulp_of(out_dtype, oracle));
}

std::vector<double> ratio_quantiles(std::vector<double> ratios) {
  if (ratios.empty()) return {};
  // nth_element leaves every value at or above rank k from k on, so each higher rank is searched
  // only there: about n + n/2 + n/10 steps instead of 3n (the judges run this on every call of
  // every probe, over outputs of millions of elements).
  std::vector<double> q;
  auto from = ratios.begin();
  for (double p : {0.5, 0.9, 0.99}) {
    const auto at =
        ratios.begin() + static_cast<std::ptrdiff_t>(nearest_rank_index(ratios.size(), p));
    std::nth_element(from, at, ratios.end());
    q.push_back(*at);
    from = at;
  }
  q.push_back(*std::max_element(from, ratios.end()));
  return q;
}

namespace {

/// The tensor's values in logical order: a dense fp64 output as one block, a normal fp32 value
/// through the hardware conversion, anything else (subnormals, which DAZ would read as 0; NaN
/// payloads; other dtypes) through value_at.
std::vector<double> values_of(const HostTensor& t) {
  const auto n = static_cast<std::size_t>(t.numel());
  std::vector<double> values(n);
  const bool dense = t.is_contiguous();
  if (dense && t.dtype() == DType::kF64) {
    std::memcpy(values.data(), t.data(), n * sizeof(double));
  } else if (dense && t.dtype() == DType::kF32) {
    const std::byte* p = t.data();
    for (std::size_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, p + i * sizeof bits, sizeof bits);
      const uint32_t exponent = (bits >> 23) & 0xFFu;
      values[i] = exponent != 0 && exponent != 0xFFu
                      ? static_cast<double>(std::bit_cast<float>(bits))
                      : t.value_at(static_cast<int64_t>(i));
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) values[i] = t.value_at(static_cast<int64_t>(i));
  }
  return values;
}

void compare_into(const OracleOutput& o, const HostTensor& got, int output, Comparison& c,
                  std::vector<double>& ratios) {
  const auto n = static_cast<int64_t>(o.value.size());
  const std::vector<double> values = values_of(got);
  for (int64_t i = 0; i < n; ++i) {
    const double y = o.value[i];
    const double x = values[static_cast<std::size_t>(i)];
    const double r = element_ratio(o.dtype, x, y, o.tau[i]);
    if (std::isnan(r)) continue;
    ++c.judged;
    ratios.push_back(r);
    if (r > 1) ++c.violations;
    if (!std::isfinite(x)) ++c.nonfinite;
    if (c.worst_index < 0 || r > c.worst_ratio) {
      c.worst_output = output;
      c.worst_index = i;
      c.worst_ratio = r;
      c.candidate = x;
      c.oracle = y;
      c.tau = o.tau[i];
    }
  }
}

}  // namespace

Comparison compare_output(const OracleOutput& oracle, const HostTensor& candidate, int output) {
  Comparison c;
  std::vector<double> ratios;
  ratios.reserve(oracle.value.size());
  compare_into(oracle, candidate, output, c, ratios);
  c.quantiles = ratio_quantiles(std::move(ratios));
  return c;
}

Comparison compare_call(const OracleResult& oracle, const CallRecord& call) {
  Comparison c;
  std::vector<double> ratios;
  std::size_t total = 0;
  for (const OracleOutput& o : oracle.outputs) total += o.value.size();
  ratios.reserve(total);
  for (std::size_t o = 0; o < oracle.outputs.size(); ++o) {
    compare_into(oracle.outputs[o], call.outputs[o], static_cast<int>(o), c, ratios);
  }
  c.quantiles = ratio_quantiles(std::move(ratios));
  return c;
}

bool outputs_match(const OracleResult& oracle, const CallRecord& call) {
  if (call.outputs.size() != oracle.outputs.size()) return false;
  for (std::size_t o = 0; o < oracle.outputs.size(); ++o) {
    const auto& want = oracle.outputs[o];
    if (call.outputs[o].numel() != static_cast<int64_t>(want.value.size())) return false;
    if (call.outputs[o].dtype() != want.dtype) return false;
  }
  return true;
}

}  // namespace kcv::gates
