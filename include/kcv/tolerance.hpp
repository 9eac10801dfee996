// File: include/kcv/tolerance.hpp
// Derived thresholds (research note §2.4, §6.7). Every bound is a formula in the declared
// dtypes, the reduction length, a scale computed from the *inputs*, the profile's ulp budget and
// the confidence constant c; never from the candidate's output.
//   tau = u_out*|y*| + b_op*u_c*|y*| + c*u_acc*sqrt(N)*S (+ declared conversion)
//   S   = ||p||_2 + |sum p|   (p: the summed terms)
// Strict profile accumulation uses Higham's deterministic gamma_{N-1} * sum|p| instead.
#pragma once

#include <cstdint>

#include "kcv/contract.hpp"
#include "kcv/profile.hpp"

namespace kcv {

struct PrecisionModel {
  double u_out = 0;   // unit roundoff of the output type
  double u_acc = 0;   // of the declared accumulator
  double u_c = 0;     // of the compute type (fp32 for 16-bit inputs)
  double c = 4;       // confidence constant of the probabilistic bound
  bool deterministic_bound = false;  // strict: gamma_{N-1} * sum|p|
  const Profile* profile = nullptr;
  // Added by the contract module: the types behind the three roundoffs, for absolute floors
  // (subnormal spacing, FTZ) and for the declared-type simulation.
  DType out_dtype = DType::kF32;
  DType acc_dtype = DType::kF32;
  DType compute_dtype = DType::kF32;
};

/// The compute type of a contract: the first input's dtype widened to at least fp32 (16-bit
/// inputs are computed in fp32; products of 16-bit values are exact there).
DType compute_dtype(const Contract& c);

/// Absolute error of `ulps` ulps of the compute type at a result of magnitude |y|: one ulp is at
/// most 2*u_c*|y| for normal y and the subnormal spacing below, so ulps*(2u_c|y| + min_sub_c).
double ulp_error(const PrecisionModel& m, double y, double ulps);

/// Model for output `output` of a contract (dtypes resolved against the op's defaults).
PrecisionModel precision_model(const Contract& c, DType output_dtype);

/// gamma_n = n*u / (1 - n*u); +inf when n*u >= 1.
double gamma_n(double n, double u);
/// Accumulation term for a sum of N terms with l2 = ||p||_2, abs_sum = |sum p|, sum_abs = sum|p|.
double accumulation_bound(const PrecisionModel& m, double n, double l2, double abs_sum,
                          double sum_abs);
/// Final rounding plus `ulps` of compute-type error on a result of magnitude |y|.
double rounding_bound(const PrecisionModel& m, double y, double ulps);

}  // namespace kcv
