// File: tests/unit/numeric/dtype_test.cpp
// Conversions checked against independent constructions: 16-bit values are rebuilt from their
// fields with ldexp, fp32 values come from the hardware float->double widening, and every tie
// is built as the exact midpoint of two adjacent values (exact in fp64), so the expected
// RN-even result is known without calling the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "kcv/dtype.hpp"

namespace kcv {
namespace {

constexpr uint32_t kF16Count = 1u << 16;

// The value of an f16 or bf16 pattern from its fields (independent of src/numeric).
double field_value(uint32_t bits, int exp_bits, int mant_bits) {
  const int total = 1 + exp_bits + mant_bits;
  const bool neg = ((bits >> (total - 1)) & 1u) != 0;
  const uint32_t e = (bits >> mant_bits) & ((1u << exp_bits) - 1);
  const uint32_t m = bits & ((1u << mant_bits) - 1);
  const int bias = (1 << (exp_bits - 1)) - 1;
  double v = 0;
  if (e == (1u << exp_bits) - 1) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - bias - mant_bits);
  } else {
    v = std::ldexp(static_cast<double>(m + (1u << mant_bits)), static_cast<int>(e) - bias - mant_bits);
  }
  return neg ? -v : v;
}

double f16_value(uint32_t bits) { return field_value(bits, 5, 10); }
double bf16_value(uint32_t bits) { return field_value(bits, 8, 7); }

bool is_nan16(uint32_t bits, int mant_bits) {
  const uint32_t exp_all = ((1u << (15 - mant_bits)) - 1) << mant_bits;
  return (bits & exp_all) == exp_all && (bits & ((1u << mant_bits) - 1)) != 0;
}

TEST(DTypeF16, DecodesEveryPatternToItsFieldValue) {
  for (uint32_t b = 0; b < kF16Count; ++b) {
    const double expected = f16_value(b);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(decode(DType::kF16, b))) << b;
      continue;
    }
    ASSERT_EQ(decode(DType::kF16, b), expected) << b;
    ASSERT_EQ(std::signbit(decode(DType::kF16, b)), std::signbit(expected)) << b;
  }
}

TEST(DTypeF16, RoundTripsEveryPatternThroughF32) {
  for (uint32_t b = 0; b < kF16Count; ++b) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(b));
    const uint16_t back = f32_to_f16_bits(f);
    const uint32_t expected = is_nan16(b, 10) ? (b | 0x0200u) : b;  // signalling NaNs get quieted
    ASSERT_EQ(back, expected) << b;
    if (!is_nan16(b, 10)) {
      ASSERT_EQ(static_cast<double>(f), f16_value(b)) << b;
    }
  }
}

TEST(DTypeF16, RoundTripsEveryPatternThroughF64) {
  for (uint32_t b = 0; b < kF16Count; ++b) {
    const uint64_t back = encode(DType::kF16, decode(DType::kF16, b));
    const uint32_t expected = is_nan16(b, 10) ? (b | 0x0200u) : b;
    ASSERT_EQ(back, expected) << b;
  }
}

TEST(DTypeBF16, RoundTripsEveryPatternThroughF32AndF64) {
  for (uint32_t b = 0; b < kF16Count; ++b) {
    const uint32_t expected = is_nan16(b, 7) ? (b | 0x0040u) : b;
    ASSERT_EQ(f32_to_bf16_bits(bf16_bits_to_f32(static_cast<uint16_t>(b))), expected) << b;
    ASSERT_EQ(encode(DType::kBF16, decode(DType::kBF16, b)), expected) << b;
  }
}

// Every pair of adjacent positive finite 16-bit values: the midpoint goes to the even pattern,
// a hair above goes up, a hair below goes down. Covers normal, subnormal, binade-crossing and
// zero/min-subnormal ties in one sweep.
void check_all_16bit_ties(DType t, double (*value)(uint32_t), uint32_t max_finite_bits) {
  for (uint32_t b = 0; b < max_finite_bits; ++b) {
    const double lo = value(b);
    const double hi = value(b + 1);
    const double mid = (lo + hi) / 2;  // exact: both have <= 11 significant bits
    const double hair = (hi - lo) / 1024;
    const uint32_t even = (b % 2 == 0) ? b : b + 1;
    ASSERT_EQ(encode(t, mid), even) << b;
    ASSERT_EQ(encode(t, -mid), even | 0x8000u) << b;
    ASSERT_EQ(encode(t, mid + hair), b + 1) << b;
    ASSERT_EQ(encode(t, mid - hair), b) << b;
    ASSERT_EQ(t == DType::kF16 ? f32_to_f16_bits(static_cast<float>(mid))  // mid is exact in fp32
                               : f32_to_bf16_bits(static_cast<float>(mid)),
              even) << b;
    ASSERT_TRUE(is_tie(t, mid)) << b;
    ASSERT_FALSE(is_tie(t, lo)) << b;
  }
}

TEST(DTypeRounding, F16TiesGoToEvenAcrossTheWholeRange) {
  check_all_16bit_ties(DType::kF16, f16_value, 0x7BFF);
}

TEST(DTypeRounding, BF16TiesGoToEvenAcrossTheWholeRange) {
  check_all_16bit_ties(DType::kBF16, bf16_value, 0x7F7F);
}

TEST(DTypeRounding, HalfwayAboveMaxFiniteOverflowsToInfinity) {
  const double max16 = f16_value(0x7BFF);
  const double half_step = std::ldexp(1.0, 15 - 11);  // half an ulp at 2^15
  EXPECT_EQ(encode(DType::kF16, max16 + half_step), 0x7C00u);
  EXPECT_EQ(encode(DType::kF16, max16 + half_step * 0.999), 0x7BFFu);
  EXPECT_EQ(encode(DType::kF16, -1e300), 0xFC00u);
  EXPECT_FALSE(is_tie(DType::kF16, max16 + half_step));
}

double f32_value(uint32_t bits) {
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return static_cast<double>(f);
}

TEST(DTypeRounding, F32TiesGoToEvenOnSampledPairs) {
  // Patterns spread over every binade (subnormal to the largest), plus the boundaries.
  std::vector<uint32_t> patterns = {0, 1, 2, 0x007FFFFE, 0x007FFFFF, 0x00800000, 0x3F7FFFFF,
                                    0x3F800000, 0x3F800001, 0x7F7FFFFE};
  for (uint32_t b = 3; b < 0x7F7F0000; b += 0x0001F3A7) {
    patterns.push_back(b);
  }
  for (uint32_t b : patterns) {
    const double lo = f32_value(b);
    const double hi = f32_value(b + 1);
    const double mid = (lo + hi) / 2;  // exact: 25 significant bits
    const uint32_t even = (b % 2 == 0) ? b : b + 1;
    ASSERT_EQ(encode(DType::kF32, mid), even) << b;
    ASSERT_EQ(encode(DType::kF32, std::nextafter(mid, 0.0)), b) << b;
    ASSERT_EQ(encode(DType::kF32, std::nextafter(mid, 1e300)), b + 1) << b;
  }
}

TEST(DTypeRounding, RoundsOnceFromF64NotTwiceThroughF32) {
  // 1 + 2^-11 + 2^-30: via fp32 it becomes the f16 tie 1 + 2^-11 and then 1.0 (even);
  // rounded once it lies above the tie and goes up to 1 + 2^-10.
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30);
  EXPECT_EQ(encode(DType::kF16, x), 0x3C01u);
  EXPECT_EQ(f32_to_f16_bits(static_cast<float>(x)), 0x3C00u);
  const double y = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(encode(DType::kBF16, y), 0x3F81u);
  EXPECT_EQ(f32_to_bf16_bits(static_cast<float>(y)), 0x3F80u);
}

TEST(DTypeBF16, RoundsToNearestEvenWhereTruncationWouldNot) {
  struct Case {
    uint32_t f32;
    uint16_t rounded;
    uint16_t truncated;
  };
  const Case cases[] = {
      {0x3F808001u, 0x3F81, 0x3F80},  // above the tie: up
      {0x3F808000u, 0x3F80, 0x3F80},  // tie, even below
      {0x3F818000u, 0x3F82, 0x3F81},  // tie, even above
      {0x3F80FFFFu, 0x3F81, 0x3F80},
      {0x7F7FFFFFu, 0x7F80, 0x7F7F},  // fp32 max rounds to bf16 infinity
      {0x807FFFFFu, 0x8080, 0x807F},  // largest negative subnormal rounds to -min normal
  };
  for (const Case& c : cases) {
    EXPECT_EQ(f32_to_bf16_bits(f32_from_bits(c.f32)), c.rounded) << std::hex << c.f32;
    EXPECT_EQ(static_cast<uint16_t>(c.f32 >> 16), c.truncated) << std::hex << c.f32;
  }
}

TEST(DTypeSubnormal, BoundariesOfF32) {
  EXPECT_EQ(encode(DType::kF32, std::ldexp(1.0, -149)), 1u);
  EXPECT_EQ(encode(DType::kF32, std::ldexp(1.0, -150)), 0u);  // tie with 0: even
  EXPECT_EQ(encode(DType::kF32, std::ldexp(3.0, -151)), 1u);  // above the tie
  EXPECT_EQ(encode(DType::kF32, -std::ldexp(1.0, -150)), 0x80000000u);
  EXPECT_EQ(encode(DType::kF32, std::ldexp(3.0, -150)), 2u);  // tie 1.5 ulp: even is 2
  EXPECT_EQ(encode(DType::kF32, min_normal(DType::kF32)), 0x00800000u);
  EXPECT_EQ(encode(DType::kF32, min_normal(DType::kF32) - min_subnormal(DType::kF32)), 0x007FFFFFu);
  EXPECT_EQ(encode(DType::kF32, std::numeric_limits<double>::denorm_min()), 0u);
  EXPECT_EQ(decode(DType::kF32, 1), std::ldexp(1.0, -149));
}

TEST(DTypeSubnormal, BoundariesOfF16AndBF16) {
  EXPECT_EQ(encode(DType::kF16, std::ldexp(1.0, -24)), 1u);
  EXPECT_EQ(encode(DType::kF16, std::ldexp(1.0, -25)), 0u);
  EXPECT_EQ(encode(DType::kF16, std::ldexp(1.0, -14)), 0x0400u);
  EXPECT_EQ(encode(DType::kBF16, std::ldexp(1.0, -133)), 1u);
  EXPECT_EQ(encode(DType::kBF16, std::ldexp(1.0, -126)), 0x0080u);
  EXPECT_EQ(f16_bits_to_f32(1), std::ldexp(1.0f, -24));
}

#if defined(__SSE2__)
TEST(DTypeSubnormal, ConversionsIgnoreFlushToZeroModes) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);  // FTZ (bit 15) and DAZ (bit 6)
  const uint64_t sub32 = encode(DType::kF32, std::ldexp(3.0, -149));
  const double back = decode(DType::kF32, 3);
  const uint16_t sub16 = f32_to_f16_bits(f32_from_bits(0x33C00000u));  // 1.5 * 2^-24 -> tie, even 2
  const float wide = f16_bits_to_f32(1);
  const FpClass cls = classify(DType::kF32, 1);
  _mm_setcsr(saved);
  EXPECT_EQ(sub32, 3u);
  EXPECT_EQ(back, std::ldexp(3.0, -149));
  EXPECT_EQ(sub16, 2u);
  EXPECT_EQ(f32_bits(wide), 0x33800000u);
  EXPECT_EQ(cls, FpClass::kSubnormal);
}
#endif

TEST(DTypeNaN, KeepsTopPayloadBitsAndSetsQuietBit) {
  const uint64_t snan64 = 0xFFF5555500000000ull;  // signalling, negative, payload in top bits
  const uint64_t payload = snan64 & 0x000FFFFFFFFFFFFFull;
  EXPECT_EQ(encode(DType::kF32, f64_from_bits(snan64)),
            0x80000000ull | 0x7F800000ull | 0x00400000ull | (payload >> 29));
  EXPECT_EQ(encode(DType::kF16, f64_from_bits(snan64)),
            0x8000ull | 0x7C00ull | 0x0200ull | (payload >> 42));
  // fp32 NaN payloads survive fp32 -> fp64 -> fp32 exactly.
  const uint32_t qnan32 = 0x7FC12345u;
  EXPECT_EQ(encode(DType::kF32, decode(DType::kF32, qnan32)), qnan32);
  EXPECT_EQ(f64_bits(decode(DType::kF32, qnan32)), 0x7FF82468A0000000ull);
}

TEST(DTypeInteger, RoundsHalfToEvenAndSaturates) {
  EXPECT_EQ(encode(DType::kI32, 2.5), 2u);
  EXPECT_EQ(encode(DType::kI32, 3.5), 4u);
  EXPECT_EQ(decode(DType::kI32, encode(DType::kI32, -2.5)), -2.0);
  EXPECT_EQ(decode(DType::kI32, encode(DType::kI32, -2.6)), -3.0);
  EXPECT_EQ(encode(DType::kI32, 3e9), 0x7FFFFFFFu);
  EXPECT_EQ(decode(DType::kI32, encode(DType::kI32, -3e9)), -2147483648.0);
  EXPECT_EQ(encode(DType::kI64, 1e19), 0x7FFFFFFFFFFFFFFFull);
  EXPECT_EQ(decode(DType::kI64, encode(DType::kI64, -1e19)), -9223372036854775808.0);
  EXPECT_EQ(encode(DType::kI32, std::numeric_limits<double>::quiet_NaN()), 0u);
  EXPECT_EQ(encode(DType::kI64, std::numeric_limits<double>::infinity()), 0x7FFFFFFFFFFFFFFFull);
  EXPECT_EQ(encode(DType::kBool, -0.25), 1u);
  EXPECT_EQ(encode(DType::kBool, -0.0), 0u);
  EXPECT_EQ(decode(DType::kI64, encode(DType::kI64, 123456789012.0)), 123456789012.0);
}

TEST(DTypeClassify, NamesEveryClassFromBits) {
  EXPECT_EQ(classify(DType::kF32, 0x80000000u), FpClass::kZero);
  EXPECT_EQ(classify(DType::kF32, 0x00000001u), FpClass::kSubnormal);
  EXPECT_EQ(classify(DType::kF32, 0x3F800000u), FpClass::kNormal);
  EXPECT_EQ(classify(DType::kF32, 0x7F800000u), FpClass::kPosInf);
  EXPECT_EQ(classify(DType::kF32, 0xFF800000u), FpClass::kNegInf);
  EXPECT_EQ(classify(DType::kF32, 0x7F800001u), FpClass::kNaN);
  EXPECT_EQ(classify(DType::kF16, 0x03FFu), FpClass::kSubnormal);
  EXPECT_EQ(classify(DType::kBF16, 0xFF80u), FpClass::kNegInf);
  EXPECT_EQ(classify(DType::kF64, f64_bits(std::numeric_limits<double>::denorm_min())),
            FpClass::kSubnormal);
  EXPECT_EQ(classify(DType::kI32, 0), FpClass::kZero);
  EXPECT_EQ(classify(DType::kI32, 7), FpClass::kNormal);
  EXPECT_TRUE(is_nonfinite(FpClass::kNaN));
  EXPECT_FALSE(is_nonfinite(FpClass::kSubnormal));
  EXPECT_EQ(fp_class_name(FpClass::kPosInf), "+inf");
}

TEST(DTypeUlp, DistanceCountsStepsAcrossZero) {
  EXPECT_EQ(ulp_distance(DType::kF32, 0x00000000u, 0x80000000u), 0u);
  EXPECT_EQ(ulp_distance(DType::kF32, 0x00000001u, 0x80000001u), 2u);
  EXPECT_EQ(ulp_distance(DType::kF32, 0x3F800000u, 0x3F800001u), 1u);
  EXPECT_EQ(ulp_distance(DType::kF32, 0x7F7FFFFFu, 0x7F800000u), 1u);
  EXPECT_EQ(ulp_distance(DType::kF16, 0x8001u, 0x0003u), 4u);
  EXPECT_EQ(ulp_distance(DType::kF32, 0x7FC00000u, 0x7FC00000u), UINT64_MAX);
  EXPECT_EQ(ulp_distance(DType::kF64, f64_bits(1.0), f64_bits(std::nextafter(1.0, 2.0))), 1u);
  EXPECT_EQ(ulp_distance(DType::kF64, f64_bits(-std::numeric_limits<double>::infinity()),
                         f64_bits(std::numeric_limits<double>::infinity())),
            2 * 0x7FF0000000000000ull);
  EXPECT_EQ(ulp_distance(DType::kI32, encode(DType::kI32, -3), encode(DType::kI32, 4)), 7u);
}

TEST(DTypeUlp, SpacingMatchesTheFormat) {
  EXPECT_EQ(ulp_of(DType::kF32, 1.0), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp_of(DType::kF32, -1.5), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp_of(DType::kF16, 1000.0), std::ldexp(1.0, 9 - 10));
  EXPECT_EQ(ulp_of(DType::kF16, 1e-6), std::ldexp(1.0, -24));
  EXPECT_EQ(ulp_of(DType::kBF16, 1.0), std::ldexp(1.0, -7));
  EXPECT_EQ(ulp_of(DType::kF64, 1.0), std::numeric_limits<double>::epsilon());
}

// ulp_of builds 2^(e - p) from the exponent bits; it must equal the frexp/ldexp definition in
// every binade of every format, including fp64 values whose ulp is a subnormal double.
TEST(DTypeUlp, EqualsTheFrexpDefinitionInEveryBinade) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    for (int e = -1074; e <= 1023; ++e) {
      for (double m : {1.0, 1.25, 1.9999999}) {
        const double x = std::ldexp(m, e);
        if (x == 0 || !std::isfinite(x) || x < min_normal(t)) continue;
        int fe = 0;
        std::frexp(x, &fe);
        ASSERT_EQ(ulp_of(t, x), std::ldexp(1.0, fe - significand_bits(t)))
            << dtype_name(t) << " 2^" << e;
        ASSERT_EQ(ulp_of(t, -x), ulp_of(t, x));
      }
    }
  }
}

TEST(DTypeLimits, MatchTheFormatTable) {
  EXPECT_EQ(max_finite(DType::kF32), static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_EQ(min_normal(DType::kF32), static_cast<double>(std::numeric_limits<float>::min()));
  EXPECT_EQ(min_subnormal(DType::kF32), static_cast<double>(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(max_finite(DType::kF64), std::numeric_limits<double>::max());
  EXPECT_EQ(min_subnormal(DType::kF64), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(max_finite(DType::kF16), 65504.0);
  EXPECT_EQ(max_finite(DType::kBF16), bf16_value(0x7F7F));
  EXPECT_EQ(min_subnormal(DType::kBF16), std::ldexp(1.0, -133));
  EXPECT_EQ(unit_roundoff(DType::kF16), std::ldexp(1.0, -11));
  EXPECT_EQ(significand_bits(DType::kBF16), 8);
}

TEST(DTypeNames, ParseShortAndTorchSpellings) {
  EXPECT_EQ(parse_dtype("f16").value(), DType::kF16);
  EXPECT_EQ(parse_dtype("bfloat16").value(), DType::kBF16);
  EXPECT_EQ(parse_dtype("torch.int64").value(), DType::kI64);
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64,
                  DType::kBool}) {
    EXPECT_EQ(parse_dtype(dtype_name(t)).value(), t);
  }
  const Expected<DType> bad = parse_dtype("float8");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("float8"), std::string::npos);
}

}  // namespace
}  // namespace kcv
