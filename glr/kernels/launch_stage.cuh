// File: glr/kernels/launch_stage.cuh
// launch(kernel, grid, shared_bytes, stream, args...) for the stage kernels: raises the kernel's
// dynamic shared-memory limit when it needs more than the default 48 KB, launches kThreads
// threads per CTA and returns the launch's error code (callers wrap it in KCV_GLR_CUDA for
// file:line). Arguments convert to the kernel's parameter types, as in a plain call.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

#include "glr/kernels/config.hpp"

namespace kcv::glr::gpu::detail {

template <typename... Args>
cudaError_t launch(void (*kernel)(Args...), dim3 grid, std::size_t shared_bytes,
                   cudaStream_t stream, std::type_identity_t<Args>... args) {
  if (shared_bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(shared_bytes));
    if (e != cudaSuccess) return e;
  }
  kernel<<<grid, kThreads, shared_bytes, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace kcv::glr::gpu::detail
