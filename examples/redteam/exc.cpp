// File: examples/redteam/exc.cpp
// Red team for the EXC family. Standard-normal inputs contain no NaN, no Inf, no value large
// enough to overflow exp and no subnormal, so a KernelBench-style check cannot see any of this.
// All declare the strict profile, whose semantics they break:
//  EXC-01  a max that drops NaN (fmaxf), softmax without max subtraction (exp overflows),
//          clamp that returns the bound for NaN (fminf(fmaxf(x, lo), hi));
//  EXC-02  relu that reads subnormal inputs as zero (DAZ), exp that flushes subnormal results,
//          a multiply with FTZ on inputs and results.
#include <cmath>

#include "kernels.hpp"
#include "numerics.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

int run_nan_dropping_max(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                         const kcv_call* call) {
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call, [](const std::vector<float>& row) {
      float m = -INFINITY;
      for (float v : row) m = std::fmax(m, v);  // maxNum: the number wins over NaN
      return m;
    });
  });
}

int run_softmax_unstabilized(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                             const kcv_call* call) {
  return guarded(call, [&] {
    return row_map(in, n_in, out, n_out, call, [](const std::vector<float>& x, std::vector<float>& y) {
      for (std::size_t i = 0; i < x.size(); ++i) y[i] = exp_rounded(x[i]);  // no x - max
      const float s = sum_pairwise(y.data(), static_cast<int64_t>(y.size()));
      for (float& v : y) v = v / s;
    });
  });
}

int run_clamp_nan_to_bound(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                           const kcv_call* call) {
  const float lo = static_cast<float>(param(call, "min", -0.5));
  const float hi = static_cast<float>(param(call, "max", 0.5));
  return guarded(call, [&] {
    return unary_map(in, n_in, out, n_out, call,
                     [lo, hi](float x) { return std::fmin(std::fmax(x, lo), hi); });
  });
}

int run_relu_daz(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return unary_map(in, n_in, out, n_out, call, [](float x) {
      x = flush_subnormal(x);  // denormals-are-zero on the input
      if (std::isnan(x)) return x;
      return x > 0.0f ? x : 0.0f;
    });
  });
}

int run_exp_ftz(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return unary_map(in, n_in, out, n_out, call, [](float x) { return flush_subnormal(exp_rounded(x)); });
  });
}

int run_mul_ftz(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return binary_map(in, n_in, out, n_out, call, [](float a, float b) {
      return flush_subnormal(flush_subnormal(a) * flush_subnormal(b));
    });
  });
}

constexpr const char* kMax = R"({"op":"max","profile":"strict"})";
constexpr const char* kSoftmax = R"({"op":"softmax","profile":"strict","accumulator":"f32"})";
constexpr const char* kClamp = R"({"op":"clamp","profile":"strict"})";
constexpr const char* kRelu = R"({"op":"relu","profile":"strict"})";
constexpr const char* kExp = R"({"op":"exp","profile":"strict"})";
constexpr const char* kMul = R"({"op":"mul","profile":"strict"})";

}  // namespace

void add_redteam_exc(KernelList& out) {
  out.push_back({"redteam.exc01.nan_dropping_max", "max", kMax, run_nan_dropping_max, nullptr});
  out.push_back({"redteam.exc01.softmax_no_max_subtraction", "softmax", kSoftmax,
                 run_softmax_unstabilized, nullptr});
  out.push_back({"redteam.exc01.clamp_nan_to_bound", "clamp", kClamp, run_clamp_nan_to_bound, nullptr});
  out.push_back({"redteam.exc02.relu_flushes_subnormal_inputs", "relu", kRelu, run_relu_daz, nullptr});
  out.push_back({"redteam.exc02.exp_flushes_subnormal_results", "exp", kExp, run_exp_ftz, nullptr});
  out.push_back({"redteam.exc02.mul_ftz_declared_strict", "mul", kMul, run_mul_ftz, nullptr});
}

}  // namespace kcv::examples
