// File: src/exec/sentinel.cpp
// Poison patterns. An output sentinel must be a value no correct kernel produces, or an
// unwritten element could pass as written: for floats it is a *signalling* NaN (quiet bit clear,
// nonzero payload, random sign) because IEEE arithmetic never returns one (every operation on a
// signalling NaN returns a quiet NaN, and new NaNs are quiet), so only a kernel that copies a
// signalling NaN it was given could write it. Integers get a magnitude of at least 2^30 (i32)
// or 2^62 (i64), bool a byte that is neither 0 nor 1. Input guards and padding get a fixed,
// different signalling NaN (or 0xA5 bytes), or random bits when guards are randomized.
#include "exec/sentinel.hpp"

#include "kcv/executor.hpp"
#include "kcv/rng.hpp"

namespace kcv {
namespace {

constexpr uint64_t kSentinelStream = 0x53454E54494E454Cull;  // "SENTINEL"

// A signalling NaN of a format with `mantissa_bits` (quiet bit = the top one) and sign bit `sign`.
uint64_t signalling_nan(uint64_t random, int mantissa_bits, int total_bits) {
  const uint64_t payload_mask = (uint64_t{1} << (mantissa_bits - 1)) - 1;  // below the quiet bit
  const uint64_t exponent = ((uint64_t{1} << (total_bits - 1 - mantissa_bits)) - 1)
                            << mantissa_bits;
  const uint64_t sign = (random >> 63) << (total_bits - 1);
  return sign | exponent | (random & payload_mask) | 1;  // | 1: payload nonzero (else infinity)
}

// Two's complement with the bit below the sign opposite to it: |v| >= 2^(bits-2).
uint64_t large_magnitude(uint64_t random, int bits) {
  const uint64_t sign = random >> 63;
  const uint64_t low = random & ((uint64_t{1} << (bits - 2)) - 1);
  return (sign << (bits - 1)) | ((1 - sign) << (bits - 2)) | low;
}

}  // namespace

uint64_t sentinel_bits(DType t, uint64_t seed) {
  const uint64_t r = CounterRng(seed, kSentinelStream).bits(0);
  switch (t) {
    case DType::kF64:
      return signalling_nan(r, 52, 64);
    case DType::kF32:
      return signalling_nan(r, 23, 32);
    case DType::kF16:
      return signalling_nan(r, 10, 16);
    case DType::kBF16:
      return signalling_nan(r, 7, 16);
    case DType::kI32:
      return large_magnitude(r, 32);
    case DType::kI64:
      return large_magnitude(r, 64);
    case DType::kBool:
      return (r & 0x7Full) | 0x80ull;
  }
  return r;
}

namespace exec {

uint64_t input_guard_bits(DType t) {
  switch (t) {
    case DType::kF64:
      return 0x7FF4A5A5A5A5A5A5ull;
    case DType::kF32:
      return 0x7FA5A5A5ull;
    case DType::kF16:
      return 0x7D25ull;
    case DType::kBF16:
      return 0x7FA5ull;
    case DType::kI32:
      return 0xA5A5A5A5ull;
    case DType::kI64:
      return 0xA5A5A5A5A5A5A5A5ull;
    case DType::kBool:
      return 0xA5ull;
  }
  return 0;
}

}  // namespace exec
}  // namespace kcv
