// File: glr/dev/chunked_mma_backward.cu
// The CUDA launcher of the tensor-core backward: the launch sequence of chunked_mma_backward.cuh
// (the recompute by the forward's kernels, the dH scan, the gradient kernel, the GVA group sum)
// with the CUDA launch policy of cuda_launch.cuh. Instantiates LA, SSD and DeltaNet at value
// tiles 32 and 64. Build alone for sm_90a (registers, spills, shared memory per kernel):
//   nvcc -std=c++20 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I. -Iinclude
//     -c glr/dev/chunked_mma_backward.cu
#include "glr/dev/chunked_mma_backward.cuh"
#include "glr/dev/cuda_launch.cuh"

namespace kcv::glr::dev {

Status mma_backward(Member member, const MmaBackwardParams& p, int value_tile,
                    cudaStream_t stream, StageTimes* times) {
  if (value_tile != 32 && value_tile != 64)
    return make_error(ErrorCode::kInvalidArgument, "value_tile must be 32 or 64", "value_tile");
  return for_mma_backward_member(member, [&]<GateKind kGate, bool kDelta>() {
    return launch_sequence(stream, times, [&](const CudaLaunch& launch) {
      if (value_tile == 32) return backward_sequence<kGate, kDelta, 32>(p, launch);
      return backward_sequence<kGate, kDelta, 64>(p, launch);
    });
  });
}

}  // namespace kcv::glr::dev
