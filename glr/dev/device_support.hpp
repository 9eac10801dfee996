// File: glr/dev/device_support.hpp
// What the device checks of the tensor-core kernels share (device_check.cpp for the forward,
// device_check_backward.cpp for the backward): CUDA error checks that end the check program,
// device buffers, CUDA-event timing (median of repeated calls), fla's benchmark inputs drawn in
// the kernels' dtypes, the accuracy cases' spec (mma_spec) and a report row (bitwise comparison:
// same_bits, dev_case.hpp). Only for the check program (it exits on a CUDA error), never for
// library code.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "glr/dev/dev_case.hpp"
#include "glr/dev/mma_test_case.hpp"

namespace kcv::glr::dev {

#define CHECK_CUDA(call)                                                                          \
  do {                                                                                            \
    const cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                               \
    }                                                                                             \
  } while (0)

inline void check_status(const Status& st, const char* what) {
  if (!st) {
    std::fprintf(stderr, "%s: %s\n", what, st.error().to_string().c_str());
    std::exit(2);
  }
}

struct DeviceBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : bytes(n) {
    if (n > 0) CHECK_CUDA(cudaMalloc(&ptr, n));
  }
  template <typename T>
  static DeviceBuffer of(const std::vector<T>& v) {
    DeviceBuffer b(v.size() * sizeof(T));
    if (b.bytes > 0) CHECK_CUDA(cudaMemcpy(b.ptr, v.data(), b.bytes, cudaMemcpyHostToDevice));
    return b;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr, o.ptr);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

inline int multiprocessors() {
  int dev = 0, n = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

struct Row {
  std::string what, result;
  bool pass = true;
};

/// fla's benchmark inputs in the kernel dtypes, drawn fast (no reference needed). gate_width: 1
/// for a scalar gate g [T, HV], 128 for a per-channel one g [T, HV, 128] (each value
/// logsigmoid(N(0, 1)); channel 0 is the scalar gate's draw, so the other inputs are the same).
inline HostTensors random_inputs(std::int64_t b, std::int64_t t, std::int64_t h, std::uint64_t seed,
                                 std::int64_t gate_width = 1) {
  HostTensors x;
  x.dims.batch = b;
  x.dims.seq_len = t;
  x.dims.qk_heads = h;
  x.dims.v_heads = h;
  x.dims.key_dim = kMmaDim;
  x.dims.value_dim = kMmaDim;
  const std::int64_t rows = b * t * h;
  x.q.resize(static_cast<std::size_t>(rows * kMmaDim));
  x.k.resize(x.q.size());
  x.v.resize(x.q.size());
  x.g.resize(static_cast<std::size_t>(rows * gate_width));
  x.beta.resize(static_cast<std::size_t>(rows));
  x.h0.resize(static_cast<std::size_t>(b * h * kMmaDim * kMmaDim));
  const int workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int wk = 0; wk < workers; ++wk)
    pool.emplace_back([&, wk] {
      std::mt19937_64 rng(seed + 977 * wk);
      std::normal_distribution<float> n01;
      for (std::int64_t r = wk; r < rows; r += workers) {
        float nq = 0, nk = 0, q[kMmaDim], k[kMmaDim];
        for (int d = 0; d < kMmaDim; ++d) {
          q[d] = n01(rng);
          k[d] = n01(rng);
          nq += q[d] * q[d];
          nk += k[d] * k[d];
        }
        for (int d = 0; d < kMmaDim; ++d) {
          x.q[r * kMmaDim + d] = __float2bfloat16_rn(q[d] / std::sqrt(nq));
          x.k[r * kMmaDim + d] = __float2bfloat16_rn(k[d] / std::sqrt(nk));
          x.v[r * kMmaDim + d] = __float2bfloat16_rn(n01(rng));
        }
        const float z = n01(rng);
        x.g[r * gate_width] = -std::log1p(std::exp(-z));  // logsigmoid(N(0,1))
        x.beta[r] = __float2bfloat16_rn(1.0f / (1.0f + std::exp(-n01(rng))));
        for (std::int64_t d = 1; d < gate_width; ++d)
          x.g[r * gate_width + d] = -std::log1p(std::exp(-n01(rng)));
      }
      for (std::size_t i = wk; i < x.h0.size(); i += workers) x.h0[i] = 0.5f * n01(rng);
    });
  for (std::thread& th : pool) th.join();
  return x;
}

template <typename F>
double median_ms(F&& call, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) call();
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CHECK_CUDA(cudaEventRecord(a));
    call();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float x = 0;
    CHECK_CUDA(cudaEventElapsedTime(&x, a, b));
    ms.push_back(x);
  }
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// The stage profile: `call(times)` runs one timed launch sequence (appending to `times`); the
/// median milliseconds of each stage over `reps` calls, in launch order, named `prefix` + stage.
template <typename F>
std::vector<std::pair<std::string, double>> median_stages(F&& call, int reps,
                                                          const std::string& prefix) {
  std::vector<StageTimes> runs(static_cast<std::size_t>(reps));
  for (StageTimes& t : runs) call(t);
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t i = 0; i < runs.front().ms.size(); ++i) {
    std::vector<float> ms;
    for (const StageTimes& t : runs) ms.push_back(t.ms[i].second);
    std::sort(ms.begin(), ms.end());
    out.emplace_back(prefix + runs.front().ms[i].first, ms[ms.size() / 2]);
  }
  return out;
}

inline double rel_max_diff(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  double sq = 0, worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = __bfloat162float(a[i]), y = __bfloat162float(b[i]);
    sq += y * y;
    worst = std::max(worst, std::isfinite(x) ? std::fabs(x - y) : INFINITY);
  }
  return worst / std::sqrt(sq / static_cast<double>(a.size()));
}

}  // namespace kcv::glr::dev
