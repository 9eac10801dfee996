// File: src/numeric/portable_math.cpp
// Series evaluations with a fixed number of terms after exact argument reduction:
//   log: x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172
//   exp: x = k ln2 + r with |r| <= ln2/2 (ln2 split in two parts); Taylor series of e^r
//   cos(2 pi u): quadrant from 4u (exact), then sin or cos Taylor series on [0, pi/4]
// The term counts put the truncation error below 2^-60 relative.
#include "numeric/portable_math.hpp"

#include <cmath>
#include <limits>

namespace kcv::numeric {
namespace {

constexpr double kLn2Hi = 6.93147180369123816490e-01;  // fdlibm split: kLn2Hi has 32 bits
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kHalfPi = 1.57079632679489661923;

// sin(t) and cos(t) for t in [0, pi/4].
double sin_series(double t) {
  const double t2 = t * t;
  double acc = 0.0;
  for (int n = 12; n >= 1; --n) {  // terms up to t^25 / 25!
    acc = t2 / ((2.0 * n) * (2.0 * n + 1.0)) * (1.0 - acc);
  }
  return t * (1.0 - acc);
}

double cos_series(double t) {
  const double t2 = t * t;
  double acc = 0.0;
  for (int n = 12; n >= 1; --n) {  // terms up to t^24 / 24!
    acc = t2 / ((2.0 * n - 1.0) * (2.0 * n)) * (1.0 - acc);
  }
  return 1.0 - acc;
}

// sin or cos of (r * pi/2) for r in [0, 1].
double sin_half_pi(double r) {
  return r <= 0.5 ? sin_series(r * kHalfPi) : cos_series((1.0 - r) * kHalfPi);
}

double cos_half_pi(double r) {
  return r <= 0.5 ? cos_series(r * kHalfPi) : sin_series((1.0 - r) * kHalfPi);
}

}  // namespace

double portable_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  if (m < kSqrtHalf) {
    m *= 2.0;
    --e;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double acc = 0.0;
  for (int k = 14; k >= 1; --k) {  // sum of s^(2k) / (2k + 1)
    acc = s2 * (1.0 / (2.0 * k + 1.0) + acc);
  }
  return e * kLn2 + 2.0 * s * (1.0 + acc);
}

double portable_exp(double x) {
  if (x < -745.2) {
    return 0.0;
  }
  if (x > 709.78) {
    return std::numeric_limits<double>::infinity();
  }
  const double k = std::floor(x / kLn2 + 0.5);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double acc = 1.0;
  for (int n = 18; n >= 1; --n) {  // Horner form of sum r^n / n!
    acc = 1.0 + r * acc / n;
  }
  return std::ldexp(acc, static_cast<int>(k));
}

double portable_cos_2pi(double u) {
  const double four_u = 4.0 * u;  // exact
  const double q = std::floor(four_u);
  const double r = four_u - q;  // exact, in [0, 1)
  switch (static_cast<int>(q) & 3) {
    case 0: return cos_half_pi(r);
    case 1: return -sin_half_pi(r);
    case 2: return -cos_half_pi(r);
    default: return sin_half_pi(r);
  }
}

}  // namespace kcv::numeric
