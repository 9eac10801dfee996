// File: examples/numerics.hpp
// Correct fp32 building blocks of the positive control, reused by red-team kernels whose defect
// lies elsewhere (a RES-02 kernel computes a correct sum; only its device code breaks a budget).
// Accumulation is fp32 as the contracts declare; the only fp64 use is to evaluate exp/erfc
// once per element and round (a correctly rounded elementary function, as a CR libm would give)
// and to form x - max exactly in softmax, so that exp's relative error is not amplified by the
// cancellation in the argument. No FMA: the translation unit is built without contraction.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common.hpp"

namespace kcv::examples {

/// Left-to-right fp32 sum (starts from the first element, so a lone -0 stays -0).
inline float sum_sequential(const float* p, int64_t n) {
  if (n <= 0) return 0.0f;
  float s = p[0];
  for (int64_t i = 1; i < n; ++i) s += p[i];
  return s;
}

/// Pairwise (tree) summation: halves until 8 elements, then left to right.
inline float sum_pairwise(const float* p, int64_t n) {
  if (n <= 8) return sum_sequential(p, n);
  const int64_t h = n / 2;
  return sum_pairwise(p, h) + sum_pairwise(p + h, n - h);
}

/// Blocks of `block` elements visited last to first, each summed last to first.
inline float sum_reverse_blocked(const float* p, int64_t n, int64_t block) {
  if (n <= 0) return 0.0f;
  float total = 0.0f;
  bool first = true;
  for (int64_t b0 = ((n - 1) / block) * block; b0 >= 0; b0 -= block) {
    const int64_t b1 = std::min(n, b0 + block);
    float s = p[b1 - 1];
    for (int64_t i = b1 - 2; i >= b0; --i) s += p[i];
    total = first ? s : total + s;
    first = false;
  }
  return total;
}

/// A number that changes on every call: a per-process call counter plus the process id, so it
/// moves both within one process and across forked workers. Stands in for atomicAdd arrival
/// order in the kernels whose summation order varies between calls.
inline uint64_t call_rotation() {
  static std::atomic<uint64_t> calls{0};
  return calls.fetch_add(1) + static_cast<uint64_t>(getpid());
}

/// Blocks of 128 summed left to right, combined starting from block `start % blocks`.
inline float sum_rotated_blocks(const std::vector<float>& row, uint64_t start) {
  constexpr int64_t kBlock = 128;
  const int64_t n = static_cast<int64_t>(row.size());
  if (n == 0) return 0.0f;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  float total = 0.0f;
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t b = static_cast<int64_t>((start + static_cast<uint64_t>(k)) % static_cast<uint64_t>(blocks));
    const float s = sum_sequential(row.data() + b * kBlock, std::min(kBlock, n - b * kBlock));
    total = k == 0 ? s : total + s;
  }
  return total;
}

/// IEEE 754-2019 maximum over a row: NaN wins, -0 < +0. Empty row: -Inf.
inline float max_propagating(const float* p, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const float x = p[i];
    if (std::isnan(x)) return x;
    if (x > m || (x == m && std::signbit(m) && !std::signbit(x))) m = x;
  }
  return m;
}

/// Index of the first maximum; the first NaN wins (torch.argmax).
inline int64_t argmax_first(const float* p, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(p[i])) return i;
    if (p[i] > p[best]) best = i;
  }
  return best;
}

/// exp correctly rounded to fp32 (fp64 evaluation, one rounding).
inline float exp_rounded(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

/// gelu(x) = x/2 * erfc(-x/sqrt 2), evaluated in fp64 and rounded once (erfc keeps the tiny
/// negative tail that 1 + erf would cancel away).
inline float gelu_erf_rounded(float x) {
  const double d = x;
  return static_cast<float>(0.5 * d * std::erfc(-d * 0.70710678118654752440));
}

/// Stabilized softmax of one row: max (NaN-propagating), exp(x - max) with the difference
/// formed exactly, fp32 pairwise sum of the exps, one division per element.
inline void softmax_row(const std::vector<float>& x, std::vector<float>& y) {
  const int64_t n = static_cast<int64_t>(x.size());
  const double m = max_propagating(x.data(), n);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(std::exp(static_cast<double>(x[i]) - m));
  const float s = sum_pairwise(y.data(), n);
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] / s;
}

/// Sum that does not overflow when the result is representable: if the fp32 sum of finite
/// values overflows, it is recomputed on values scaled by 2^-64 (exact) and the scale is
/// applied by the caller through `scale_log2`.
inline float sum_pairwise_scaled(const float* p, int64_t n, int* scale_log2) {
  *scale_log2 = 0;
  const float s = sum_pairwise(p, n);
  if (std::isfinite(s)) return s;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(p[i])) return s;  // a genuine Inf/NaN input: keep IEEE semantics
  }
  std::vector<float> q(p, p + n);
  for (float& v : q) v = std::ldexp(v, -64);
  *scale_log2 = 64;
  return sum_pairwise(q.data(), n);
}

/// Mean with an fp32 pairwise sum; finite whenever the exact mean is representable.
inline float mean_row(const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  int scale = 0;
  const float s = sum_pairwise_scaled(x.data(), n, &scale);
  if (scale == 0) return s / static_cast<float>(n);
  return std::ldexp(s / static_cast<float>(n), scale);
}

/// Two-pass layernorm of one row in fp32: mean, then the variance of the centred values.
/// Rows with magnitudes above 2^40 are scaled by a power of two first (exact) so the squares
/// cannot overflow; eps is scaled with them.
inline void layernorm_row(const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& b, float eps, std::vector<float>& y) {
  const int64_t n = static_cast<int64_t>(x.size());
  float amax = 0.0f;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  int shift = 0;
  if (std::isfinite(amax) && amax > 0x1p40f) shift = std::ilogb(amax) + 1;
  std::vector<float> xs(x);
  if (shift != 0) {
    for (float& v : xs) v = std::ldexp(v, -shift);
  }
  const float mean = sum_pairwise(xs.data(), n) / static_cast<float>(n);
  std::vector<float> d(static_cast<std::size_t>(n)), sq(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    d[i] = xs[i] - mean;
    sq[i] = d[i] * d[i];
  }
  const float var = sum_pairwise(sq.data(), n) / static_cast<float>(n);
  const float eps_s = shift != 0 ? static_cast<float>(std::ldexp(static_cast<double>(eps), -2 * shift)) : eps;
  const float denom = std::sqrt(var + eps_s);
  for (int64_t i = 0; i < n; ++i) {
    const float norm = (d[i] == 0.0f && denom == 0.0f) ? 0.0f : d[i] / denom;
    y[i] = norm * w[i] + b[i];
  }
}

}  // namespace kcv::examples
