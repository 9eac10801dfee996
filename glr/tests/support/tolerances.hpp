// File: glr/tests/support/tolerances.hpp
// Tolerances of the comparisons between the two references, derived from fp64 unit roundoff.
//
// The oracle and the chunked reference evaluate the same function with different association.
// With γ_m = m·u / (1 − m·u), u = 2^-53, each result carries a first-order relative forward error
// of at most γ_m·κ, where m is the longest chain of dependent roundings feeding it and κ the
// condition of the result w.r.t. those roundings. The generated problems have κ ≈ 1: l2-normalised
// keys, β ∈ (0, 1) and decays ≤ 1 make every state transition non-expansive (gdn-spec.md §8), so
// errors are not amplified along the sequence. The chains are, with T = longest sequence:
//   oracle:  T·(K + 4) + K         (K-term dot and 4 updates per token, then the output dot)
//   chunked: ⌈T/C⌉·(2C + K)        (serial state pass: W·H and K̄ᵀΔ per chunk)
//            + 3C + 2K + V         (Gram, substitution, T·X, output within one chunk)
// and the backward runs the same chains once more in reverse, hence the factor 2. Norm-wise
// results are compared, so the bound is γ_{2(m_oracle + m_chunked)} for two evaluations.
// The acceptance criterion (1e-10 relative) caps it; for the sizes used here the derived
// bound is 1e-13 … 1e-12, i.e. the tests are two orders stricter than the criterion.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kcv/glr/problem.hpp"

namespace kcv::glr::testing {

/// γ_n = n·u / (1 − n·u).
inline double gamma_n(double n) {
  const double u = std::numeric_limits<double>::epsilon() / 2.0;
  return n * u / (1.0 - n * u);
}

/// Issue 4, item 2: the chunked reference matches the oracle to within 1e-10 relative.
inline constexpr double kAcceptanceRelative = 1e-10;

inline double chunked_tolerance(const Shape& s, std::int64_t chunk_size) {
  std::int64_t longest = 0;
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    longest = std::max(longest, s.seq_end(n) - s.seq_begin(n));
  const double t = static_cast<double>(longest), k = static_cast<double>(s.key_dim);
  const double v = static_cast<double>(s.value_dim), c = static_cast<double>(chunk_size);
  const double m_oracle = t * (k + 4.0) + k;
  const double m_chunked = std::ceil(t / c) * (2.0 * c + k) + 3.0 * c + 2.0 * k + v;
  return std::min(gamma_n(2.0 * (m_oracle + m_chunked)), kAcceptanceRelative);
}

}  // namespace kcv::glr::testing
