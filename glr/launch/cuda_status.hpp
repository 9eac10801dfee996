// File: glr/launch/cuda_status.hpp
// CUDA errors as kcv::Status, llm.c's checking macros without the exit: KCV_GLR_CUDA(call)
// returns an Error naming the call, the CUDA error and file:line from the enclosing function when
// the call fails; KCV_GLR_TRY(status) passes a failed Status up. Kernel launches are checked with
// KCV_GLR_CUDA(cudaGetLastError()) right after the launch (launch configuration errors; faults
// inside a kernel surface at the caller's next synchronisation).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "glr/launch/errors.hpp"
#include "kcv/expected.hpp"

namespace kcv::glr::gpu::detail {

/// ErrorCode::kInternal, message "<cudaErrorName>: <description> in `<what>`", context file:line.
[[nodiscard]] Error cuda_error(cudaError_t code, const char* what, const char* file, int line);

}  // namespace kcv::glr::gpu::detail

#define KCV_GLR_CUDA(call)                                                               \
  do {                                                                                   \
    const cudaError_t kcv_glr_err_ = (call);                                             \
    if (kcv_glr_err_ != cudaSuccess)                                                     \
      return ::kcv::Status(                                                              \
          ::kcv::glr::gpu::detail::cuda_error(kcv_glr_err_, #call, __FILE__, __LINE__)); \
  } while (0)

#define KCV_GLR_TRY(status)                       \
  do {                                            \
    ::kcv::Status kcv_glr_status_ = (status);     \
    if (!kcv_glr_status_) return kcv_glr_status_; \
  } while (0)
