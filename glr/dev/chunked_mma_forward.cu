// File: glr/dev/chunked_mma_forward.cu
// The CUDA launcher of the tensor-core forward: the launch sequence of chunked_mma_forward.cuh with
// <<<>>> on the caller's stream, 128 threads per CTA, the dynamic shared-memory limit raised per
// kernel. Instantiates LA, SSD, DeltaNet and GDN at value tiles 32 and 64. Build alone for sm_90a
// (registers, spills, shared memory per kernel):
//   nvcc -std=c++20 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I. -Iinclude
//     -c glr/dev/chunked_mma_forward.cu
#include "glr/dev/chunked_mma_forward.cuh"
#include "glr/launch/cuda_status.hpp"

namespace kcv::glr::dev {
namespace {

struct CudaLaunch {
  cudaStream_t stream;

  Status operator()(const char* stage, void (*kernel)(MmaForwardParams), dim3 grid,
                    std::size_t shared_bytes, const MmaForwardParams& p) const {
    KCV_GLR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared_bytes)));
    if (grid.x == 0) return {};
    kernel<<<grid, kMmaThreads, shared_bytes, stream>>>(p);
    const cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return {};
    return gpu::detail::cuda_error(e, stage, __FILE__, __LINE__);
  }
};

}  // namespace

Status mma_forward(Member member, const MmaForwardParams& p, int value_tile, cudaStream_t stream) {
  if (value_tile != 32 && value_tile != 64)
    return make_error(ErrorCode::kInvalidArgument, "value_tile must be 32 or 64", "value_tile");
  return for_mma_member(member, [&]<GateKind kGate, bool kDelta>() {
    if (value_tile == 32) return forward_sequence<kGate, kDelta, 32>(p, CudaLaunch{stream});
    return forward_sequence<kGate, kDelta, 64>(p, CudaLaunch{stream});
  });
}

}  // namespace kcv::glr::dev
