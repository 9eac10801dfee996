// File: glr/tests/support/norms.cpp
// Two-norms by plain accumulation (the vectors are small; no scaling needed at these magnitudes).
#include "support/norms.hpp"

#include <cassert>
#include <cmath>

namespace kcv::glr::testing {

double norm2(const std::vector<double>& x) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  return std::sqrt(ss);
}

double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  assert(got.size() == want.size());
  double diff = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) diff += (got[i] - want[i]) * (got[i] - want[i]);
  const double ref = norm2(want);
  return ref > 0.0 ? std::sqrt(diff) / ref : std::sqrt(diff);
}

}  // namespace kcv::glr::testing
