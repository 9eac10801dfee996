// File: src/oracle/compensated.cpp
// TwoSum/TwoProduct and the Sum2/Dot2 accumulator (Ogita-Rump-Oishi 2005, Algorithms 4.4 and
// 5.3). The compensation is summed in plain fp64, which is exactly what Sum2 does; the norm uses
// a running scale so that squares of values near fp64's range do not overflow.
#include "oracle/compensated.hpp"

#include <cmath>
#include <limits>

namespace kcv::oracle {

TwoTerm two_sum(double a, double b) {
  const double hi = a + b;
  const double bv = hi - a;
  const double lo = (a - (hi - bv)) + (b - bv);
  return {hi, lo};
}

TwoTerm two_product(double a, double b) {
  const double hi = a * b;
  return {hi, std::fma(a, b, -hi)};
}

void CompensatedSum::add_pair(double hi, double lo) {
  const TwoTerm t = two_sum(s_, hi);
  s_ = t.hi;
  c_ += t.lo + lo;
  const double ax = std::fabs(hi + lo);
  abs_ += ax;
  if (ax > 0) {
    if (ax > scale_) {
      sq_ = 1.0 + sq_ * (scale_ / ax) * (scale_ / ax);
      scale_ = ax;
    } else {
      sq_ += (ax / scale_) * (ax / scale_);
    }
  }
  ++count_;
}

void CompensatedSum::add(double x) {
  if (!std::isfinite(x)) {
    nan_ = nan_ || std::isnan(x);
    pos_inf_ = pos_inf_ || x == std::numeric_limits<double>::infinity();
    neg_inf_ = neg_inf_ || x == -std::numeric_limits<double>::infinity();
    ++count_;
    return;
  }
  add_pair(x, 0.0);
}

void CompensatedSum::add_product(double a, double b) {
  const TwoTerm p = two_product(a, b);
  if (!std::isfinite(p.hi) || !std::isfinite(p.lo)) {
    add(a * b);  // Inf*0 = NaN, Inf*x = +-Inf, and overflow: classified by add()
    return;
  }
  add_pair(p.hi, p.lo);
}

double CompensatedSum::sum() const {
  if (nan_ || (pos_inf_ && neg_inf_)) return std::numeric_limits<double>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<double>::infinity();
  if (neg_inf_) return -std::numeric_limits<double>::infinity();
  return s_ + c_;
}

double CompensatedSum::l2() const { return scale_ * std::sqrt(sq_); }

double CompensatedSum::sum_abs() const { return abs_; }

double sum2(std::span<const double> xs) {
  CompensatedSum acc;
  for (double x : xs) acc.add(x);
  return acc.sum();
}

double dot2(std::span<const double> a, std::span<const double> b) {
  CompensatedSum acc;
  for (std::size_t i = 0; i < a.size(); ++i) acc.add_product(a[i], b[i]);
  return acc.sum();
}

}  // namespace kcv::oracle
