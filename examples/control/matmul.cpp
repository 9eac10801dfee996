// File: examples/control/matmul.cpp
// Positive control: fp32 matmul with fp32 accumulation, products rounded then added (no FMA, as
// the strict profile says). The block hint is a K tile: each tile is summed on its own and the
// tile sums are added in order, so other launch configurations change the summation order (a
// legal reordering that ORD-03 must accept) while the thread count changes nothing.
#include "kernels.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

struct Matrix {
  const kcv_tensor* t;
  float at(int64_t i, int64_t j) const { return load(*t, i * t->strides[0] + j * t->strides[1]); }
};

int check_matmul(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  if (int rc = check_arity(call, n_in, 2, n_out, 1)) return rc;
  if (in[0].ndim != 2 || in[1].ndim != 2 || out[0].ndim != 2) return fail(call, "matmul wants 2-D tensors");
  if (in[0].shape[1] != in[1].shape[0]) return fail(call, "inner dimensions differ");
  if (out[0].shape[0] != in[0].shape[0] || out[0].shape[1] != in[1].shape[1]) {
    return fail(call, "output must be [M, N]");
  }
  return 0;
}

float dot_tiled(const Matrix& a, const Matrix& b, int64_t i, int64_t j, int64_t k_total, int64_t tile) {
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k_total; k0 += tile) {
    const int64_t k1 = std::min(k_total, k0 + tile);
    float part = a.at(i, k0) * b.at(k0, j);
    for (int64_t k = k0 + 1; k < k1; ++k) part += a.at(i, k) * b.at(k, j);
    acc = k0 == 0 ? part : acc + part;
  }
  return acc;
}

constexpr const char* kMatmul = R"({"op":"matmul","profile":"strict","accumulator":"f32",
  "layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":64,"threads":2},{"block":100,"threads":1}]})";

}  // namespace

int run_control_matmul(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                       const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_matmul(in, n_in, out, n_out, call)) return rc;
    const Matrix a{&in[0]}, b{&in[1]};
    const int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
    const int64_t tile = requested_block(call, static_cast<int>(std::min<int64_t>(k, 1 << 30)));
    parallel_for(requested_threads(call), m, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const float v = k == 0 ? 0.0f : dot_tiled(a, b, i, j, k, tile);
          store(out[0], i * out[0].strides[0] + j * out[0].strides[1], v);
        }
      }
    });
    return 0;
  });
}

void add_control_matmul(KernelList& out) {
  out.push_back({"control.matmul_fp32", "matmul", kMatmul, run_control_matmul, nullptr});
}

}  // namespace kcv::examples
