// File: glr/arch/exp_approx.cuh
// e^x for the tensor-core kernels' decay factors: the special-function unit's base-2 exponential
// of the fp32 product x·log2(e),
//   ex2.approx.ftz.f32  y, fl(x · log2 e)
// two instructions (FMUL, MUFU.EX2) where CUDA's expf takes eight. Its error, relative to e^x:
// the product's rounding, x·log2(e)·δ with |δ| ≤ u_f32, moves the result by a factor
// 2^{x log2(e) δ} ≈ 1 + x·δ, at most u_f32·|x|, and log2(e)'s own rounding to fp32 (0.23 u_f32
// relative) another 0.23·u_f32·|x|: 1.25·u_f32·|x| in all; ex2.approx adds at most 2 ulp
// (CUDA's __expf, the same two instructions, is documented at 2 + ⌊1.173·|x|⌋ ulp). A decay factor
// e^{G_i − G_j} of the chunk form has |x| ≤ G, so its error is about that of the fp32 difference
// G_i − G_j once more (docs/glr/precision-contract.md §2.1). Subnormal results are flushed to zero
// (ftz): a factor below 2^-126 contributes less than 2^-126 of its term. NaN stays NaN, +inf gives
// +inf and -inf gives +0, as expf. Host emulation: exp2 of the same rounded product, flushed the
// same way: the emulation carries the product's rounding, the larger part of the error, and not the
// unit's own ≤ 2 ulp.
#pragma once

#include "glr/arch/lanes.cuh"

#if defined(KCV_GLR_HOST_EMULATION)
#include <cfloat>
#include <cmath>
#endif

namespace kcv::glr::arch {

inline constexpr float kLog2e = 1.4426950408889634f;

/// e^x ≈ 2^{fl(x·log2 e)} (the file comment).
__device__ __forceinline__ float exp_approx(float x) {
  const float y2 = x * kLog2e;
#if defined(KCV_GLR_HOST_EMULATION)
  const float y = std::exp2(y2);
  return y < FLT_MIN ? 0.0f : y;  // ftz; NaN compares false and passes through
#elif defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(y2));
  return y;
#else
  return exp2f(y2);  // the host pass of a .cu file: parsed, never called
#endif
}

}  // namespace kcv::glr::arch
