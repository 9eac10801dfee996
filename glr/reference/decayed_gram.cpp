// File: glr/reference/decayed_gram.cpp
// Decayed Gram matrix and its VJP, one path per gate kind (see decayed_gram.hpp). The per-channel
// path walks kSubChunk×kSubChunk blocks of (row sub-chunk r, column sub-chunk s ≤ r).
#include "glr/reference/decayed_gram.hpp"

#include <algorithm>

#include "kcv/glr/chunked.hpp"

namespace kcv::glr::detail {
namespace {

bool in_triangle(std::int64_t i, std::int64_t j, Triangle tri) {
  return tri == Triangle::kInclusive ? j <= i : j < i;
}

// Per-pair or anchored decay of the channel path: the factor applied to A_id and to B_jd.
struct ChannelPair {
  double a_factor;
  double b_factor;
};

ChannelPair channel_pair(const ChunkGate& g, std::int64_t i, std::int64_t j, std::int64_t d) {
  const std::int64_t anchor = (i / kSubChunk) * kSubChunk;
  if (j >= anchor) return {g.between(i, j, d), 1.0};  // diagonal sub-block: exact per pair
  return {g.between(i, anchor, d), g.between(anchor, j, d)};
}

Matrix channel_gram(const Matrix& a, const Matrix& b, const ChunkGate& g, Triangle tri) {
  const std::int64_t c = a.rows();
  Matrix p(c, c);
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t j = 0; j < c && in_triangle(i, j, tri); ++j) {
      double acc = 0.0;
      for (std::int64_t d = 0; d < a.cols(); ++d) {
        const ChannelPair f = channel_pair(g, i, j, d);
        acc += (a(i, d) * f.a_factor) * (b(j, d) * f.b_factor);
      }
      p(i, j) = acc;
    }
  }
  return p;
}

GramGrads channel_vjp(const Matrix& dp, const Matrix& a, const Matrix& b, const ChunkGate& g,
                      Triangle tri) {
  const std::int64_t c = a.rows();
  const std::int64_t kd = a.cols();
  Matrix da_off(c, kd), db_off(c, kd), da(c, kd), db(c, kd);
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t j = 0; j < c && in_triangle(i, j, tri); ++j) {
      const double w = dp(i, j);
      Matrix& to_a = (i == j) ? da : da_off;
      Matrix& to_b = (i == j) ? db : db_off;
      for (std::int64_t d = 0; d < kd; ++d) {
        const ChannelPair f = channel_pair(g, i, j, d);
        to_a(i, d) += w * (b(j, d) * f.b_factor) * f.a_factor;
        to_b(j, d) += w * (a(i, d) * f.a_factor) * f.b_factor;
      }
    }
  }
  GramGrads out{da, db, Matrix(c, g.width())};
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t d = 0; d < kd; ++d) {
      out.da(i, d) += da_off(i, d);
      out.db(i, d) += db_off(i, d);
      out.d_gate(i, d) = a(i, d) * da_off(i, d) - b(i, d) * db_off(i, d);
    }
  }
  return out;
}

Matrix masked(Matrix m, Triangle tri) {
  return tri == Triangle::kInclusive ? lower_inclusive(std::move(m)) : strict_lower(std::move(m));
}

// (A Bᵀ) ⊙ Γ on the triangle (Γ ≡ 1 without a gate).
Matrix factored_gram(const Matrix& a, const Matrix& b, const ChunkGate& g, Triangle tri) {
  Matrix p = masked(matmul_nt(a, b), tri);
  for (std::int64_t i = 0; i < p.rows(); ++i)
    for (std::int64_t j = 0; j <= i; ++j) p(i, j) *= g.between(i, j, 0);
  return p;
}

// (ρ·x)² for one operand value x under rounding r.
double rounding_sq(Rounding r, double x) {
  if (r == Rounding::kNone || representable(r, x)) return 0.0;
  const double u = unit_roundoff(r);
  return u * u * x * x;
}

// decayed_gram_rounding_var's per-channel path. A pair left of its row's diagonal sub-block reads
// the anchored operands a(i, d)·Γ(i, n, d) and b(j, d)·Γ(n, j, d), n = i's anchor: the first
// depends on (i, d) and the second on (n, j, d) only, so each is formed with its rounding term
// once (per row, and per sub-chunk and column) and not once per pair. Every pair's sum is the
// same terms in the same order as channel_pair's per-pair form.
Matrix channel_rounding_var(const Matrix& a, const Matrix& b, const ChunkGate& g, Triangle tri,
                            OperandRounding rounding) {
  const std::int64_t c = a.rows(), kd = a.cols();
  Matrix var(c, c);
  Matrix xa(c, kd), rxa(c, kd);  // row i's anchored operand and its rounding term
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      xa(i, d) = a(i, d) * g.between(i, (i / kSubChunk) * kSubChunk, d);
      rxa(i, d) = rounding_sq(rounding.a, xa(i, d));
    }
  Matrix yb(c, kd), ryb(c, kd);  // column j's anchored operand for the current anchor n (j < n)
  for (std::int64_t n = 0; n < c; n += kSubChunk) {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t d = 0; d < kd; ++d) {
        yb(j, d) = b(j, d) * g.between(n, j, d);
        ryb(j, d) = rounding_sq(rounding.b, yb(j, d));
      }
    for (std::int64_t i = n; i < std::min(n + kSubChunk, c); ++i)
      for (std::int64_t j = 0; j < c && in_triangle(i, j, tri); ++j) {
        double acc = 0.0;
        for (std::int64_t d = 0; d < kd; ++d) {
          if (j < n) {
            const double x = xa(i, d), y = yb(j, d);
            acc += rxa(i, d) * y * y + x * x * ryb(j, d);
          } else {  // the diagonal sub-block: exact per pair
            const double x = a(i, d) * g.between(i, j, d);
            const double y = b(j, d);
            acc += rounding_sq(rounding.a, x) * y * y + x * x * rounding_sq(rounding.b, y);
          }
        }
        var(i, j) = acc;  // the decay is inside the operands
      }
  }
  return var;
}

}  // namespace

Matrix decayed_gram_rounding_var(const Matrix& a, const Matrix& b, const ChunkGate& gate,
                                 Triangle tri, OperandRounding rounding) {
  if (gate.kind() == GateKind::kChannel) return channel_rounding_var(a, b, gate, tri, rounding);
  const std::int64_t c = a.rows();
  Matrix var(c, c);
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t j = 0; j < c && in_triangle(i, j, tri); ++j) {
      double acc = 0.0;
      for (std::int64_t d = 0; d < a.cols(); ++d) {
        const double x = a(i, d), y = b(j, d);
        acc += rounding_sq(rounding.a, x) * y * y + x * x * rounding_sq(rounding.b, y);
      }
      const double decay = gate.between(i, j, 0);  // 1 without a gate
      var(i, j) = acc * decay * decay;
    }
  }
  return var;
}

Matrix decayed_gram(const Matrix& a, const Matrix& b, const ChunkGate& gate, Triangle tri) {
  if (gate.kind() == GateKind::kChannel) return channel_gram(a, b, gate, tri);
  return factored_gram(a, b, gate, tri);
}

GramGrads decayed_gram_vjp(const Matrix& dp, const Matrix& a, const Matrix& b, const Matrix& p,
                           const ChunkGate& gate, Triangle tri) {
  if (gate.kind() == GateKind::kChannel) return channel_vjp(dp, a, b, gate, tri);
  Matrix m = masked(dp, tri);  // M = dP ⊙ Γ on the triangle
  for (std::int64_t i = 0; i < m.rows(); ++i)
    for (std::int64_t j = 0; j <= i; ++j) m(i, j) *= gate.between(i, j, 0);
  GramGrads out{matmul(m, b), matmul_tn(m, a), Matrix(a.rows(), gate.width())};
  if (gate.kind() == GateKind::kNone) return out;
  for (std::int64_t i = 0; i < a.rows(); ++i) {
    for (std::int64_t j = 0; j < i; ++j) {  // strictly lower: row sum to i, column sum from j
      const double w = dp(i, j) * p(i, j);
      out.d_gate(i, 0) += w;
      out.d_gate(j, 0) -= w;
    }
  }
  return out;
}

}  // namespace kcv::glr::detail
