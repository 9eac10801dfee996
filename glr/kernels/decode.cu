// File: glr/kernels/decode.cu
// The decode kernel (fla's fused_recurrent_*): one warp per (sequence, value head), the body in
// decode_kernel.cuh. Meant for a few tokens per call, not for throughput on long sequences.
#include "glr/kernels/decode.hpp"
#include "glr/kernels/decode_kernel.cuh"

namespace kcv::glr::gpu::detail {
namespace {

// One block per SM at least, said explicitly: with the block size alone ptxas plans for the 32
// resident blocks an SM can hold, caps the kernel at 65536 / (32 · 32) = 64 registers and spills
// (8 bytes, which RES-02's zero-spill budget refuses); allowed more, it needs 116 and no stack.
__global__ void __launch_bounds__(kDecodeWarp, 1) decode_kernel(DecodeParams p) {
  extern __shared__ float smem[];
  decode_block(p, blockIdx.x, smem);
}

}  // namespace

cudaError_t launch_decode(const DecodeParams& p, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(p.sequences * p.v_heads);
  const auto shared = static_cast<std::size_t>(3 * p.key_dim) * sizeof(float);
  decode_kernel<<<blocks, kDecodeWarp, shared, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kcv::glr::gpu::detail
