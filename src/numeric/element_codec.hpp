// File: src/numeric/element_codec.hpp
// Per-element decode/encode for the bulk HostTensor paths (to_f64, assignment from fp64 values,
// recoding): the same bits as decode()/encode() in kcv/dtype.hpp, for every input. The common
// class of each format goes through a few integer operations inline; every other input falls
// back to decode()/encode() themselves:
//  - decode of a normal binary32/binary16/bfloat16 value rebiases the exponent and widens the
//    mantissa (exact, as widen_to_f64_bits); zeros, subnormals, infinities and NaNs fall back;
//  - encode of an fp64 value whose rounded result is a normal number (the exponent of |x| within
//    [emin, emax]) is the RN-even rounding of the rebiased bit pattern, a carry out of the top
//    binade giving infinity (as narrow_finite); zeros, subnormal results, overflow, infinities and
//    NaNs fall back.
// Integer arithmetic only, so the host FPU's FTZ/DAZ and rounding modes never matter (an
// in-process candidate built with fast-math can set them). The loops are written so that a
// compiler can vectorize the fast part: each element's fast result is computed unconditionally,
// a flag says whether any element of a block needs the fallback, and a second pass fixes those.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kcv/dtype.hpp"
#include "numeric/float_format.hpp"

namespace kcv::numeric {

/// The unsigned integer type holding one element of T.
template <DType T>
using StorageOf = std::conditional_t<
    T == DType::kF64 || T == DType::kI64, uint64_t,
    std::conditional_t<T == DType::kF32 || T == DType::kI32, uint32_t,
                       std::conditional_t<T == DType::kBool, uint8_t, uint16_t>>>;

template <typename S>
inline S load_element(const std::byte* p) {
  S v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename S>
inline void store_element(std::byte* p, S v) {
  std::memcpy(p, &v, sizeof v);
}

/// A narrow binary format of E exponent and M stored mantissa bits (fp32, fp16, bf16).
template <DType T, int E, int M>
struct NarrowCodec {
  using S = StorageOf<T>;
  static constexpr int kBias = (1 << (E - 1)) - 1;
  static constexpr int kUp = 52 - M;  // mantissa bits fp64 has beyond this format's
  static constexpr uint64_t kAbs = (uint64_t{1} << (E + M)) - 1;
  static constexpr uint64_t kExpAll = ((uint64_t{1} << E) - 1) << M;  // +infinity
  static constexpr uint64_t kMinNormal = uint64_t{1} << M;
  static constexpr uint64_t kQuiet = uint64_t{1} << (M - 1);
  // fp64 exponent field minus this format's, at the same value: the rebias in either direction.
  static constexpr uint64_t kRebias = static_cast<uint64_t>(1023 - kBias) << 52;
  // |x| with 2^emin <= |x| < 2^(emax+1): the rounded result is normal or (carry) infinity.
  static constexpr uint64_t kEncodeLo = static_cast<uint64_t>(1023 + 1 - kBias) << 52;
  static constexpr uint64_t kEncodeSpan = static_cast<uint64_t>(2 * kBias) << 52;

  /// True when decode_fast(bits) is the value (a normal number).
  static bool decodes_fast(S bits) { return (bits & kAbs) - kMinNormal < kExpAll - kMinNormal; }
  static uint64_t decode_fast(S bits) {
    const uint64_t a = bits & kAbs;
    const uint64_t sign = static_cast<uint64_t>((bits >> (E + M)) & 1) << 63;
    return ((a << kUp) + kRebias) | sign;
  }
  static double decode(S bits) {
    return decodes_fast(bits) ? std::bit_cast<double>(decode_fast(bits)) : kcv::decode(T, bits);
  }

  static bool encodes_fast(uint64_t x_bits) {
    return (x_bits & ~(uint64_t{1} << 63)) - kEncodeLo < kEncodeSpan;
  }
  static S encode_fast(uint64_t x_bits) {
    const uint64_t a = x_bits & ~(uint64_t{1} << 63);
    const uint64_t sign = (x_bits >> 63) << (E + M);
    // (a - rebias) >> kUp rounded half to even: add half - 1 and the kept part's lowest bit.
    const uint64_t lsb = (a >> kUp) & 1;
    const uint64_t r = (a - kRebias + ((uint64_t{1} << (kUp - 1)) - 1) + lsb) >> kUp;
    return static_cast<S>(sign | r);
  }
  static S encode(double x) {
    const auto b = std::bit_cast<uint64_t>(x);
    return encodes_fast(b) ? encode_fast(b) : static_cast<S>(kcv::encode(T, x));
  }
  /// encode(decode(bits)): the bits, a NaN with its quiet bit set.
  static S recode(S bits) { return (bits & kAbs) > kExpAll ? static_cast<S>(bits | kQuiet) : bits; }
};

template <DType T>
struct Codec;

template <>
struct Codec<DType::kF32> : NarrowCodec<DType::kF32, 8, 23> {};
template <>
struct Codec<DType::kF16> : NarrowCodec<DType::kF16, 5, 10> {};
template <>
struct Codec<DType::kBF16> : NarrowCodec<DType::kBF16, 8, 7> {};

template <>
struct Codec<DType::kF64> {
  using S = uint64_t;
  static bool decodes_fast(S) { return true; }
  static uint64_t decode_fast(S bits) { return bits; }
  static double decode(S bits) { return std::bit_cast<double>(bits); }
  static bool encodes_fast(uint64_t) { return true; }
  static S encode_fast(uint64_t x_bits) { return x_bits; }
  static S encode(double x) { return std::bit_cast<uint64_t>(x); }
  static S recode(S bits) { return bits; }
};

/// Integer and bool types: decode inline, encode through encode() (rounding and saturation).
template <DType T>
struct IntCodec {
  using S = StorageOf<T>;
  static bool decodes_fast(S) { return false; }
  static uint64_t decode_fast(S) { return 0; }
  static double decode(S bits) {
    if constexpr (T == DType::kI32) return static_cast<double>(static_cast<int32_t>(bits));
    if constexpr (T == DType::kI64) return static_cast<double>(static_cast<int64_t>(bits));
    return bits != 0 ? 1.0 : 0.0;
  }
  static bool encodes_fast(uint64_t) { return false; }
  static S encode_fast(uint64_t) { return 0; }
  static S encode(double x) { return static_cast<S>(kcv::encode(T, x)); }
  static S recode(S bits) {
    if constexpr (T == DType::kI32) return bits;  // every int32 is exact in fp64
    if constexpr (T == DType::kBool) return bits != 0 ? 1 : 0;
    return encode(decode(bits));  // int64 beyond 2^53 rounds through fp64
  }
};

template <>
struct Codec<DType::kI32> : IntCodec<DType::kI32> {};
template <>
struct Codec<DType::kI64> : IntCodec<DType::kI64> {};
template <>
struct Codec<DType::kBool> : IntCodec<DType::kBool> {};

/// Elements per block of the two-pass loops below.
inline constexpr std::size_t kCodecBlock = 256;

/// out[k] = decode(T, element k), elements `stride` apart from `p` (in elements).
template <DType T>
void decode_run(const std::byte* p, int64_t stride, std::size_t count, double* out) {
  using C = Codec<T>;
  using S = typename C::S;
  const auto step = static_cast<std::ptrdiff_t>(stride) * static_cast<std::ptrdiff_t>(sizeof(S));
  for (std::size_t begin = 0; begin < count; begin += kCodecBlock) {
    const std::size_t end = begin + kCodecBlock < count ? begin + kCodecBlock : count;
    bool slow = false;
    if constexpr (T == DType::kF64 || T == DType::kF32 || T == DType::kF16 || T == DType::kBF16) {
      for (std::size_t k = begin; k < end; ++k) {
        const S bits = load_element<S>(p + static_cast<std::ptrdiff_t>(k) * step);
        out[k] = std::bit_cast<double>(C::decode_fast(bits));
        slow |= !C::decodes_fast(bits);
      }
    } else {
      slow = true;
    }
    if (!slow) continue;
    for (std::size_t k = begin; k < end; ++k) {
      const S bits = load_element<S>(p + static_cast<std::ptrdiff_t>(k) * step);
      if (!C::decodes_fast(bits)) out[k] = C::decode(bits);
    }
  }
}

/// Element k (`stride` elements apart from `p`) = encode(T, values[k]).
template <DType T>
void encode_run(const double* values, std::size_t count, std::byte* p, int64_t stride) {
  using C = Codec<T>;
  using S = typename C::S;
  const auto step = static_cast<std::ptrdiff_t>(stride) * static_cast<std::ptrdiff_t>(sizeof(S));
  for (std::size_t begin = 0; begin < count; begin += kCodecBlock) {
    const std::size_t end = begin + kCodecBlock < count ? begin + kCodecBlock : count;
    bool slow = false;
    if constexpr (T == DType::kF64 || T == DType::kF32 || T == DType::kF16 || T == DType::kBF16) {
      for (std::size_t k = begin; k < end; ++k) {
        const auto x = std::bit_cast<uint64_t>(values[k]);
        store_element<S>(p + static_cast<std::ptrdiff_t>(k) * step, C::encode_fast(x));
        slow |= !C::encodes_fast(x);
      }
    } else {
      slow = true;
    }
    if (!slow) continue;
    for (std::size_t k = begin; k < end; ++k) {
      if (!C::encodes_fast(std::bit_cast<uint64_t>(values[k])))
        store_element<S>(p + static_cast<std::ptrdiff_t>(k) * step, C::encode(values[k]));
    }
  }
}

/// Calls fn(Codec-tag) for the dtype: fn.template operator()<T>().
template <typename Fn>
decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF64:
      return fn.template operator()<DType::kF64>();
    case DType::kF32:
      return fn.template operator()<DType::kF32>();
    case DType::kF16:
      return fn.template operator()<DType::kF16>();
    case DType::kBF16:
      return fn.template operator()<DType::kBF16>();
    case DType::kI32:
      return fn.template operator()<DType::kI32>();
    case DType::kI64:
      return fn.template operator()<DType::kI64>();
    case DType::kBool:
      return fn.template operator()<DType::kBool>();
  }
  return fn.template operator()<DType::kF32>();
}

}  // namespace kcv::numeric
