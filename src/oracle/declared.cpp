// File: src/oracle/declared.cpp
// Correctly rounded single operations into a narrower type, and the sequential declared-type
// accumulator built from them. The only subtle point is double rounding: fl64(a+b) may land
// exactly on a midpoint of the target type while the exact sum does not; TwoSum's error term
// tells which way the exact value lies, and one nextafter step in that direction fixes it.
#include "oracle/declared.hpp"

#include <cmath>

#include "oracle/compensated.hpp"

namespace kcv::oracle {

namespace {

double round_pair(DType t, double hi, double lo) {
  if (t == DType::kF64 || lo == 0.0 || !std::isfinite(hi)) return round_to(t, hi);
  if (is_tie(t, hi)) hi = std::nextafter(hi, lo > 0 ? INFINITY : -INFINITY);
  return round_to(t, hi);
}

}  // namespace

double round_add(DType t, double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return round_to(t, a + b);
  const TwoTerm s = two_sum(a, b);
  return round_pair(t, s.hi, s.lo);
}

double round_fma(DType t, double a, double b, double c) {
  const TwoTerm p = two_product(a, b);
  if (!std::isfinite(p.hi) || !std::isfinite(p.lo) || !std::isfinite(c)) {
    return round_to(t, a * b + c);
  }
  const TwoTerm s = two_sum(p.hi, c);
  const TwoTerm e = two_sum(s.lo, p.lo);
  const TwoTerm r = two_sum(s.hi, e.hi);  // r.hi + (r.lo + e.lo) is the exact a*b + c
  return round_pair(t, r.hi, r.lo + e.lo);
}

double round_to_bits(double x, int p) {
  if (!std::isfinite(x) || x == 0.0) return x;
  int e = 0;
  const double m = std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1
  return std::ldexp(std::nearbyint(std::ldexp(m, p)), e - p);
}

void DeclaredSum::add_product(double a, double b) {
  if (!started_) {
    acc_ = fused_ ? round_fma(acc_t_, a, b, 0.0) : round_to(acc_t_, round_to(prod_t_, a * b));
    started_ = true;
    return;
  }
  acc_ = fused_ ? round_fma(acc_t_, a, b, acc_) : round_add(acc_t_, acc_, round_to(prod_t_, a * b));
}

DType product_dtype(const PrecisionModel& m) {
  return unit_roundoff(m.compute_dtype) <= m.u_acc ? m.compute_dtype : m.acc_dtype;
}

DeclaredSum declared_sum(const PrecisionModel& m) {
  const bool fused = m.profile != nullptr && m.profile->fma_contraction;
  return DeclaredSum(m.acc_dtype, product_dtype(m), fused);
}

}  // namespace kcv::oracle

