// File: glr/tiles/convert.cuh
// Element conversions between the storage types of the GLR tensors (bf16, fp32) and the fp32 the
// stages compute in. Rounding to bf16 is round-to-nearest-even.
#pragma once

#include <cuda_bf16.h>

namespace kcv::glr::gpu::detail {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);

template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

}  // namespace kcv::glr::gpu::detail
