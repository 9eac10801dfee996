// File: glr/kernels/pipeline.cuh
// forward_stages / backward_stages of pipeline.hpp: the stage sequences of stage_sequence.cuh with
// the CUDA launch policy (kThreads per CTA on the caller's stream; a launch error comes back with
// the stage's name and file:line). Included by member_<name>.cu, which instantiates them.
#pragma once

#include "glr/kernels/launch_stage.cuh"
#include "glr/kernels/pipeline.hpp"
#include "glr/kernels/stage_sequence.cuh"
#include "glr/launch/cuda_status.hpp"

namespace kcv::glr::gpu::detail {

struct CudaLaunch {
  cudaStream_t stream;

  template <typename Kernel>
  Status operator()(const char* stage, Kernel kernel, dim3 grid, std::size_t shared_bytes,
                    const Params& p) const {
    const cudaError_t e = launch(kernel, grid, shared_bytes, stream, p);
    if (e == cudaSuccess) return {};
    return cuda_error(e, stage, __FILE__, __LINE__);
  }
};

template <GateKind kGate, bool kDelta>
Status forward_stages(const Params& p, cudaStream_t stream) {
  return forward_sequence<kGate, kDelta>(p, CudaLaunch{stream});
}

template <GateKind kGate, bool kDelta>
Status backward_stages(const Params& p, cudaStream_t stream) {
  return backward_sequence<kGate, kDelta>(p, CudaLaunch{stream});
}

}  // namespace kcv::glr::gpu::detail
