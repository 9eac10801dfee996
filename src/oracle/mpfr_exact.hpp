// File: src/oracle/mpfr_exact.hpp
// The escalation tier of the oracle (research §7.3 tier 1): sums and dot products computed
// exactly (mpfr_sum is correctly rounded for any exponent spread; products of two doubles are
// exact at 106 bits) and the elementary functions the ops need, all at kWorkPrec bits, then
// rounded once to fp64. 128 bits leaves 75 guard bits above fp64, so the final rounding is the
// correct one unless the exact value lies within 2^-128 relative of an fp64 midpoint.
#pragma once

#include <mpfr.h>

#include <span>
#include <vector>

namespace kcv::oracle {

inline constexpr mpfr_prec_t kWorkPrec = 128;

/// An owned mpfr_t (RAII, copyable).
class Mp {
 public:
  explicit Mp(double x = 0.0, mpfr_prec_t prec = kWorkPrec);
  Mp(const Mp& other);
  Mp& operator=(const Mp& other);
  ~Mp();
  mpfr_ptr get() { return v_; }
  mpfr_srcptr get() const { return v_; }
  double to_double() const;  // round to nearest even

 private:
  mpfr_t v_;
};

/// Correctly rounded (to kWorkPrec) sum of doubles.
Mp mp_sum(std::span<const double> xs);
/// Correctly rounded sum of Mp terms.
Mp mp_sum(const std::vector<Mp>& xs);
/// Correctly rounded dot product of doubles (products exact, then mpfr_sum).
Mp mp_dot(std::span<const double> a, std::span<const double> b);

Mp mp_add(const Mp& a, const Mp& b);
Mp mp_sub(const Mp& a, const Mp& b);
Mp mp_mul(const Mp& a, const Mp& b);
Mp mp_div(const Mp& a, const Mp& b);
Mp mp_sqrt(const Mp& a);
Mp mp_exp(const Mp& a);
Mp mp_log(const Mp& a);
Mp mp_erfc(const Mp& a);
Mp mp_tanh(const Mp& a);

/// fp64 conveniences: correctly rounded results of one operation.
double exact_sum(std::span<const double> xs);
double exact_dot(std::span<const double> a, std::span<const double> b);

}  // namespace kcv::oracle
