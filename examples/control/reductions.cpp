// File: examples/control/reductions.cpp
// Positive control, reductions along the last dimension, all accumulating in fp32 as declared.
// Three sums in three legal orders (reverse-blocked, pairwise, and a rotating block order that
// changes from call to call and is therefore declared non-deterministic) show that ORD-01
// judges the error model, not one particular order. max and argmax follow the strict profile:
// NaN wins, and argmax returns the first maximum.
#include <cmath>

#include "kernels.hpp"
#include "numerics.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

constexpr int kDefaultBlock = 256;

int run_sum_reverse_blocked(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                            const kcv_call* call) {
  const int64_t block = requested_block(call, kDefaultBlock);
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call, [block](const std::vector<float>& row) {
      return sum_reverse_blocked(row.data(), static_cast<int64_t>(row.size()), block);
    });
  });
}

int run_sum_rotating(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                     const kcv_call* call) {
  const uint64_t start = call_rotation();
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call,
                      [start](const std::vector<float>& row) { return sum_rotated_blocks(row, start); });
  });
}

int run_mean(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] { return row_reduce(in, n_in, out, n_out, call, mean_row); });
}

int run_max(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call, [](const std::vector<float>& row) {
      return max_propagating(row.data(), static_cast<int64_t>(row.size()));
    });
  });
}

int run_argmax(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_reduction(in, n_in, out, n_out, call)) return rc;
    if (out[0].dtype != KCV_I64 && out[0].dtype != KCV_I32) return fail(call, "argmax output must be i64");
    const RowView x(in[0]);
    parallel_for(requested_threads(call), x.rows(), [&](int64_t r0, int64_t r1) {
      std::vector<float> row;
      for (int64_t r = r0; r < r1; ++r) {
        gather_row(x, r, row);
        store_index(out[0], reduced_offset(out[0], r), argmax_first(row.data(), x.cols()));
      }
    });
    return 0;
  });
}

constexpr const char* kSumReverse = R"({"op":"sum","profile":"strict","accumulator":"f32",
  "layout_invariant":true,"tile":256,
  "launch_configs":[{"block":0,"threads":1},{"block":64,"threads":1},{"block":1000,"threads":2}]})";
constexpr const char* kSumPairwise = R"({"op":"sum","profile":"strict","accumulator":"f32",
  "layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":4}]})";
constexpr const char* kSumRotating = R"({"op":"sum","profile":"strict","accumulator":"f32",
  "deterministic":false,"tile":128})";
constexpr const char* kMean = R"({"op":"mean","profile":"strict","accumulator":"f32",
  "layout_invariant":true})";
constexpr const char* kMax = R"({"op":"max","profile":"strict","layout_invariant":true,
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":2}]})";
constexpr const char* kArgmax = R"({"op":"argmax","profile":"strict","outputs":["i64"],
  "layout_invariant":true})";

}  // namespace

int run_control_sum_pairwise(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                             const kcv_call* call) {
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call, [](const std::vector<float>& row) {
      return sum_pairwise(row.data(), static_cast<int64_t>(row.size()));
    });
  });
}

void add_control_reductions(KernelList& out) {
  out.push_back({"control.sum_reverse_blocked", "sum", kSumReverse, run_sum_reverse_blocked, nullptr});
  out.push_back({"control.sum_pairwise", "sum", kSumPairwise, run_control_sum_pairwise, nullptr});
  out.push_back({"control.sum_nondeterministic", "sum", kSumRotating, run_sum_rotating, nullptr});
  out.push_back({"control.mean_pairwise", "mean", kMean, run_mean, nullptr});
  out.push_back({"control.max_nan_propagating", "max", kMax, run_max, nullptr});
  out.push_back({"control.argmax_first_nan", "argmax", kArgmax, run_argmax, nullptr});
}

}  // namespace kcv::examples
