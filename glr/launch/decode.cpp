// File: glr/launch/decode.cpp
// The public decode launcher of include/kcv/glr/gpu.hpp: validate and fill DecodeParams
// (decode_params.cpp), launch decode.cu's kernel.
#include "glr/kernels/decode.hpp"

#include "glr/launch/cuda_status.hpp"
#include "glr/launch/decode_params.hpp"
#include "kcv/glr/gpu.hpp"

namespace kcv::glr::gpu {

Status decode(const Dims& dims, const Config& cfg, const DecodeInputs& in, float* o, float* state,
              cudaStream_t stream) {
  Expected<detail::DecodeParams> p = detail::decode_params(dims, cfg, in, o, state);
  if (!p) return p.error();
  KCV_GLR_CUDA(detail::launch_decode(*p, stream));
  return {};
}

}  // namespace kcv::glr::gpu
