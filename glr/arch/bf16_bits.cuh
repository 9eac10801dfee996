// File: glr/arch/bf16_bits.cuh
// bf16 values as the tensor-core atoms see them: 16-bit patterns, two to a 32-bit register, the
// element with the lower index (lower address) in the low half. Conversion from fp32 rounds to
// nearest even (NaN stays NaN), on the device and in the host emulation alike.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#if defined(KCV_GLR_HOST_EMULATION)
#include <cstring>
#endif

namespace kcv::glr::arch {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ std::uint16_t bf16_bits(bf16 x) {
#if defined(KCV_GLR_HOST_EMULATION)
  std::uint16_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#else
  return __bfloat16_as_ushort(x);
#endif
}

__device__ __forceinline__ float bf16_bits_to_float(std::uint32_t bits16) {
  const std::uint32_t w = bits16 << 16;
#if defined(KCV_GLR_HOST_EMULATION)
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
#else
  return __uint_as_float(w);
#endif
}

/// Two fp32 values rounded to bf16 and packed: lo in bits 0–15, hi in bits 16–31.
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  return static_cast<std::uint32_t>(bf16_bits(__float2bfloat16_rn(lo))) |
         (static_cast<std::uint32_t>(bf16_bits(__float2bfloat16_rn(hi))) << 16);
}

/// The low (half 0) or high (half 1) bf16 of a packed register, as fp32 (exact).
__device__ __forceinline__ float unpack_bf16(std::uint32_t reg, int half) {
  return bf16_bits_to_float(half == 0 ? (reg & 0xffffu) : (reg >> 16));
}

}  // namespace kcv::glr::arch
