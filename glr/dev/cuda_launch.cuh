// File: glr/dev/cuda_launch.cuh
// The CUDA launch policy of the tensor-core kernels' launch sequences (forward_sequence,
// backward_sequence): <<<>>> on the caller's stream, 128 threads per CTA, the dynamic
// shared-memory limit raised per kernel, the launch error turned into a Status naming the stage.
// The host emulation's policy is HostLaunch in host_runner.cpp.
#pragma once

#include <cstddef>

#include "glr/dev/chunked_mma_forward.hpp"
#include "glr/launch/cuda_status.hpp"

namespace kcv::glr::dev {

struct CudaLaunch {
  cudaStream_t stream;

  template <typename Params>
  Status operator()(const char* stage, void (*kernel)(Params), dim3 grid, std::size_t shared_bytes,
                    const Params& p) const {
    KCV_GLR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared_bytes)));
    if (grid.x == 0) return {};
    kernel<<<grid, kMmaThreads, shared_bytes, stream>>>(p);
    const cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return {};
    return gpu::detail::cuda_error(e, stage, __FILE__, __LINE__);
  }
};

}  // namespace kcv::glr::dev
