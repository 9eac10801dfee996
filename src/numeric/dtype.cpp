// File: src/numeric/dtype.cpp
// Element type names, sizes and the encode/decode pair every other module reads values through.
// Floating conversions go through numeric/float_format (integer arithmetic, one RN-even
// rounding from fp64); integer conversions round half to even and saturate, and NaN encodes as
// integer 0 (there is no integer NaN; the choice is documented here because kernels differ).
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kcv/dtype.hpp"
#include "numeric/float_format.hpp"

namespace kcv {
namespace {

using numeric::FloatFormat;
using numeric::format_of;

// x rounded half to even to an integer value (still a double); x finite.
double round_half_even(double x) {
  if (std::fabs(x) >= 4503599627370496.0) {  // 2^52: already an integer
    return x;
  }
  const double fl = std::floor(x);
  const double diff = x - fl;  // exact for |x| < 2^52
  if (diff > 0.5 || (diff == 0.5 && std::fmod(fl, 2.0) != 0.0)) {
    return fl + 1.0;
  }
  return fl;
}

template <typename Int>
uint64_t encode_int(double x) {
  if (std::isnan(x)) {
    return 0;
  }
  constexpr double kLo = static_cast<double>(std::numeric_limits<Int>::min());
  // 2^31 / 2^63: the first value above the range (max itself is not representable for i64).
  constexpr double kHiExcl = -kLo;
  const double r = round_half_even(x);
  Int v = 0;
  if (r < kLo) {
    v = std::numeric_limits<Int>::min();
  } else if (r >= kHiExcl) {
    v = std::numeric_limits<Int>::max();
  } else {
    v = static_cast<Int>(r);
  }
  using UInt = std::make_unsigned_t<Int>;
  return static_cast<uint64_t>(static_cast<UInt>(v));
}

}  // namespace

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF64: case DType::kI64: return 8;
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kBool: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF64: return "f64";
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kBool: return "bool";
  }
  return "?";
}

Expected<DType> parse_dtype(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"f64", DType::kF64},   {"float64", DType::kF64},   {"double", DType::kF64},
      {"f32", DType::kF32},   {"float32", DType::kF32},   {"float", DType::kF32},
      {"f16", DType::kF16},   {"float16", DType::kF16},   {"half", DType::kF16},
      {"bf16", DType::kBF16}, {"bfloat16", DType::kBF16},
      {"i32", DType::kI32},   {"int32", DType::kI32},     {"int", DType::kI32},
      {"i64", DType::kI64},   {"int64", DType::kI64},     {"long", DType::kI64},
      {"bool", DType::kBool},
  };
  std::string_view bare = name;
  if (bare.starts_with("torch.")) {
    bare.remove_prefix(6);
  }
  for (const Alias& a : kAliases) {
    if (a.name == bare) {
      return a.dtype;
    }
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown dtype '" + std::string(name) +
                        "' (expected f64, f32, f16, bf16, i32, i64 or bool)",
                    "dtype");
}

bool is_floating(DType t) {
  return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

int significand_bits(DType t) { return format_of(t).mant_bits + 1; }

double unit_roundoff(DType t) { return std::ldexp(1.0, -significand_bits(t)); }

uint64_t encode(DType t, double x) {
  switch (t) {
    case DType::kF64: return f64_bits(x);
    case DType::kF32: case DType::kF16: case DType::kBF16:
      return numeric::round_from_f64_bits(format_of(t), f64_bits(x));
    case DType::kI32: return encode_int<int32_t>(x);
    case DType::kI64: return encode_int<int64_t>(x);
    case DType::kBool: return (x != 0.0) ? 1 : 0;  // NaN != 0: true
  }
  return 0;
}

double decode(DType t, uint64_t bits) {
  switch (t) {
    case DType::kF64: return f64_from_bits(bits);
    case DType::kF32: case DType::kF16: case DType::kBF16: {
      const FloatFormat f = format_of(t);
      const uint64_t mask = f.sign_mask() | f.exp_mask() | f.mant_mask();
      return f64_from_bits(numeric::widen_to_f64_bits(f, bits & mask));
    }
    case DType::kI32: return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(bits)));
    case DType::kI64: return static_cast<double>(static_cast<int64_t>(bits));
    case DType::kBool: return (bits & 0xFF) != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

double round_to(DType t, double x) { return decode(t, encode(t, x)); }

uint16_t f32_to_f16_bits(float x) {
  const uint64_t wide = numeric::widen_to_f64_bits(numeric::kBinary32, f32_bits(x));
  return static_cast<uint16_t>(numeric::round_from_f64_bits(numeric::kBinary16, wide));
}

float f16_bits_to_f32(uint16_t bits) {
  const uint64_t wide = numeric::widen_to_f64_bits(numeric::kBinary16, bits);
  return f32_from_bits(static_cast<uint32_t>(numeric::round_from_f64_bits(numeric::kBinary32, wide)));
}

uint16_t f32_to_bf16_bits(float x) {
  const uint64_t wide = numeric::widen_to_f64_bits(numeric::kBinary32, f32_bits(x));
  return static_cast<uint16_t>(numeric::round_from_f64_bits(numeric::kBfloat16, wide));
}

float bf16_bits_to_f32(uint16_t bits) {
  return f32_from_bits(static_cast<uint32_t>(bits) << 16);  // bf16 is the top half of fp32
}

uint32_t f32_bits(float x) {
  uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float f32_from_bits(uint32_t bits) {
  float x = 0;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

uint64_t f64_bits(double x) {
  uint64_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

double f64_from_bits(uint64_t bits) {
  double x = 0;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace kcv
