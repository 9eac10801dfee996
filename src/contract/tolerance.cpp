// File: src/contract/tolerance.cpp
// The derived bounds of research note §2.4 and §6.7, in one place so every gate and the oracle
// use the same arithmetic. Two absolute floors keep the relative model honest near zero: the
// final rounding of a result in the subnormal range errs by up to half the subnormal spacing
// (not u_out·|y|), and under FTZ a result near the smallest normal may be flushed to zero.
#include "kcv/tolerance.hpp"

#include <cmath>
#include <limits>

namespace kcv {

namespace {

bool flushes(const PrecisionModel& m) { return m.profile != nullptr && m.profile->flush_subnormals; }

double half_subnormal(DType t) { return is_floating(t) ? 0.5 * min_subnormal(t) : 0.0; }

}  // namespace

DType compute_dtype(const Contract& c) {
  const DType first = c.input_dtypes.empty() ? DType::kF32 : c.input_dtypes.front();
  return first == DType::kF64 ? DType::kF64 : DType::kF32;
}

PrecisionModel precision_model(const Contract& c, DType output_dtype) {
  PrecisionModel m;
  m.out_dtype = output_dtype;
  m.acc_dtype = is_floating(c.accumulator) ? c.accumulator : DType::kF32;
  m.compute_dtype = compute_dtype(c);
  m.u_out = is_floating(output_dtype) ? unit_roundoff(output_dtype) : 0.0;
  m.u_acc = unit_roundoff(m.acc_dtype);
  m.u_c = unit_roundoff(m.compute_dtype);
  m.c = 4.0;  // research §6.6: worst measured err/(u*sqrt(N)*S) is 2.87; c = 4 keeps 1.4x margin
  m.deterministic_bound = c.profile == ProfileId::kStrict;
  m.profile = &profile(c.profile);
  return m;
}

double gamma_n(double n, double u) {
  if (n <= 0) return 0.0;
  const double nu = n * u;
  if (nu >= 1.0) return std::numeric_limits<double>::infinity();
  return nu / (1.0 - nu);
}

double accumulation_bound(const PrecisionModel& m, double n, double l2, double abs_sum,
                          double sum_abs) {
  if (n <= 1) return 0.0;  // one term: nothing is added, nothing is rounded
  double bound = m.deterministic_bound ? gamma_n(n - 1, m.u_acc) * sum_abs
                                       : m.c * m.u_acc * std::sqrt(n) * (l2 + abs_sum);
  // FTZ: every addition whose result lands below the smallest normal may lose it entirely.
  if (flushes(m)) bound += n * min_normal(m.acc_dtype);
  return bound;
}

double ulp_error(const PrecisionModel& m, double y, double ulps) {
  if (ulps <= 0) return 0.0;
  return ulps * (2.0 * m.u_c * std::fabs(y) + min_subnormal(m.compute_dtype));
}

double rounding_bound(const PrecisionModel& m, double y, double ulps) {
  if (!is_floating(m.out_dtype)) return 0.0;  // index outputs are exact
  const double ay = std::fabs(y);
  double bound = m.u_out * ay + half_subnormal(m.out_dtype) + ulp_error(m, y, ulps);
  if (flushes(m) && ay <= min_normal(m.out_dtype) + bound) bound += min_normal(m.out_dtype);
  return bound;
}

}  // namespace kcv
