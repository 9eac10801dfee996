// File: src/numeric/float_format.hpp
// Binary floating formats described by their field widths, and exact conversion between an fp64
// value and a format's bit pattern done entirely in integer arithmetic. Doing it on integers (not
// with C casts) makes the result independent of the host FPU's rounding, FTZ and DAZ modes and
// gives one rounding from the fp64 value, never a double rounding through fp32.
#pragma once

#include <cstdint>

#include "kcv/dtype.hpp"

namespace kcv::numeric {

struct FloatFormat {
  int exp_bits;   // width of the exponent field
  int mant_bits;  // width of the stored mantissa (p - 1)

  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  int emin() const { return 1 - bias(); }
  int emax() const { return bias(); }
  uint64_t sign_mask() const { return uint64_t{1} << (exp_bits + mant_bits); }
  uint64_t exp_mask() const { return ((uint64_t{1} << exp_bits) - 1) << mant_bits; }
  uint64_t mant_mask() const { return (uint64_t{1} << mant_bits) - 1; }
  uint64_t quiet_bit() const { return uint64_t{1} << (mant_bits - 1); }
};

inline constexpr FloatFormat kBinary64{11, 52};
inline constexpr FloatFormat kBinary32{8, 23};
inline constexpr FloatFormat kBinary16{5, 10};
inline constexpr FloatFormat kBfloat16{8, 7};

/// The format of a floating dtype. @pre is_floating(t)
inline FloatFormat format_of(DType t) {
  switch (t) {
    case DType::kF64: return kBinary64;
    case DType::kF32: return kBinary32;
    case DType::kF16: return kBinary16;
    default: return kBfloat16;
  }
}

/// Bits of x (given as fp64 bits) rounded to `f` with round-to-nearest-even. NaN keeps the top
/// payload bits that fit and gets the quiet bit; overflow gives infinity.
uint64_t round_from_f64_bits(FloatFormat f, uint64_t x_bits);
/// fp64 bits of the exact value of a bit pattern of `f` (always representable in fp64).
uint64_t widen_to_f64_bits(FloatFormat f, uint64_t bits);

}  // namespace kcv::numeric
