// File: src/oracle/compensated.hpp
// Error-free transformations and the compensated sums of Ogita, Rump and Oishi (SISC 2005):
// TwoSum (Knuth), TwoProduct (one FMA), Sum2 and Dot2. The result is as accurate as if computed
// in twice fp64's precision and then rounded: |res - s| <= u|s| + gamma_{n-1}^2 * sum|x_i|.
// The accumulator also gathers, from the same terms, the scale statistics the tolerance needs
// (||p||_2, sum|p|) and tracks non-finite terms apart, so that Inf - Inf gives NaN (IEEE) instead
// of poisoning the compensation with NaN.
#pragma once

#include <cstdint>
#include <span>

namespace kcv::oracle {

struct TwoTerm {
  double hi;  // fl(result)
  double lo;  // the exact rounding error: result = hi + lo
};

/// a + b = hi + lo exactly (Knuth's TwoSum, 6 flops, no branch). @pre finite a, b
TwoTerm two_sum(double a, double b);
/// a * b = hi + lo exactly with one FMA (exact unless the product underflows). @pre finite
TwoTerm two_product(double a, double b);

/// Sum2/Dot2 accumulator plus the scale statistics of the summed terms.
class CompensatedSum {
 public:
  void add(double x);                    // Sum2 step
  void add_product(double a, double b);  // Dot2 step: the term is the exact product a*b

  /// The compensated sum; NaN if any term was NaN or both infinities occurred, else +-Inf.
  double sum() const;
  double l2() const;       // ||p||_2 over the finite terms
  double sum_abs() const;  // sum |p| over the finite terms
  int64_t count() const { return count_; }
  bool has_nonfinite() const { return nan_ || pos_inf_ || neg_inf_; }

 private:
  void add_pair(double hi, double lo);
  double s_ = 0;      // running fl-sum
  double c_ = 0;      // running sum of the exact errors
  double sq_ = 0;     // sum of squares (scaled below to avoid overflow)
  double scale_ = 0;  // ||p||_2 computed as scale_*sqrt(sq_) (LAPACK dnrm2 style)
  double abs_ = 0;
  int64_t count_ = 0;
  bool nan_ = false;
  bool pos_inf_ = false;
  bool neg_inf_ = false;
};

/// Sum2 of xs.
double sum2(std::span<const double> xs);
/// Dot2 of a and b. @pre a.size() == b.size()
double dot2(std::span<const double> a, std::span<const double> b);

}  // namespace kcv::oracle
