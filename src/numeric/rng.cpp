// File: src/numeric/rng.cpp
// Philox4x32-10 with the Random123 constants, and the CounterRng built on it. One Philox block
// per (index, draw): counter = {index lo, index hi, draw, stream lo}, key = {seed lo, seed hi}.
// bits() returns words 0 and 1; normal() uses all four words as two 53-bit uniforms, so one
// element's normal costs one block. Transcendentals come from numeric/portable_math so that
// normals are identical on every machine.
#include "kcv/rng.hpp"

#include "numeric/portable_math.hpp"

#include <cmath>

namespace kcv {
namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1
constexpr int kPhiloxRounds = 10;
constexpr double kTwoPow53Inv = 1.0 / 9007199254740992.0;

std::array<uint32_t, 4> philox_round(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c[2];
  const auto hi0 = static_cast<uint32_t>(p0 >> 32);
  const auto lo0 = static_cast<uint32_t>(p0);
  const auto hi1 = static_cast<uint32_t>(p1 >> 32);
  const auto lo1 = static_cast<uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

std::array<uint32_t, 4> block(uint64_t seed, uint64_t stream, uint64_t index, uint32_t draw) {
  const std::array<uint32_t, 4> counter = {static_cast<uint32_t>(index),
                                           static_cast<uint32_t>(index >> 32), draw,
                                           static_cast<uint32_t>(stream)};
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  return philox4x32(counter, key);
}

double uniform_from(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(bits >> 11) * kTwoPow53Inv;
}

}  // namespace

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  for (int r = 0; r < kPhiloxRounds; ++r) {
    if (r > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    counter = philox_round(counter, key);
  }
  return counter;
}

uint64_t CounterRng::bits(uint64_t index, uint32_t draw) const {
  const std::array<uint32_t, 4> w = block(seed_, stream_, index, draw);
  return (static_cast<uint64_t>(w[1]) << 32) | w[0];
}

double CounterRng::uniform(uint64_t index, uint32_t draw) const {
  return static_cast<double>(bits(index, draw) >> 11) * kTwoPow53Inv;
}

double CounterRng::normal(uint64_t index, uint32_t draw) const {
  const std::array<uint32_t, 4> w = block(seed_, stream_, index, draw);
  const double u1 = 1.0 - uniform_from(w[1], w[0]);  // (0, 1]: log never sees 0
  const double u2 = uniform_from(w[3], w[2]);
  return std::sqrt(-2.0 * numeric::portable_log(u1)) * numeric::portable_cos_2pi(u2);
}

}  // namespace kcv
