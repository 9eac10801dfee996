// File: examples/control/elementwise.cpp
// Positive control, elementwise ops. Every result is one correctly rounded fp32 operation (or
// an fp64 evaluation rounded once), read by stride, so the kernels are bitwise layout
// invariant and declare it. NaN semantics follow the strict profile (relu and clamp propagate
// NaN). The FTZ multiply is the one kernel here that declares fast-math: it flushes subnormal
// inputs and results exactly as FTZ/DAZ hardware does, and must fail EXC-02 under strict.
#include <cmath>

#include "kernels.hpp"
#include "numerics.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

int run_add(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return binary_map(in, n_in, out, n_out, call, [](float a, float b) { return a + b; });
  });
}

int run_mul_ftz(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return binary_map(in, n_in, out, n_out, call, [](float a, float b) {
      return flush_subnormal(flush_subnormal(a) * flush_subnormal(b));
    });
  });
}

int run_relu(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return unary_map(in, n_in, out, n_out, call, [](float x) {
      if (std::isnan(x)) return x;
      return x > 0.0f ? x : 0.0f;
    });
  });
}

int run_gelu(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] { return unary_map(in, n_in, out, n_out, call, gelu_erf_rounded); });
}

int run_exp(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] { return unary_map(in, n_in, out, n_out, call, exp_rounded); });
}

int run_clamp(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  const float lo = static_cast<float>(param(call, "min", -0.5));
  const float hi = static_cast<float>(param(call, "max", 0.5));
  return guarded(call, [&] {
    return unary_map(in, n_in, out, n_out, call, [lo, hi](float x) {
      if (std::isnan(x)) return x;
      if (x < lo) return lo;
      return x > hi ? hi : x;
    });
  });
}

}  // namespace

// Rows are split over threads; the arithmetic per element does not depend on the split, so
// results are bitwise identical across launch configurations and layouts.
constexpr const char* kAdd = R"({"op":"add","profile":"strict","layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":3}]})";
constexpr const char* kMulFtz = R"({"op":"mul","profile":"fast-math","layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":3}]})";
constexpr const char* kRelu = R"({"op":"relu","profile":"strict","layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":3}]})";
constexpr const char* kGelu = R"({"op":"gelu","profile":"strict","layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":3}]})";
constexpr const char* kExp = R"({"op":"exp","profile":"strict","layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":3}]})";
constexpr const char* kClamp = R"({"op":"clamp","profile":"strict","layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":3}]})";

void add_control_elementwise(KernelList& out) {
  out.push_back({"control.add_strided", "add", kAdd, run_add, nullptr});
  out.push_back({"control.mul_ftz_fast_math", "mul", kMulFtz, run_mul_ftz, nullptr});
  out.push_back({"control.relu", "relu", kRelu, run_relu, nullptr});
  out.push_back({"control.gelu_erf", "gelu", kGelu, run_gelu, nullptr});
  out.push_back({"control.exp_rounded", "exp", kExp, run_exp, nullptr});
  out.push_back({"control.clamp_nan_propagating", "clamp", kClamp, run_clamp, nullptr});
}

}  // namespace kcv::examples
