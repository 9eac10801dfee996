// File: src/contract/profile.cpp
// The five semantic profiles as one table. Every number is sourced from the research note
// (contracts-and-fp.md §3 table, §5.1–§5.4 measurements, §6.4 ulp budgets); the `source` field
// of each row says where. Budgets are *extra* ulps of the compute type on top of the final
// rounding u_out·|y| (which already covers a correctly rounded result), so "exact div" is 0.
// Transcendental budget 2 ulp: the CUDA Math API's documented maximum for erff/tanhf; no
// library we could cite guarantees less for binary32, so strict uses it too.
#include "kcv/profile.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <string>

namespace kcv {

namespace {

// Field order: id, name, flush_subnormals, fma_contraction, nan_minmax, clamp_propagates_nan,
// tf32_dot, ulp_div, ulp_sqrt, ulp_exp_base, ulp_exp_per_abs_x, ulp_transcendental, summary,
// flush_libm_inputs, tf32_conv, source.
constexpr std::array<Profile, 5> kProfiles = {{
    {ProfileId::kStrict, "strict", false, false, NanMinMax::kPropagate, true, false, 0.0, 0.0,
     1.0, 0.0, 2.0,
     "IEEE 754-2019: NaN propagates through max/min/clamp, -0 < +0, subnormals kept, no FMA "
     "contraction, correctly rounded div/sqrt, exp within 1 ulp",
     false, false,
     "research §3 (Strict-IEEE column), §5.4 (IEEE 2019 maximum), §6.4 (Strict column)"},
    {ProfileId::kCudaDefault, "cuda-default", false, true, NanMinMax::kNumber, false, false, 0.0,
     0.0, 2.0, 0.0, 2.0,
     "nvcc defaults (-ftz=false -prec-div=true -prec-sqrt=true -fmad=true): FMA may be "
     "contracted, fmaxf = maxNum, subnormals kept, expf within 2 ulp",
     false, false,
     "research §5.1 (nvcc options; measured: div/sqrt bit-exact, expf max 1.83 ulp, "
     "fmaxf(NaN,1)=1), §6.4 (CUDA-default column)"},
    {ProfileId::kFastMath, "fast-math", true, true, NanMinMax::kNumber, false, false, 2.0, 1.0,
     2.0, 1.173, 2.0,
     "nvcc --use_fast_math: FTZ on inputs and results, div within 2 ulp, sqrt within 1 ulp, "
     "__expf within 2 + 1.173|x| ulp, maxNum",
     false, false,
     "research §5.1 (use_fast_math: div max 2.02 ulp, sqrtf 0.94 ulp, __expf 62.9 ulp on "
     "[-104,88], subnormals flushed), §6.4 (Fast-math column: 2 + floor(1.173|x|) ulp)"},
    {ProfileId::kTritonDefault, "triton-default", false, true, NanMinMax::kNumber, false, true,
     2.0, 1.0, 2.0, 1.173, 2.0,
     "Triton 3.6 NVIDIA defaults: FMA fusion, maxNum max/min/clamp, TF32 tl.dot, div.full.f32 "
     "(2 ulp), sqrt.approx (1 ulp), ex2.approx exp, subnormals kept for + * / but flushed in "
     "libdevice calls and tl.sqrt",
     true, true,
     "research §5.2 (CUDAOptions, maxnumf lowering, div 2.02 ulp, sqrt 0.94 ulp and subnormal "
     "input -> 0, tl.exp 62.9 ulp, tl.clamp(NaN,-1,1) = 1), §3 table"},
    {ProfileId::kPytorchEager, "pytorch-eager", false, true, NanMinMax::kPropagate, true, false,
     0.0, 0.0, 2.0, 0.0, 2.0,
     "PyTorch 2.11 eager: NaN propagates through maximum/max/clamp, subnormals kept, "
     "tensor/tensor division correctly rounded, exp within 2 ulp, cuDNN convolutions may use TF32",
     false, true,
     "research §5.3 (maximum/max/clamp NaN, subnormals kept, CUDA x/y exact, "
     "cudnn.allow_tf32=True), §3 table"},
}};

std::string normalize(std::string_view name) {
  std::string out;
  for (char ch : name) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    out.push_back(lower == '_' ? '-' : lower);
  }
  return out;
}

}  // namespace

const Profile& profile(ProfileId id) { return kProfiles[static_cast<std::size_t>(id)]; }

std::span<const Profile> all_profiles() { return kProfiles; }

Expected<ProfileId> parse_profile(std::string_view name) {
  const std::string norm = normalize(name);
  for (const Profile& p : kProfiles) {
    if (p.name == norm) return p.id;
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown profile '" + std::string(name) +
                        "' (expected strict, cuda-default, fast-math, triton-default or "
                        "pytorch-eager)");
}

double exp_ulp_budget(const Profile& p, double x) {
  if (std::isnan(x)) return p.ulp_exp_base;
  return p.ulp_exp_base + p.ulp_exp_per_abs_x * std::fabs(x);
}

}  // namespace kcv
