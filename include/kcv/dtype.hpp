// File: include/kcv/dtype.hpp
// Element types and exact bit-level arithmetic on them. Every conversion is done on bit patterns
// with round-to-nearest-even from a single fp64 value (no double rounding through fp32), keeps
// subnormals, and keeps NaN payloads as far as the narrower format allows (quiet bit set). The
// host FPU's FTZ/DAZ modes never affect these functions: 16-bit formats are handled in integer
// arithmetic, and fp32/fp64 classification reads bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kcv/expected.hpp"

namespace kcv {

/// Values equal the C ABI's kcv_dtype.
enum class DType : int32_t { kF64 = 0, kF32 = 1, kF16 = 2, kBF16 = 3, kI32 = 4, kI64 = 5, kBool = 6 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f64", "f32", "f16", "bf16", "i32", "i64", "bool"
/// Accepts the short names and the torch spellings ("float32", "bfloat16", "int64", ...).
Expected<DType> parse_dtype(std::string_view name);
bool is_floating(DType t);
/// Significand bits p including the hidden bit: 53, 24, 11, 8. @pre is_floating(t)
int significand_bits(DType t);
/// Unit roundoff u = 2^-p. @pre is_floating(t)
double unit_roundoff(DType t);

/// Bits of `x` rounded to `t` (RN-even; NaN payload kept where it fits), in the low bytes.
/// Integer types round to nearest (ties to even) and saturate; bool is x != 0.
uint64_t encode(DType t, double x);
/// The exact value of a bit pattern of type t.
double decode(DType t, uint64_t bits);
/// decode(t, encode(t, x)): x rounded to t.
double round_to(DType t, double x);

uint16_t f32_to_f16_bits(float x);
float f16_bits_to_f32(uint16_t bits);
uint16_t f32_to_bf16_bits(float x);
float bf16_bits_to_f32(uint16_t bits);
uint32_t f32_bits(float x);
float f32_from_bits(uint32_t bits);
uint64_t f64_bits(double x);
double f64_from_bits(uint64_t bits);

enum class FpClass { kZero, kSubnormal, kNormal, kPosInf, kNegInf, kNaN };
std::string_view fp_class_name(FpClass c);
/// Classification of a bit pattern of a floating type (integers are kZero or kNormal).
FpClass classify(DType t, uint64_t bits);
bool is_nonfinite(FpClass c);

/// Distance in units in the last place between two bit patterns of t, counting -0 and +0 as
/// adjacent-equal (distance 0). Any NaN gives UINT64_MAX.
uint64_t ulp_distance(DType t, uint64_t a_bits, uint64_t b_bits);
/// Spacing of t's representable numbers at |x| (the ulp of x); for subnormals the fixed spacing.
double ulp_of(DType t, double x);
/// True when x lies exactly halfway between two adjacent finite values of t.
bool is_tie(DType t, double x);
/// The smallest positive normal and subnormal values and the largest finite value of t.
double min_normal(DType t);
double min_subnormal(DType t);
double max_finite(DType t);

}  // namespace kcv
