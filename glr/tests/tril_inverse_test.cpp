// File: glr/tests/tril_inverse_test.cpp
// T = (I + L)^{-1} by 16×16 block forward substitution (gdn-spec.md §8), its VJP, and the
// scalar-gate identity T = T₀ ⊙ Γ of §4, on chunk sizes that are and are not multiples of 16.
// Bounds (γ_n = n·u/(1 − n·u)):
//   residual   |(I + L)·T̂ − I| ≤ γ_{2c} · |I + L|·|T̂| entrywise: every entry of T̂ is formed
//              by a chain of ≤ c products and sums in the diagonal substitution plus ≤ c in the
//              block merge (Higham, "Accuracy and Stability", ch. 8 and 14, bound of the same
//              form);
//   forward    |T̂ − T| ≤ |T|·|R| ≤ γ_{2c} · |T|·|I + L|·|T̂| (from the residual R);
//   VJP        the identity ⟨dL, E⟩ = −⟨dT, T E T⟩ for strictly lower E is exact; both sides are
//              sums of triple products, so they differ by ≤ 2γ_{3c}·Σ (|T|ᵀ|dT||T|ᵀ ⊙ |E|).
#include "glr/reference/tril_inverse.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "glr/reference/chunk_gate.hpp"
#include "glr/reference/decayed_gram.hpp"
#include "support/chunk_data.hpp"
#include "support/tolerances.hpp"

namespace kcv::glr {
namespace {

using detail::Matrix;

Matrix abs(Matrix m) {
  for (std::int64_t i = 0; i < m.rows(); ++i)
    for (std::int64_t j = 0; j < m.cols(); ++j) m(i, j) = std::abs(m(i, j));
  return m;
}

Matrix unit_plus(const Matrix& l) {
  Matrix a = l;
  for (std::int64_t i = 0; i < a.rows(); ++i) a(i, i) += 1.0;
  return a;
}

// L = diag(β)·StrictLower(K Kᵀ ⊙ Γ) of a GDN chunk.
Matrix delta_rule_l(const testing::ChunkData& d, GateKind gate) {
  const detail::ChunkGate g(gate, d.k.rows(), d.g);
  return detail::scale_rows(detail::decayed_gram(d.k, d.k, g, detail::Triangle::kStrict), d.beta);
}

class TrilInverse : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(TrilInverse, ResidualIsWithinTheSubstitutionBound) {
  const std::int64_t c = GetParam();
  for (testing::Decay decay : {testing::Decay::kWeak, testing::Decay::kModerate}) {
    const testing::ChunkData d = testing::make_chunk(c, 16, GateKind::kScalar, decay, 11 + c);
    const Matrix l = delta_rule_l(d, GateKind::kScalar);
    const Matrix t = detail::unit_lower_inverse(l);
    const Matrix r = detail::matmul(unit_plus(l), t);
    const Matrix bound = detail::matmul(abs(unit_plus(l)), abs(t));
    const double g = testing::gamma_n(2.0 * static_cast<double>(c));
    for (std::int64_t i = 0; i < c; ++i)
      for (std::int64_t j = 0; j < c; ++j) {
        EXPECT_LE(std::abs(r(i, j) - (i == j ? 1.0 : 0.0)), g * bound(i, j)) << i << "," << j;
        if (j > i) {
          EXPECT_EQ(t(i, j), 0.0);
        }
      }
  }
}

TEST_P(TrilInverse, VjpSatisfiesTheDirectionalDerivativeIdentity) {
  const std::int64_t c = GetParam();
  const testing::ChunkData d =
      testing::make_chunk(c, 16, GateKind::kChannel, testing::Decay::kModerate, 5 + c);
  const Matrix t = detail::unit_lower_inverse(delta_rule_l(d, GateKind::kChannel));
  const Matrix dt = testing::random_matrix(c, c, 100 + c);
  const Matrix e = detail::strict_lower(testing::random_matrix(c, c, 200 + c));
  const Matrix dl = detail::unit_lower_inverse_vjp(t, dt);
  const Matrix tet = detail::matmul(detail::matmul(t, e), t);
  const Matrix abs_core =
      detail::matmul(detail::matmul(detail::transpose(abs(t)), abs(dt)), detail::transpose(abs(t)));
  double lhs = 0.0, rhs = 0.0, scale = 0.0;
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < c; ++j) {
      lhs += dl(i, j) * e(i, j);
      rhs -= dt(i, j) * tet(i, j);
      scale += abs_core(i, j) * std::abs(e(i, j));
      if (j >= i) {
        EXPECT_EQ(dl(i, j), 0.0) << "dL must be strictly lower";
      }
    }
  EXPECT_LE(std::abs(lhs - rhs), 2.0 * testing::gamma_n(3.0 * static_cast<double>(c)) * scale);
}

// §4: with a scalar gate, L = E L₀ E⁻¹, so T = T₀ ⊙ Γ where T₀ inverts the gate-free L₀.
TEST_P(TrilInverse, ScalarGateInverseIsTheGateFreeInverseTimesGamma) {
  const std::int64_t c = GetParam();
  const testing::ChunkData d =
      testing::make_chunk(c, 16, GateKind::kScalar, testing::Decay::kModerate, 31 + c);
  const detail::ChunkGate gate(GateKind::kScalar, c, d.g);
  const Matrix l = delta_rule_l(d, GateKind::kScalar);
  const Matrix l0 = detail::scale_rows(detail::strict_lower(detail::matmul_nt(d.k, d.k)), d.beta);
  const Matrix t = detail::unit_lower_inverse(l);
  const Matrix t0 = detail::unit_lower_inverse(l0);
  const Matrix err_t = detail::matmul(detail::matmul(abs(t), abs(unit_plus(l))), abs(t));
  const Matrix err_t0 = detail::matmul(detail::matmul(abs(t0), abs(unit_plus(l0))), abs(t0));
  const double g = testing::gamma_n(2.0 * static_cast<double>(c));
  const double u = testing::gamma_n(1.0);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j <= i; ++j) {
      const double gamma_ij = gate.between(i, j, 0);
      const double bound = g * (err_t(i, j) + err_t0(i, j) * gamma_ij) + u * std::abs(t(i, j));
      EXPECT_LE(std::abs(t(i, j) - t0(i, j) * gamma_ij), bound) << i << "," << j;
    }
}

INSTANTIATE_TEST_SUITE_P(ChunkRows, TrilInverse, ::testing::Values(1, 5, 16, 17, 40, 64));

}  // namespace
}  // namespace kcv::glr
