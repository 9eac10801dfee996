// File: include/kcv/profile.hpp
// Semantic profiles: what IEEE 754 leaves open or compilers change, fixed per contract
// (research note contracts-and-fp.md §3). The oracle runs under the kernel's declared profile,
// and the numeric gates take their per-op ulp budgets from it.
#pragma once

#include <span>
#include <string_view>

#include "kcv/expected.hpp"

namespace kcv {

enum class ProfileId { kStrict, kCudaDefault, kFastMath, kTritonDefault, kPytorchEager };

/// What max/min do with one NaN operand (and max/min reductions with a NaN element).
enum class NanMinMax {
  kPropagate,  // IEEE 754-2019 maximum/minimum: NaN wins (torch.maximum, torch.max)
  kNumber,     // maxNum / maximumNumber: the number wins (fmaxf, Triton default)
};

struct Profile {
  ProfileId id;
  std::string_view name;  // "strict", "cuda-default", "fast-math", "triton-default", "pytorch-eager"
  bool flush_subnormals;  // FTZ/DAZ: subnormal inputs read as zero, subnormal results flushed
  bool fma_contraction;   // a*b+c may be fused (oracle accepts fused and unfused)
  NanMinMax nan_minmax;
  bool clamp_propagates_nan;
  bool tf32_dot;          // fp32 dot products may use TF32 inputs
  double ulp_div;         // per-op error budgets of fp32 ops, in ulps of the result
  double ulp_sqrt;
  double ulp_exp_base;    // exp budget = ulp_exp_base + ulp_exp_per_abs_x * |x|
  double ulp_exp_per_abs_x;
  double ulp_transcendental;  // erf, tanh, log, sigmoid's exp: library budget
  std::string_view summary;
  // Added by the contract module (after the original fields, so positional initializers of the
  // fields above keep their meaning):
  bool flush_libm_inputs;  // sqrt/erf/tanh read subnormal arguments as zero (Triton reflect-ftz)
  bool tf32_conv;          // fp32 convolutions may use TF32 inputs (cuDNN allow_tf32, tl.dot)
  std::string_view source; // where the values come from (research note sections)
};

const Profile& profile(ProfileId id);
std::span<const Profile> all_profiles();
Expected<ProfileId> parse_profile(std::string_view name);
/// Exp's ulp budget at argument x under profile p.
double exp_ulp_budget(const Profile& p, double x);

}  // namespace kcv
