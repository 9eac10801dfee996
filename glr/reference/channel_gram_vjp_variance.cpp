// File: glr/reference/channel_gram_vjp_variance.cpp
// channel_gram_vjp_variance (channel_gram_vjp_variance.hpp), one key channel d at a time. With
// y_ij = dP_ij q_id k_jd Γ_ijd (i > j), dg_t,d's variance from the Gram VJP is the sum of
//   (a) dP's rounding and error, pairs j < t ≤ i:      Σ (ρ_dP² y_ij² + V_dP,ij (q_id k_jd Γ_ijd)²)
//   (b) dq's anchored operand (n, j), rows i ≥ t of n's sub-chunk:   ρ_k² (Σ_i y_ij)²
//   (c) dq's per-pair operand (diagonal sub-block), i ≥ t:           ρ_k² y_ij²
//   (d) dk's anchored operand of row i, columns t ≤ j < n(i):       ρ_q² (Σ_j y_ij)²
//   (e) dk's per-pair operand (diagonal sub-block), j ≥ t:           ρ_q² y_ij²
// (ρ² = u² for an operand value its rounding changes, else 0), each kept as a running sum over t
// of non-negative terms (no subtraction), so that a chunk costs O(C²) per channel.
#include "glr/reference/channel_gram_vjp_variance.hpp"

#include <algorithm>
#include <vector>

#include "kcv/glr/chunked.hpp"

namespace kcv::glr::detail {
namespace {

// u² when rounding x changes it, else 0: the relative variance of one declared rounding.
double relative_var(Rounding r, double x) {
  if (r == Rounding::kNone || representable(r, x)) return 0.0;
  const double u = unit_roundoff(r);
  return u * u;
}

std::int64_t anchor(std::int64_t i) { return i / kSubChunk * kSubChunk; }

}  // namespace

ChannelGramVjpVariance channel_gram_vjp_variance(const Matrix& a, const Matrix& b,
                                                 const ChunkGate& g, const Matrix& dp,
                                                 const Matrix* dp_var, OperandRounding r) {
  const std::int64_t c = b.rows(), kd = b.cols();
  ChannelGramVjpVariance out{Matrix(c, kd), Matrix(c, kd), Matrix(c, kd)};
  Matrix y(c, c), z(c, c), wk(c, c), wq(c, c), uk_off(c, c);
  std::vector<double> uq_off(static_cast<std::size_t>(c)), acc(static_cast<std::size_t>(c));
  // dP's rounding (charged where it changes dP or dP carries an error) and that error: the same
  // for every channel.
  Matrix vp_pair(c, c);
  const double ua = unit_roundoff(r.a);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j <= i; ++j) {
      const double p = dp(i, j), vp_err = dp_var == nullptr ? 0.0 : (*dp_var)(i, j);
      vp_pair(i, j) = (vp_err > 0.0 ? ua * ua * p * p : relative_var(r.a, p) * p * p) + vp_err;
    }
  for (std::int64_t d = 0; d < kd; ++d) {
    // the anchored operand (n, j)'s rounding, j < n, once per anchor n (in row n of uk_off)
    for (std::int64_t n = 0; n < c; n += kSubChunk)
      for (std::int64_t j = 0; j < n; ++j)
        uk_off(n, j) = relative_var(r.b, b(j, d) * g.between(n, j, d));
    for (std::int64_t i = 0; i < c; ++i) {
      const std::int64_t n = anchor(i);
      uq_off[static_cast<std::size_t>(i)] = relative_var(r.b, a(i, d) * g.between(i, n, d));
      for (std::int64_t j = 0; j <= i; ++j) {
        const double gm = g.between(i, j, d);
        const double kg = b(j, d) * gm, qg = a(i, d) * gm, p = dp(i, j);
        const double vp = vp_pair(i, j);
        const double uk = j < n ? uk_off(n, j) : relative_var(r.b, kg);
        const double uq = j < n ? uq_off[static_cast<std::size_t>(i)] : relative_var(r.b, qg);
        out.dq(i, d) += (vp + uk * p * p) * kg * kg;
        out.dk(j, d) += (vp + uq * p * p) * qg * qg;
        if (j == i) continue;  // the diagonal pairs cancel in dg
        y(i, j) = p * a(i, d) * kg;
        z(i, j) = vp * a(i, d) * a(i, d) * kg * kg;
        uk_off(i, j) = uk;
        wk(i, j) = j < n ? 0.0 : uk * y(i, j) * y(i, j);
        wq(i, j) = j < n ? 0.0 : uq * y(i, j) * y(i, j);
      }
    }
    // (a): Σ over j < t of column j's sum over the rows i ≥ t, the column sums grown as t falls
    // (additions only: a running total that also subtracts loses the small sums under strong
    // decay).
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int64_t t = c - 1; t >= 0; --t) {
      double cut = 0.0;
      for (std::int64_t j = 0; j < t; ++j) {
        acc[static_cast<std::size_t>(j)] += z(t, j);
        cut += acc[static_cast<std::size_t>(j)];
      }
      out.dg(t, d) += cut;
    }
    // (c) and (e): suffix sums over rows (c) and columns (e) of the diagonal sub-blocks.
    double rows_from_t = 0.0, cols_from_t = 0.0;
    for (std::int64_t t = c - 1; t >= 0; --t) {
      for (std::int64_t j = anchor(t); j < t; ++j) rows_from_t += wk(t, j);
      for (std::int64_t i = t + 1; i < std::min(anchor(t) + kSubChunk, c); ++i)
        cols_from_t += wq(i, t);
      out.dg(t, d) += rows_from_t + cols_from_t;
    }
    // (b): per sub-chunk R with anchor n, the column sums over its rows i ≥ t (t in R); the
    // sub-chunks after R contribute their full sums (their value at t = their anchor).
    double later_blocks = 0.0;
    for (std::int64_t n = anchor(c - 1); n >= 0; n -= kSubChunk) {
      std::fill(acc.begin(), acc.begin() + n, 0.0);
      double block = 0.0;
      for (std::int64_t t = std::min(n + kSubChunk, c) - 1; t >= n; --t) {
        block = 0.0;
        for (std::int64_t j = 0; j < n; ++j) {
          double& s = acc[static_cast<std::size_t>(j)];
          s += y(t, j);
          block += uk_off(n, j) * s * s;
        }
        out.dg(t, d) += block + later_blocks;
      }
      later_blocks += block;
    }
    // (d): row i's anchored operand, columns t ≤ j < n(i); rows with n(i) > t.
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int64_t t = c - 1; t >= 0; --t) {
      double v = 0.0;
      for (std::int64_t i = t + 1; i < c; ++i) {
        if (anchor(i) <= t) continue;
        acc[static_cast<std::size_t>(i)] += y(i, t);
        v += uq_off[static_cast<std::size_t>(i)] * acc[static_cast<std::size_t>(i)] *
             acc[static_cast<std::size_t>(i)];
      }
      out.dg(t, d) += v;
    }
  }
  return out;
}

}  // namespace kcv::glr::detail
