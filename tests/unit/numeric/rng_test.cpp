// File: tests/unit/numeric/rng_test.cpp
// Philox against the Random123 known-answer vectors, CounterRng's counter layout, and the
// portable transcendental functions against libm (which they replace for reproducibility).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kcv/dtype.hpp"
#include "kcv/rng.hpp"
#include "numeric/portable_math.hpp"

namespace kcv {
namespace {

TEST(Philox, MatchesRandom123KnownAnswers) {
  using W4 = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}), (W4{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (W4{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  // Random123 kat_vectors: philox4x32 10 with pi digits.
  EXPECT_EQ(philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (W4{0xd16cfe09u, 0x94fdcceb, 0x5001e420u, 0x24126ea1u}));
}

TEST(CounterRng, BitsComeFromTheDocumentedCounterAndKey) {
  const uint64_t seed = 0x0123456789abcdefull;
  const CounterRng rng(seed, 3);
  const uint64_t index = 0x0000000500000007ull;
  const auto w = philox4x32({7, 5, 2, 3}, {0x89abcdefu, 0x01234567u});
  EXPECT_EQ(rng.bits(index, 2), (static_cast<uint64_t>(w[1]) << 32) | w[0]);
}

TEST(CounterRng, IsAPureFunctionOfSeedStreamIndexDraw) {
  const CounterRng a(42, 0);
  const CounterRng b(42, 0);
  EXPECT_EQ(a.bits(1000), b.bits(1000));
  EXPECT_EQ(f64_bits(a.normal(17, 1)), f64_bits(b.normal(17, 1)));
  EXPECT_NE(a.bits(1000), CounterRng(43, 0).bits(1000));
  EXPECT_NE(a.bits(1000), CounterRng(42, 1).bits(1000));
  EXPECT_NE(a.bits(1000, 0), a.bits(1000, 1));
}

TEST(CounterRng, UniformUsesTheTop53Bits) {
  const CounterRng rng(7, 0);
  for (uint64_t i = 0; i < 1000; ++i) {
    const double u = rng.uniform(i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_EQ(u, std::ldexp(static_cast<double>(rng.bits(i) >> 11), -53));
  }
}

TEST(CounterRng, NormalHasUnitMomentsWithinFiveStandardErrors) {
  const CounterRng rng(2024, 5);
  const int n = 200000;
  double sum = 0;
  double sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal(static_cast<uint64_t>(i));
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
  }
  const double mean = sum / n;
  const double var = sum_sq / n;
  EXPECT_LT(std::fabs(mean), 5.0 / std::sqrt(static_cast<double>(n)));  // sd of the mean: 1/sqrt(n)
  EXPECT_LT(std::fabs(var - 1.0), 5.0 * std::sqrt(2.0 / n));             // sd of E[z^2]: sqrt(2/n)
}

TEST(CounterRng, NormalIsPinnedForGeneratorVersionOne) {
  // Changing these values requires bumping kGeneratorVersion.
  ASSERT_EQ(kGeneratorVersion, 1);
  // Bits recorded from this implementation; any machine must reproduce them exactly.
  const CounterRng rng(1, 0);
  EXPECT_EQ(f64_bits(rng.normal(0)), 0xbfe05c318a128e96ull);
  EXPECT_EQ(f64_bits(rng.normal(1)), 0xbff21f3a8b5765cdull);
  EXPECT_EQ(f64_bits(rng.normal(2)), 0x3ff1f9ffad06c90eull);
}

// The portable functions claim a few ulp; 8 ulp of fp64 is far below any rounding to fp32.
constexpr uint64_t kPortableUlp = 8;

TEST(PortableMath, LogAgreesWithLibm) {
  const CounterRng rng(9, 0);
  for (uint64_t i = 0; i < 20000; ++i) {
    const double x = std::ldexp(1.0 - rng.uniform(i), static_cast<int>(i % 200) - 100);
    ASSERT_LE(ulp_distance(DType::kF64, f64_bits(numeric::portable_log(x)), f64_bits(std::log(x))),
              kPortableUlp) << x;
  }
  EXPECT_EQ(numeric::portable_log(1.0), 0.0);
}

TEST(PortableMath, ExpAgreesWithLibm) {
  const CounterRng rng(10, 0);
  for (uint64_t i = 0; i < 20000; ++i) {
    const double x = (rng.uniform(i) - 0.5) * 1400.0;
    ASSERT_LE(ulp_distance(DType::kF64, f64_bits(numeric::portable_exp(x)), f64_bits(std::exp(x))),
              kPortableUlp) << x;
  }
  EXPECT_EQ(numeric::portable_exp(-800.0), 0.0);
  EXPECT_TRUE(std::isinf(numeric::portable_exp(800.0)));
}

TEST(PortableMath, CosOfTwoPiUAgreesWithLibmInAbsoluteTerms) {
  // Near the zeros of cos, relative ulp are meaningless; compare to the argument's own error:
  // 2*pi*u in fp64 carries an absolute error of about 2^-52 * 2*pi.
  const double bound = std::ldexp(8.0, -52);
  const CounterRng rng(11, 0);
  for (uint64_t i = 0; i < 20000; ++i) {
    const double u = rng.uniform(i);
    ASSERT_LE(std::fabs(numeric::portable_cos_2pi(u) - std::cos(2.0 * M_PI * u)), bound) << u;
  }
  EXPECT_EQ(numeric::portable_cos_2pi(0.0), 1.0);
  EXPECT_EQ(numeric::portable_cos_2pi(0.5), -1.0);
}

}  // namespace
}  // namespace kcv
