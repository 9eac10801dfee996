// File: examples/redteam/res.cpp
// Red team for the RES family.
//  RES-01  memory safety on the host: a write one element past the output, vector loads of 8
//          with no tail mask (reads past each row when N % 8 != 0, so the reference N = 1024
//          never does), and a relu that writes only positive results and relies on the output
//          being zero-initialised, as a fresh allocation in a one-shot check is.
//  RES-02  numerically correct CPU kernels whose device code breaks the contract's budgets:
//          32 KiB of static shared memory against a 16 KiB budget, register spills against
//          spill_bytes 0, a tcgen05.alloc of 544 tensor-memory columns (the SM has 512). The
//          device code is compiled by examples/CMakeLists.txt into KCV_EXAMPLES_DEVICE_DIR;
//          without nvcc the descriptors carry no device code and RES-02 cannot judge them.
#include <cmath>

#include "kernels.hpp"
#include "numerics.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

// RES-01: `c <= cols` in the last row: reads a[M-1, N], b[M-1, N] and writes out[M-1, N],
// one element past the end of every buffer when they are contiguous.
int run_write_past_end(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                       const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_arity(call, n_in, 2, n_out, 1)) return rc;
    if (!same_shape(in[0], out[0]) || !same_shape(in[1], out[0])) return fail(call, "shapes differ");
    const RowView a(in[0]), b(in[1]), y(out[0]);
    for (int64_t r = 0; r < y.rows(); ++r) {
      const int64_t end = r + 1 == y.rows() ? y.cols() : y.cols() - 1;  // off by one at the end
      for (int64_t c = 0; c <= end; ++c) y.set(r, c, a.at(r, c) + b.at(r, c));
    }
    return 0;
  });
}

// RES-01: max over 8-wide chunks without a tail mask. NaN-propagating otherwise, so a NaN
// pattern read from beyond the row shows up in the result.
int run_row_overread(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                     const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_reduction(in, n_in, out, n_out, call)) return rc;
    const RowView x(in[0]);
    constexpr int64_t kVector = 8;
    std::vector<float> loaded;
    for (int64_t r = 0; r < x.rows(); ++r) {
      loaded.clear();
      for (int64_t c0 = 0; c0 < x.cols(); c0 += kVector) {
        for (int64_t j = 0; j < kVector; ++j) loaded.push_back(x.at(r, c0 + j));  // no `c0 + j < N`
      }
      const float m = max_propagating(loaded.data(), static_cast<int64_t>(loaded.size()));
      store(out[0], reduced_offset(out[0], r), m);
    }
    return 0;
  });
}

// RES-01: only positive (and NaN) results are stored; zeros are "already there".
int run_relu_skips(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_arity(call, n_in, 1, n_out, 1)) return rc;
    if (!same_shape(in[0], out[0])) return fail(call, "shapes differ");
    const RowView x(in[0]), y(out[0]);
    for (int64_t r = 0; r < x.rows(); ++r) {
      for (int64_t c = 0; c < x.cols(); ++c) {
        const float v = x.at(r, c);
        if (v > 0.0f || std::isnan(v)) y.set(r, c, v);
      }
    }
    return 0;
  });
}

constexpr const char* kAdd = R"({"op":"add","profile":"strict"})";
constexpr const char* kMax = R"({"op":"max","profile":"strict"})";
constexpr const char* kRelu = R"({"op":"relu","profile":"strict"})";
constexpr const char* kSharedBudget = R"({"op":"sum","profile":"strict","accumulator":"f32",
  "arch":"sm_90a","budgets":{"shared_bytes":16384,"threads_per_block":256}})";
constexpr const char* kSpillBudget = R"({"op":"matmul","profile":"strict","accumulator":"f32",
  "arch":"sm_90a","budgets":{"registers_per_thread":32,"spill_bytes":0}})";
constexpr const char* kTmemBudget = R"({"op":"softmax","profile":"strict","accumulator":"f32",
  "arch":"sm_100a","budgets":{"tmem_columns":512}})";

#ifdef KCV_EXAMPLES_DEVICE_DIR
constexpr const char* kSharedLog = KCV_EXAMPLES_DEVICE_DIR "/block_sum_32k.sm_90a.ptxas.log";
constexpr const char* kSpillLog = KCV_EXAMPLES_DEVICE_DIR "/register_tile_matmul.sm_90a.ptxas.log";
constexpr const char* kTmemPtx = KCV_EXAMPLES_DEVICE_DIR "/tmem_alloc_544.sm_100a.ptx";
#else
constexpr const char* kSharedLog = nullptr;
constexpr const char* kSpillLog = nullptr;
constexpr const char* kTmemPtx = nullptr;
#endif

}  // namespace

void add_redteam_res(KernelList& out) {
  out.push_back({"redteam.res01.write_past_end", "add", kAdd, run_write_past_end, nullptr});
  out.push_back({"redteam.res01.row_overread_vector_tail", "max", kMax, run_row_overread, nullptr});
  out.push_back({"redteam.res01.relu_skips_nonpositive", "relu", kRelu, run_relu_skips, nullptr});
  out.push_back({"redteam.res02.shared_32k_declares_16k", "sum", kSharedBudget, run_control_sum_pairwise,
                 kSharedLog});
  out.push_back({"redteam.res02.spills_declares_none", "matmul", kSpillBudget, run_control_matmul, kSpillLog});
  out.push_back({"redteam.res02.tmem_544_columns", "softmax", kTmemBudget, run_control_softmax, kTmemPtx});
}

}  // namespace kcv::examples
