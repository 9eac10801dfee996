// File: examples/redteam/prc.cpp
// Red team for the PRC family: precision lost in storage/conversion (PRC-01) or accumulation
// (PRC-02) while the contract declares more. Each loss stays below allclose's 1e-2 at the
// reference sizes and costs many bits against the declared computation:
//  PRC-01  bf16 add whose fp32 sum is converted to bf16 by truncation (declared RN-even), fp32
//          matmul whose B operand is rounded to TF32 (a "pre-converted weight"), gelu computed in
//          bf16 behind an fp32 interface;
//  PRC-02  softmax summing its exponentials in fp16, a mean accumulating in bf16 (both declare
//          an fp32 accumulator).
// An f16 matmul accumulating in fp16 is the textbook PRC-02 defect, but at the reference
// K = 256 its error (~0.1 absolute) fails allclose's atol of 1e-2 by itself, so it is not here;
// TF32 on both operands fails allclose in about one trial in four for the same reason.
#include <cmath>

#include "kernels.hpp"
#include "numerics.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

int run_bf16_truncation(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                        const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_arity(call, n_in, 2, n_out, 1)) return rc;
    if (out[0].dtype != KCV_BF16) return fail(call, "output must be bf16");
    if (!same_shape(in[0], out[0]) || !same_shape(in[1], out[0])) return fail(call, "shapes differ");
    const RowView a(in[0]), b(in[1]), y(out[0]);
    for (int64_t r = 0; r < y.rows(); ++r) {
      for (int64_t c = 0; c < y.cols(); ++c) {
        store_bits16(out[0], y.offset(r, c), bf16_bits_truncated(a.at(r, c) + b.at(r, c)));
      }
    }
    return 0;
  });
}

int check_matmul(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  if (int rc = check_arity(call, n_in, 2, n_out, 1)) return rc;
  if (in[0].ndim != 2 || in[1].ndim != 2 || out[0].ndim != 2) return fail(call, "matmul wants 2-D tensors");
  if (in[0].shape[1] != in[1].shape[0] || out[0].shape[0] != in[0].shape[0] ||
      out[0].shape[1] != in[1].shape[1]) {
    return fail(call, "matmul shapes do not match");
  }
  return 0;
}

// fp32 accumulation, as declared, but every B element is rounded to TF32 first.
int run_tf32_matmul(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_matmul(in, n_in, out, n_out, call)) return rc;
    const kcv_tensor &a = in[0], &b = in[1], &y = out[0];
    const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t p = 0; p < k; ++p) {
          acc += load(a, i * a.strides[0] + p * a.strides[1]) *
                 round_tf32(load(b, p * b.strides[0] + j * b.strides[1]));
        }
        store(y, i * y.strides[0] + j * y.strides[1], acc);
      }
    }
    return 0;
  });
}

int run_softmax_fp16_sum(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                         const kcv_call* call) {
  return guarded(call, [&] {
    return row_map(in, n_in, out, n_out, call, [](const std::vector<float>& x, std::vector<float>& y) {
      const float m = max_propagating(x.data(), static_cast<int64_t>(x.size()));
      float sum = 0.0f;  // a "half2" accumulator
      for (std::size_t i = 0; i < x.size(); ++i) {
        y[i] = exp_rounded(x[i] - m);
        sum = round_f16(sum + y[i]);
      }
      for (float& v : y) v = v / sum;
    });
  });
}

int run_gelu_bf16(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return unary_map(in, n_in, out, n_out, call,
                     [](float x) { return round_bf16(gelu_erf_rounded(round_bf16(x))); });
  });
}

int run_bf16_mean(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call, [](const std::vector<float>& row) {
      float acc = 0.0f;
      for (float v : row) acc = round_bf16(acc + v);
      return acc / static_cast<float>(row.size());
    });
  });
}

constexpr const char* kAddBf16 = R"({"op":"add","profile":"strict","inputs":["bf16","bf16"],
  "outputs":["bf16"]})";
constexpr const char* kMatmulF32 = R"({"op":"matmul","profile":"strict","accumulator":"f32"})";
constexpr const char* kGelu = R"({"op":"gelu","profile":"strict"})";
constexpr const char* kSoftmax = R"({"op":"softmax","profile":"strict","accumulator":"f32"})";
constexpr const char* kMean = R"({"op":"mean","profile":"strict","accumulator":"f32"})";

}  // namespace

void add_redteam_prc(KernelList& out) {
  out.push_back({"redteam.prc01.bf16_output_truncation", "add", kAddBf16, run_bf16_truncation, nullptr});
  out.push_back({"redteam.prc01.tf32_matmul", "matmul", kMatmulF32, run_tf32_matmul, nullptr});
  out.push_back({"redteam.prc01.gelu_bf16_internal", "gelu", kGelu, run_gelu_bf16, nullptr});
  out.push_back({"redteam.prc02.softmax_fp16_denominator", "softmax", kSoftmax, run_softmax_fp16_sum, nullptr});
  out.push_back({"redteam.prc02.bf16_accumulator_mean", "mean", kMean, run_bf16_mean, nullptr});
}

}  // namespace kcv::examples
