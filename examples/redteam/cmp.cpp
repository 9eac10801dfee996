// File: examples/redteam/cmp.cpp
// Red team for the CMP family. Each kernel is exact on the one thing a KernelBench-style check
// looks at (contiguous [16, 1024] inputs) and wrong elsewhere:
//  CMP-01  the shape domain: a tail that is never summed, a row length fixed at 1024;
//  CMP-02  the interface: the input used as scratch space, the input's row padding used as
//          scratch space;
//  CMP-03  non-contiguous inputs: the inner stride assumed to be 1, a fallback path that rounds
//          through bf16, a broadcast operand cached in bf16, a strided gather staged in fp16.
#include <cmath>

#include "kernels.hpp"
#include "numerics.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

constexpr int64_t kTile = 256;

// CMP-01: blocks of 256, grid = N / 256 with no tail block. N = 1024 has no tail.
int run_missing_tail_mask(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                          const kcv_call* call) {
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call, [](const std::vector<float>& row) {
      const int64_t blocks = static_cast<int64_t>(row.size()) / kTile;  // should round up
      float total = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) total += sum_sequential(row.data() + b * kTile, kTile);
      return total;
    });
  });
}

// CMP-01: the reference row length baked in as the divisor.
int run_hardcoded_row_length(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                             const kcv_call* call) {
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call, [](const std::vector<float>& row) {
      return sum_pairwise(row.data(), static_cast<int64_t>(row.size())) / 1024.0f;
    });
  });
}

// CMP-03: element (r, c) read at row_offset(r) + c: the leading stride is honoured, the inner
// one assumed to be 1 (the classic row*ld + col). Transposed and sliced views read wrong data.
int run_contiguity_assumed(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                           const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_arity(call, n_in, 2, n_out, 1)) return rc;
    if (!same_shape(in[0], out[0]) || !same_shape(in[1], out[0])) return fail(call, "shapes differ");
    const RowView a(in[0]), b(in[1]), y(out[0]);
    for (int64_t r = 0; r < y.rows(); ++r) {
      const int64_t ao = a.row_offset(r), bo = b.row_offset(r), yo = y.row_offset(r);
      for (int64_t c = 0; c < y.cols(); ++c) {
        store(out[0], yo + c * y.col_stride(), load(in[0], ao + c) + load(in[1], bo + c));
      }
    }
    return 0;
  });
}

// CMP-02: softmax that stores x - max into its input "to save a buffer" and adds max back
// afterwards. fl(fl(x - m) + m) != x for many x, so the input is left modified.
int run_input_as_scratch(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                         const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_arity(call, n_in, 1, n_out, 1)) return rc;
    if (!same_shape(in[0], out[0])) return fail(call, "shapes differ");
    const RowView x(in[0]), y(out[0]);
    std::vector<float> row, e;
    for (int64_t r = 0; r < x.rows(); ++r) {
      gather_row(x, r, row);
      const float m = max_propagating(row.data(), x.cols());
      e.assign(row.size(), 0.0f);
      for (int64_t c = 0; c < x.cols(); ++c) x.set(r, c, row[c] - m);    // scratch in the input
      for (int64_t c = 0; c < x.cols(); ++c) e[c] = exp_rounded(x.at(r, c));
      for (int64_t c = 0; c < x.cols(); ++c) x.set(r, c, x.at(r, c) + m);  // "restore"
      const float s = sum_pairwise(e.data(), x.cols());
      for (int64_t c = 0; c < y.cols(); ++c) y.set(r, c, e[c] / s);
    }
    return 0;
  });
}

// CMP-02: layernorm that parks each row's mean in the input's row padding when there is some
// (inner stride 1, row stride > N) and reads it back for the second pass.
int run_scratch_in_row_padding(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                               const kcv_call* call) {
  const float eps = static_cast<float>(param(call, "eps", 1e-5));
  return guarded(call, [&] {
    if (int rc = check_arity(call, n_in, 3, n_out, 1)) return rc;
    if (!same_shape(in[0], out[0]) || in[0].ndim != 2) return fail(call, "x must be [M, N] like out");
    const RowView x(in[0]), y(out[0]);
    const bool padded = x.col_stride() == 1 && in[0].strides[0] > x.cols();
    std::vector<float> row, w, b;
    gather_row(RowView(in[1]), 0, w);
    gather_row(RowView(in[2]), 0, b);
    for (int64_t r = 0; r < x.rows(); ++r) {
      gather_row(x, r, row);
      float mean = sum_pairwise(row.data(), x.cols()) / static_cast<float>(x.cols());
      if (padded) {
        store(in[0], x.row_offset(r) + x.cols(), mean);  // the padding element after the row
        mean = load(in[0], x.row_offset(r) + x.cols());
      }
      std::vector<float> sq(row.size());
      for (int64_t c = 0; c < x.cols(); ++c) sq[c] = (row[c] - mean) * (row[c] - mean);
      const float var = sum_pairwise(sq.data(), x.cols()) / static_cast<float>(x.cols());
      const float denom = std::sqrt(var + eps);
      for (int64_t c = 0; c < y.cols(); ++c) y.set(r, c, (row[c] - mean) / denom * w[c] + b[c]);
    }
    return 0;
  });
}

// CMP-03: contiguous inputs take the exact path; anything else a "generic" path that converts
// both operands to bf16 first.
int run_strided_fallback_bf16(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                              const kcv_call* call) {
  return guarded(call, [&] {
    if (n_in == 2 && is_contiguous(in[0]) && is_contiguous(in[1])) {
      return binary_map(in, n_in, out, n_out, call, [](float a, float b) { return a + b; });
    }
    return binary_map(in, n_in, out, n_out, call,
                      [](float a, float b) { return round_bf16(a) + round_bf16(b); });
  });
}

// CMP-03: an operand broadcast along rows (stride 0) is loaded once into a bf16 row cache.
int run_broadcast_row_bf16(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                           const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_arity(call, n_in, 2, n_out, 1)) return rc;
    if (!same_shape(in[0], out[0]) || !same_shape(in[1], out[0])) return fail(call, "shapes differ");
    const RowView a(in[0]), b(in[1]), y(out[0]);
    auto cached = [](const kcv_tensor& t) { return t.ndim >= 2 && t.strides[0] == 0 && t.shape[0] > 1; };
    const bool ca = cached(in[0]), cb = cached(in[1]);
    for (int64_t r = 0; r < y.rows(); ++r) {
      for (int64_t c = 0; c < y.cols(); ++c) {
        const float av = ca ? round_bf16(a.at(r, c)) : a.at(r, c);
        const float bv = cb ? round_bf16(b.at(r, c)) : b.at(r, c);
        y.set(r, c, av * bv);
      }
    }
    return 0;
  });
}

// CMP-03: rows with a non-unit inner stride are gathered into an fp16 staging buffer.
int run_strided_gather_fp16(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                            const kcv_call* call) {
  return guarded(call, [&] {
    if (n_in == 1 && RowView(in[0]).col_stride() == 1) return run_control_softmax(in, n_in, out, n_out, call);
    return row_map(in, n_in, out, n_out, call, [](const std::vector<float>& x, std::vector<float>& y) {
      std::vector<float> staged(x);
      for (float& v : staged) v = round_f16(v);
      softmax_row(staged, y);
    });
  });
}

constexpr const char* kSum = R"({"op":"sum","profile":"strict","accumulator":"f32","tile":256})";
constexpr const char* kMean = R"({"op":"mean","profile":"strict","accumulator":"f32"})";
constexpr const char* kAdd = R"({"op":"add","profile":"strict"})";
constexpr const char* kMul = R"({"op":"mul","profile":"strict"})";
constexpr const char* kSoftmax = R"({"op":"softmax","profile":"strict","accumulator":"f32"})";
constexpr const char* kLayernorm = R"({"op":"layernorm","profile":"strict","accumulator":"f32"})";

}  // namespace

void add_redteam_cmp(KernelList& out) {
  out.push_back({"redteam.cmp01.missing_tail_mask", "sum", kSum, run_missing_tail_mask, nullptr});
  out.push_back({"redteam.cmp01.hardcoded_row_length", "mean", kMean, run_hardcoded_row_length, nullptr});
  out.push_back({"redteam.cmp03.contiguity_assumed", "add", kAdd, run_contiguity_assumed, nullptr});
  out.push_back({"redteam.cmp02.input_as_scratch", "softmax", kSoftmax, run_input_as_scratch, nullptr});
  out.push_back({"redteam.cmp02.scratch_in_row_padding", "layernorm", kLayernorm,
                 run_scratch_in_row_padding, nullptr});
  out.push_back({"redteam.cmp03.strided_fallback_bf16", "add", kAdd, run_strided_fallback_bf16, nullptr});
  out.push_back({"redteam.cmp03.broadcast_row_bf16", "mul", kMul, run_broadcast_row_bf16, nullptr});
  out.push_back({"redteam.cmp03.strided_gather_fp16", "softmax", kSoftmax, run_strided_gather_fp16, nullptr});
}

}  // namespace kcv::examples
