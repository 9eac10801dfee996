// File: include/kcv/rng.hpp
// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11): value = f(key, counter),
// so element i of input j of a probe is the same on every machine, in any order of generation,
// and can be regenerated alone when a counterexample is shrunk. Uniform doubles use 53 bits;
// normals use Box-Muller on two such uniforms (std:: distributions are not portable bit for bit).
#pragma once

#include <array>
#include <cstdint>

namespace kcv {

/// Bump when any generated value changes; recorded in every verdict.
inline constexpr int kGeneratorVersion = 1;

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

/// A stream of values for one (seed, stream) pair, indexed by a 64-bit element counter.
class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  /// 64 random bits for element `index`, draw `draw` (several draws per element when needed).
  uint64_t bits(uint64_t index, uint32_t draw = 0) const;
  /// Uniform in [0, 1) with 53 random bits.
  double uniform(uint64_t index, uint32_t draw = 0) const;
  /// Standard normal.
  double normal(uint64_t index, uint32_t draw = 0) const;

 private:
  uint64_t seed_;
  uint64_t stream_;
};

}  // namespace kcv
