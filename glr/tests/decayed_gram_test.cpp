// File: glr/tests/decayed_gram_test.cpp
// The decayed Gram matrix P_ij = Σ_d A_id B_jd exp(G_id − G_jd) of stage F2 and its VJP.
//   * The anchored 16×16 evaluation of a per-channel gate equals the exact per-pair sum. Per term
//     the two differ by at most γ_{K+5} (K-term sum, three products, exp within an ulp) plus the
//     exp of a rounded argument, u·(|G_i − G_n| + |G_n − G_j| + |G_i − G_j|) relative.
//   * A per-channel gate with equal channels gives the scalar path's (A Bᵀ) ⊙ Γ (same bound).
//   * The VJP satisfies ⟨dP, J·δ⟩ = ⟨dA, δA⟩ + ⟨dB, δB⟩ + ⟨dG, δG⟩ with the exact directional
//     derivative J·δ (per pair, in the test); both sides are sums of products, bounded by
//     2γ_{K+c+6} times the sum of the absolute terms. The gate part is checked on its own with the
//     absolute terms of the off-diagonal pairs only: under strong decay that bound is ~e^{-30}, so
//     any O(u) residue of the diagonal pair (which cancels exactly, Γ_ii = 1) would fail it.
// Strong decay drives exp() into the subnormal range, where rounding is absolute, not relative:
// every bound adds η = 2^-1074 (the subnormal spacing) per rounding (Higham §2.1, u and η model).
#include "glr/reference/decayed_gram.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <string>

#include "kcv/glr/chunked.hpp"
#include "support/chunk_data.hpp"
#include "support/tolerances.hpp"

namespace kcv::glr {
namespace {

using detail::ChunkGate;
using detail::Matrix;
using detail::Triangle;
using testing::Decay;

constexpr double kEta = std::numeric_limits<double>::denorm_min();

bool in_triangle(std::int64_t i, std::int64_t j, Triangle tri) {
  return tri == Triangle::kInclusive ? j <= i : j < i;
}

struct GramChunk {
  testing::ChunkData data;
  ChunkGate gate;
};

GramChunk gram_chunk(std::int64_t c, GateKind kind, Decay decay, std::uint64_t seed) {
  testing::ChunkData d = testing::make_chunk(c, 8, kind, decay, seed);
  ChunkGate g(kind, c, d.g);
  return {std::move(d), std::move(g)};
}

TEST(DecayedGram, AnchoredChannelBlocksEqualTheExactPerPairSum) {
  for (Decay decay : {Decay::kModerate, Decay::kStrong}) {
    for (std::int64_t c : {17, 64}) {
      const GramChunk s = gram_chunk(c, GateKind::kChannel, decay, 3 + c);
      const Matrix& a = s.data.q;
      const Matrix& b = s.data.k;
      const Matrix p = detail::decayed_gram(a, b, s.gate, Triangle::kInclusive);
      const double u = testing::gamma_n(1.0);
      for (std::int64_t i = 0; i < c; ++i)
        for (std::int64_t j = 0; j <= i; ++j) {
          const std::int64_t n = (i / kSubChunk) * kSubChunk;
          double exact = 0.0, bound = 0.0;
          for (std::int64_t d = 0; d < 8; ++d) {
            const double gi = s.gate.log_cum(i, d), gj = s.gate.log_cum(j, d),
                         gn = s.gate.log_cum(n, d);
            const double term = a(i, d) * b(j, d) * std::exp(gi - gj);
            exact += term;
            bound +=
                std::abs(term) * (testing::gamma_n(8 + 5) +
                                  u * (std::abs(gi - gn) + std::abs(gn - gj) + std::abs(gi - gj)));
          }
          EXPECT_LE(std::abs(p(i, j) - exact), bound + 2 * (8 + 5) * 8 * kEta) << i << "," << j;
        }
    }
  }
}

TEST(DecayedGram, ChannelGateWithEqualChannelsIsTheScalarGate) {
  const GramChunk s = gram_chunk(40, GateKind::kScalar, Decay::kModerate, 9);
  Matrix wide(40, 8);
  for (std::int64_t i = 0; i < 40; ++i)
    for (std::int64_t d = 0; d < 8; ++d) wide(i, d) = s.data.g(i, 0);
  const ChunkGate channel(GateKind::kChannel, 40, wide);
  const Matrix ps = detail::decayed_gram(s.data.k, s.data.k, s.gate, Triangle::kStrict);
  const Matrix pc = detail::decayed_gram(s.data.k, s.data.k, channel, Triangle::kStrict);
  const double u = testing::gamma_n(1.0);
  for (std::int64_t i = 0; i < 40; ++i)
    for (std::int64_t j = 0; j < i; ++j) {
      double abs_sum = 0.0;
      for (std::int64_t d = 0; d < 8; ++d) abs_sum += std::abs(s.data.k(i, d) * s.data.k(j, d));
      const double gij = std::abs(s.gate.log_cum(i, 0) - s.gate.log_cum(j, 0));
      const double bound =
          abs_sum * s.gate.between(i, j, 0) * (testing::gamma_n(8 + 5) + 4.0 * u * gij);
      EXPECT_LE(std::abs(ps(i, j) - pc(i, j)), bound + 2 * (8 + 5) * 8 * kEta) << i << "," << j;
    }
}

struct VjpCase {
  GateKind gate;
  Triangle tri;
  Decay decay;
};

std::string label(const VjpCase& v) {
  std::string out = v.gate == GateKind::kNone     ? "NoGate"
                    : v.gate == GateKind::kScalar ? "Scalar"
                                                  : "Channel";
  out += v.tri == Triangle::kInclusive ? "Inclusive" : "Strict";
  out += v.decay == Decay::kWeak ? "Weak" : v.decay == Decay::kStrong ? "Strong" : "Moderate";
  return out;
}

void PrintTo(const VjpCase& v, std::ostream* os) { *os << label(v); }

class DecayedGramVjp : public ::testing::TestWithParam<VjpCase> {};

TEST_P(DecayedGramVjp, SatisfiesTheAdjointIdentity) {
  const VjpCase vc = GetParam();
  const std::int64_t c = 40, kd = 8;
  const GramChunk s = gram_chunk(c, vc.gate, vc.decay, 21);
  const Matrix& a = s.data.q;
  const Matrix& b = s.data.k;
  const std::int64_t gw = s.gate.width();
  const Matrix dp = testing::random_matrix(c, c, 1), da_dir = testing::random_matrix(c, kd, 2);
  const Matrix db_dir = testing::random_matrix(c, kd, 3), dg_dir = testing::random_matrix(c, gw, 4);
  const Matrix p = detail::decayed_gram(a, b, s.gate, vc.tri);
  const detail::GramGrads gg = detail::decayed_gram_vjp(dp, a, b, p, s.gate, vc.tri);
  double ab_lhs = 0.0, ab_abs = 0.0, g_lhs = 0.0, g_abs = 0.0;
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < c; ++j) {
      if (!in_triangle(i, j, vc.tri)) continue;
      for (std::int64_t d = 0; d < kd; ++d) {
        const double gam = s.gate.between(i, j, d);
        const double ab = (da_dir(i, d) * b(j, d) + a(i, d) * db_dir(j, d)) * gam * dp(i, j);
        ab_lhs += ab;
        ab_abs += (std::abs(da_dir(i, d) * b(j, d)) + std::abs(a(i, d) * db_dir(j, d))) * gam *
                  std::abs(dp(i, j));
        if (gw == 0 || i == j) continue;
        const double ddg = dg_dir(i, s.gate.col(d)) - dg_dir(j, s.gate.col(d));
        g_lhs += a(i, d) * b(j, d) * gam * ddg * dp(i, j);
        g_abs += std::abs(a(i, d) * b(j, d) * gam * dp(i, j)) *
                 (std::abs(dg_dir(i, s.gate.col(d))) + std::abs(dg_dir(j, s.gate.col(d))));
      }
    }
  double ab_rhs = 0.0, g_rhs = 0.0;
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t d = 0; d < kd; ++d)
      ab_rhs += gg.da(i, d) * da_dir(i, d) + gg.db(i, d) * db_dir(i, d);
    for (std::int64_t d = 0; d < gw; ++d) g_rhs += gg.d_gate(i, d) * dg_dir(i, d);
  }
  const double tol = 2.0 * testing::gamma_n(static_cast<double>(kd + c + 6));
  const double eta = 2.0 * static_cast<double>(c * c * kd * (kd + c + 6)) * kEta;
  EXPECT_LE(std::abs(ab_lhs - ab_rhs), tol * ab_abs + eta);
  EXPECT_LE(std::abs(g_lhs - g_rhs), tol * g_abs + eta) << "gate part (off-diagonal pairs only)";
}

INSTANTIATE_TEST_SUITE_P(
    GateKinds, DecayedGramVjp,
    ::testing::Values(VjpCase{GateKind::kNone, Triangle::kInclusive, Decay::kModerate},
                      VjpCase{GateKind::kScalar, Triangle::kInclusive, Decay::kModerate},
                      VjpCase{GateKind::kScalar, Triangle::kStrict, Decay::kWeak},
                      VjpCase{GateKind::kScalar, Triangle::kInclusive, Decay::kStrong},
                      VjpCase{GateKind::kChannel, Triangle::kInclusive, Decay::kModerate},
                      VjpCase{GateKind::kChannel, Triangle::kStrict, Decay::kWeak},
                      VjpCase{GateKind::kChannel, Triangle::kInclusive, Decay::kStrong}),
    [](const ::testing::TestParamInfo<VjpCase>& info) { return label(info.param); });

}  // namespace
}  // namespace kcv::glr
