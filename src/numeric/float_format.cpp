// File: src/numeric/float_format.cpp
// Integer implementation of RN-even narrowing from fp64 and exact widening to fp64.
// Narrowing writes the finite value x = sig * 2^e as r * 2^q where q is the target's quantum
// (ulp) at |x| and r = round_half_even(sig * 2^(e-q)); the target's bit pattern is then
// ((q + m - emin) << m) + r, which also handles subnormals (q = emin - m gives bits = r) and
// the carry into the next binade or into infinity when r reaches 2^(m+1).
#include "numeric/float_format.hpp"

#include <bit>

namespace kcv::numeric {
namespace {

// sig >> shift rounded half to even; shift >= 1.
uint64_t shift_round_even(uint64_t sig, int shift) {
  if (shift >= 64) {
    return 0;  // sig < 2^53 so the value is below half of the smallest step
  }
  const uint64_t kept = sig >> shift;
  const uint64_t rest = sig & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (kept & 1) != 0)) {
    return kept + 1;
  }
  return kept;
}

uint64_t narrow_nan(FloatFormat f, uint64_t sign, uint64_t payload52) {
  const uint64_t payload = payload52 >> (kBinary64.mant_bits - f.mant_bits);
  return sign | f.exp_mask() | f.quiet_bit() | payload;
}

uint64_t narrow_finite(FloatFormat f, uint64_t sign, uint64_t sig, int e) {
  // value = sig * 2^e, sig > 0
  const int k = e + (63 - std::countl_zero(sig));  // floor(log2 value)
  if (k > f.emax()) {
    return sign | f.exp_mask();
  }
  const int q = (k > f.emin() ? k : f.emin()) - f.mant_bits;
  const int shift = q - e;
  const uint64_t r = shift > 0 ? shift_round_even(sig, shift) : sig << -shift;
  if (r == 0) {
    return sign;
  }
  const uint64_t bits = (static_cast<uint64_t>(q + f.mant_bits - f.emin()) << f.mant_bits) + r;
  return sign | (bits >= f.exp_mask() ? f.exp_mask() : bits);
}

}  // namespace

uint64_t round_from_f64_bits(FloatFormat f, uint64_t x_bits) {
  const uint64_t sign = (x_bits >> 63) != 0 ? f.sign_mask() : 0;
  const int exp_field = static_cast<int>((x_bits >> 52) & 0x7FF);
  const uint64_t mant = x_bits & kBinary64.mant_mask();
  if (exp_field == 0x7FF) {
    return mant == 0 ? (sign | f.exp_mask()) : narrow_nan(f, sign, mant);
  }
  if (exp_field == 0) {
    return mant == 0 ? sign : narrow_finite(f, sign, mant, -1074);
  }
  return narrow_finite(f, sign, mant | (uint64_t{1} << 52), exp_field - 1075);
}

uint64_t widen_to_f64_bits(FloatFormat f, uint64_t bits) {
  const uint64_t sign = (bits & f.sign_mask()) != 0 ? (uint64_t{1} << 63) : 0;
  const int exp_field = static_cast<int>((bits & f.exp_mask()) >> f.mant_bits);
  const uint64_t mant = bits & f.mant_mask();
  const int up = kBinary64.mant_bits - f.mant_bits;
  if (exp_field == (1 << f.exp_bits) - 1) {
    return sign | kBinary64.exp_mask() | (mant << up);  // Inf, or NaN with its payload
  }
  if (exp_field == 0 && mant == 0) {
    return sign;
  }
  int e = exp_field == 0 ? f.emin() : exp_field - f.bias();  // value = 1.m or 0.m times 2^e
  uint64_t sig = exp_field == 0 ? mant : (mant | (uint64_t{1} << f.mant_bits));
  // Normalize so that the hidden bit sits at position mant_bits (narrow subnormals are normal
  // in fp64 since every supported format has a smaller exponent range).
  while ((sig >> f.mant_bits) == 0) {
    sig <<= 1;
    --e;
  }
  const uint64_t frac = (sig & f.mant_mask()) << up;
  return sign | (static_cast<uint64_t>(e + kBinary64.bias()) << 52) | frac;
}

}  // namespace kcv::numeric
