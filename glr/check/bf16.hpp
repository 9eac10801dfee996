// File: glr/check/bf16.hpp
// Host-side bf16: round-to-nearest-even from fp32 (what the device's __float2bfloat16_rn does)
// and the exact widening back. The harness rounds every generated input once, sends the bits to
// the GPU and the widened values to the fp64 reference, so both see the same numbers.
#pragma once

#include <cstdint>
#include <cstring>

namespace kcv::glr::check {

inline float bf16_to_float(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet NaN, sign kept
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline constexpr std::uint16_t kBf16NaN = 0x7fc0;

}  // namespace kcv::glr::check
