// File: tests/e2e/misbehaving.cpp
// Kernels that misuse the C ABI of kcv_kernel.h in the ways a user's library can: a malformed
// contract and an unknown op (input errors: exit 2 with a message), and kernels that report an
// error, throw, or crash (candidate misbehaviour: failed gates, exit 1). kcv itself must never
// crash on any of them.
#include <kcv/kcv_kernel.h>

#include <cstdio>
#include <stdexcept>

namespace {

int relu(const kcv_tensor* in, int32_t, kcv_tensor* out, int32_t, const kcv_call*) {
  const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const auto* x = static_cast<const float*>(in[0].data);
  auto* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const float v = x[i * in[0].strides[0] + j * in[0].strides[1]];
      y[i * out[0].strides[0] + j * out[0].strides[1]] = v > 0.0f ? v : 0.0f;
    }
  }
  return 0;
}

int returns_error(const kcv_tensor*, int32_t, kcv_tensor*, int32_t, const kcv_call* call) {
  std::snprintf(call->error, static_cast<size_t>(call->error_capacity), "refusing to run");
  return 7;
}

int throws(const kcv_tensor*, int32_t, kcv_tensor*, int32_t, const kcv_call*) {
  throw std::runtime_error("kernel threw");
}

int crashes(const kcv_tensor*, int32_t, kcv_tensor* out, int32_t, const kcv_call*) {
  volatile float* nowhere = nullptr;
  *nowhere = static_cast<const float*>(out[0].data)[0];
  return 0;
}

const kcv_kernel kKernels[] = {
    {"e2e.bad_contract", "relu", "{\"inputs\": [\"f32\"", relu, nullptr},
    {"e2e.unknown_op", "no_such_op", nullptr, relu, nullptr},
    {"e2e.returns_error", "relu", nullptr, returns_error, nullptr},
    {"e2e.throws", "relu", nullptr, throws, nullptr},
    {"e2e.crashes", "relu", nullptr, crashes, nullptr},
};

}  // namespace

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) {
  *count = static_cast<int32_t>(sizeof(kKernels) / sizeof(kKernels[0]));
  return kKernels;
}
