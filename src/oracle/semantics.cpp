// File: src/oracle/semantics.cpp
// Profile semantics of reading, finishing, max and min. Classification reads bits (numeric
// module), so the host's own FTZ/DAZ state can never change what the oracle sees.
#include "oracle/semantics.hpp"

#include <cmath>
#include <limits>

namespace kcv::oracle {

double flush_if(DType t, double x, bool flush) {
  if (!flush || !is_floating(t) || x == 0.0 || !std::isfinite(x)) return x;
  return std::fabs(x) < min_normal(t) ? std::copysign(0.0, x) : x;
}

std::vector<double> read_values(const HostTensor& t, bool flush) {
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    out[static_cast<std::size_t>(i)] = flush_if(t.dtype(), t.value_at(i), flush);
  }
  return out;
}

double finish_value(double y, DType t, const Profile& p) {
  if (!std::isfinite(y) || !is_floating(t)) return y;
  const double r = round_to(t, y);
  if (std::isinf(r)) return r;
  if (p.flush_subnormals && std::fabs(r) < min_normal(t)) return std::copysign(0.0, y);
  return y;
}

double finish_declared(double y, DType t, const Profile& p) {
  if (!is_floating(t)) return y;
  return flush_if(t, round_to(t, y), p.flush_subnormals);
}

namespace {

double pick(double a, double b, const Profile& p, bool want_max) {
  const bool na = std::isnan(a);
  const bool nb = std::isnan(b);
  if (na || nb) {
    if (p.nan_minmax == NanMinMax::kPropagate || (na && nb)) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    return na ? b : a;
  }
  if (a == b) {  // equal values, or +0 and -0: -0 < +0
    const bool a_neg = std::signbit(a);
    return (a_neg == want_max) ? b : a;
  }
  return (a > b) == want_max ? a : b;
}

}  // namespace

double max_of(double a, double b, const Profile& p) { return pick(a, b, p, true); }

double min_of(double a, double b, const Profile& p) { return pick(a, b, p, false); }

double clamp_of(double x, double lo, double hi, const Profile& p) {
  if (std::isnan(x) && p.clamp_propagates_nan) return x;
  return max_of(min_of(x, hi, p), lo, p);
}

}  // namespace kcv::oracle
