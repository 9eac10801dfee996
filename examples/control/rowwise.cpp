// File: examples/control/rowwise.cpp
// Positive control, row-to-row ops along the last dimension: stabilized softmax, two-pass
// layernorm and an inclusive cumsum, all accumulating in fp32. Each row is gathered by stride
// and processed the same way whatever the layout or thread count, so results are bitwise layout
// invariant; the contracts say so.
#include <cmath>

#include "kernels.hpp"
#include "numerics.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

int run_cumsum(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return row_map(in, n_in, out, n_out, call, [](const std::vector<float>& x, std::vector<float>& y) {
      float s = 0.0f;
      for (std::size_t i = 0; i < x.size(); ++i) {
        s = i == 0 ? x[0] : s + x[i];
        y[i] = s;
      }
    });
  });
}

int check_layernorm(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                    const kcv_call* call) {
  if (int rc = check_arity(call, n_in, 3, n_out, 1)) return rc;
  if (!same_shape(in[0], out[0])) return fail(call, "output shape differs from input shape");
  const int64_t n = in[0].ndim >= 1 ? in[0].shape[in[0].ndim - 1] : 1;
  for (int i = 1; i < 3; ++i) {
    if (in[i].ndim != 1 || in[i].shape[0] != n) return fail(call, "weight and bias must be [N]");
  }
  return 0;
}

int run_layernorm(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                  const kcv_call* call) {
  const float eps = static_cast<float>(param(call, "eps", 1e-5));
  return guarded(call, [&] {
    if (int rc = check_layernorm(in, n_in, out, n_out, call)) return rc;
    const RowView x(in[0]), y(out[0]);
    std::vector<float> w, b;
    gather_row(RowView(in[1]), 0, w);
    gather_row(RowView(in[2]), 0, b);
    parallel_for(requested_threads(call), x.rows(), [&](int64_t r0, int64_t r1) {
      std::vector<float> row, res;
      for (int64_t r = r0; r < r1; ++r) {
        gather_row(x, r, row);
        res.assign(row.size(), 0.0f);
        layernorm_row(row, w, b, eps, res);
        const int64_t yo = y.row_offset(r);
        for (int64_t c = 0; c < y.cols(); ++c) store(out[0], yo + c * y.col_stride(), res[c]);
      }
    });
    return 0;
  });
}

constexpr const char* kSoftmax = R"({"op":"softmax","profile":"strict","accumulator":"f32",
  "layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":4}]})";
constexpr const char* kLayernorm = R"({"op":"layernorm","profile":"strict","accumulator":"f32",
  "layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":2}]})";
constexpr const char* kCumsum = R"({"op":"cumsum","profile":"strict","accumulator":"f32",
  "layout_invariant":true})";

}  // namespace

int run_control_softmax(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                        const kcv_call* call) {
  return guarded(call, [&] { return row_map(in, n_in, out, n_out, call, softmax_row); });
}

void add_control_rowwise(KernelList& out) {
  out.push_back({"control.softmax_stable", "softmax", kSoftmax, run_control_softmax, nullptr});
  out.push_back({"control.layernorm_two_pass", "layernorm", kLayernorm, run_layernorm, nullptr});
  out.push_back({"control.cumsum_sequential", "cumsum", kCumsum, run_cumsum, nullptr});
}

}  // namespace kcv::examples
