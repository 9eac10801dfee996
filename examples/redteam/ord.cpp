// File: examples/redteam/ord.cpp
// Red team for the ORD family: sums that are accurate at the reference length, order and
// launch configuration, and go wrong when one of those changes.
//  ORD-01  precision silently lowered for long rows (bf16 block accumulators beyond 4096
//          elements; an fp16 running sum past element 4096): nonzero-mean data stagnates.
//  ORD-02  declared deterministic, yet the block order moves from call to call (the twin of
//          control.sum_nondeterministic, which says so), or the blocking follows the input's
//          address alignment.
//  ORD-03  non-default block sizes launch floor(N / block) blocks; the multi-threaded path
//          keeps per-thread partial sums in bf16.
#include <cstdint>

#include "kernels.hpp"
#include "numerics.hpp"
#include "patterns.hpp"

namespace kcv::examples {

namespace {

// ORD-01: rows longer than 4096 are summed in blocks of 1024 whose accumulators are bf16.
float sum_bf16_blocks_when_long(const std::vector<float>& row) {
  const int64_t n = static_cast<int64_t>(row.size());
  if (n <= 4096) return sum_pairwise(row.data(), n);
  constexpr int64_t kBlock = 1024;
  std::vector<float> partials;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    float acc = 0.0f;
    for (int64_t i = b0; i < std::min(n, b0 + kBlock); ++i) acc = round_bf16(acc + row[i]);
    partials.push_back(acc);
  }
  return sum_pairwise(partials.data(), static_cast<int64_t>(partials.size()));
}

// ORD-01: fp32 for the first 4096 elements, an fp16 running sum after that.
float sum_fp16_past_4096(const std::vector<float>& row) {
  const int64_t n = static_cast<int64_t>(row.size());
  const int64_t head = std::min<int64_t>(n, 4096);
  float s = sum_sequential(row.data(), head);
  if (n <= head) return s;
  s = round_f16(s);
  for (int64_t i = head; i < n; ++i) s = round_f16(s + row[i]);
  return s;
}

// ORD-02: peel elements until the row pointer is 64-byte aligned, then 16 lanes, then a tree
// over the lanes. The peel count, and with it every lane's set of elements, follows the address.
float sum_aligned_lanes(const float* p, int64_t n) {
  constexpr int64_t kLanes = 16;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const int64_t peel = std::min<int64_t>(n, static_cast<int64_t>((64 - addr % 64) % 64 / 4));
  const float head = sum_sequential(p, peel);
  float lanes[kLanes] = {};
  int64_t i = peel;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += p[i + l];
  }
  for (int64_t w = kLanes / 2; w >= 1; w /= 2) {
    for (int64_t l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  }
  return head + lanes[0] + sum_sequential(p + i, n - i);
}

int run_alignment_blocking(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                           const kcv_call* call) {
  return guarded(call, [&] {
    if (int rc = check_reduction(in, n_in, out, n_out, call)) return rc;
    const RowView x(in[0]);
    std::vector<float> row;
    for (int64_t r = 0; r < x.rows(); ++r) {
      float s;
      if (in[0].dtype == KCV_F32 && x.col_stride() == 1) {
        s = sum_aligned_lanes(static_cast<const float*>(in[0].data) + x.row_offset(r), x.cols());
      } else {
        gather_row(x, r, row);
        s = sum_pairwise(row.data(), x.cols());
      }
      store(out[0], reduced_offset(out[0], r), s);
    }
    return 0;
  });
}

// ORD-03: the default launch covers the row (ceil); a requested block size launches
// floor(N / block) blocks and drops the tail.
float sum_grid(const std::vector<float>& row, int block) {
  const int64_t n = static_cast<int64_t>(row.size());
  const int64_t b = block > 0 ? block : 256;
  const int64_t blocks = block > 0 ? n / b : (n + b - 1) / b;
  float total = 0.0f;
  for (int64_t k = 0; k < blocks; ++k) total += sum_sequential(row.data() + k * b, std::min(b, n - k * b));
  return total;
}

// ORD-03: with threads > 1 the row is split into one chunk per thread and each thread keeps
// its running sum in bf16 (a "register-saving" split-K); one thread sums pairwise in fp32.
float sum_threaded_bf16(const std::vector<float>& row, int threads) {
  const int64_t n = static_cast<int64_t>(row.size());
  if (threads <= 1) return sum_pairwise(row.data(), n);
  float total = 0.0f;
  for (int t = 0; t < threads; ++t) {
    float acc = 0.0f;
    for (int64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) acc = round_bf16(acc + row[i]);
    total += acc;
  }
  return total;
}

int run_bf16_blocks(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] { return row_reduce(in, n_in, out, n_out, call, sum_bf16_blocks_when_long); });
}

int run_fp16_past_4096(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  return guarded(call, [&] { return row_reduce(in, n_in, out, n_out, call, sum_fp16_past_4096); });
}

// ORD-02: the block order of control.sum_nondeterministic (it moves on every call), under a
// contract that keeps the default "deterministic": true.
int run_rotating_order(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  const uint64_t start = call_rotation();
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call,
                      [start](const std::vector<float>& row) { return sum_rotated_blocks(row, start); });
  });
}

int run_grid_floor(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  const int block = call != nullptr ? call->block : 0;
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call,
                      [block](const std::vector<float>& row) { return sum_grid(row, block); });
  });
}

int run_threaded_bf16(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out, const kcv_call* call) {
  const int threads = requested_threads(call);
  return guarded(call, [&] {
    return row_reduce(in, n_in, out, n_out, call,
                      [threads](const std::vector<float>& row) { return sum_threaded_bf16(row, threads); });
  });
}

constexpr const char* kSum = R"({"op":"sum","profile":"strict","accumulator":"f32"})";
constexpr const char* kSumGrid = R"({"op":"sum","profile":"strict","accumulator":"f32","tile":256,
  "launch_configs":[{"block":0,"threads":1},{"block":96,"threads":1},{"block":384,"threads":1}]})";
constexpr const char* kSumThreads = R"({"op":"sum","profile":"strict","accumulator":"f32",
  "launch_configs":[{"block":0,"threads":1},{"block":0,"threads":2},{"block":0,"threads":4}]})";

}  // namespace

void add_redteam_ord(KernelList& out) {
  out.push_back({"redteam.ord01.bf16_block_partials_long_rows", "sum", kSum, run_bf16_blocks, nullptr});
  out.push_back({"redteam.ord01.fp16_running_sum_past_4096", "sum", kSum, run_fp16_past_4096, nullptr});
  out.push_back({"redteam.ord02.call_order_rotates", "sum", kSum, run_rotating_order, nullptr});
  out.push_back({"redteam.ord02.alignment_dependent_blocking", "sum", kSum, run_alignment_blocking, nullptr});
  out.push_back({"redteam.ord03.grid_floor_other_blocks", "sum", kSumGrid, run_grid_floor, nullptr});
  out.push_back({"redteam.ord03.threaded_bf16_partials", "sum", kSumThreads, run_threaded_bf16, nullptr});
}

}  // namespace kcv::examples
