// File: src/oracle/declared.hpp
// Simulation of a conforming implementation in the contract's declared types (research §6.5
// step 2): sequential accumulation in the accumulator dtype with one correct rounding per add,
// products rounded to the product type (exact for 16-bit inputs in fp32), optional FMA fusion.
// PRC-01/02 compare the candidate's RMS error with this simulation's ("bits lost").
#pragma once

#include "kcv/dtype.hpp"
#include "kcv/tolerance.hpp"

namespace kcv::oracle {

/// a + b correctly rounded to t (the fp64 sum is nudged off a t-midpoint by its TwoSum error,
/// so there is no double rounding).
double round_add(DType t, double a, double b);
/// a*b + c with a single rounding to t (the product is exact in two doubles).
double round_fma(DType t, double a, double b, double c);
/// x rounded to p significant bits, round-to-nearest-even (TF32: p = 11).
double round_to_bits(double x, int p);

/// Sequential accumulator in declared types.
class DeclaredSum {
 public:
  /// `prod`: the type products are rounded to; `fused`: a*b + acc rounded once.
  DeclaredSum(DType acc, DType prod, bool fused) : acc_t_(acc), prod_t_(prod), fused_(fused) {}
  void add(double x) { acc_ = started_ ? round_add(acc_t_, acc_, x) : round_to(acc_t_, x); started_ = true; }
  void add_product(double a, double b);
  double value() const { return acc_; }

 private:
  DType acc_t_;
  DType prod_t_;
  bool fused_;
  bool started_ = false;
  double acc_ = 0.0;
};

/// The product type of a model: the wider of the compute and accumulator types.
DType product_dtype(const PrecisionModel& m);
/// A DeclaredSum for model m (fused when the profile allows FMA contraction).
DeclaredSum declared_sum(const PrecisionModel& m);

}  // namespace kcv::oracle
