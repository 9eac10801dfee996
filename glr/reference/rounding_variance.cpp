// File: glr/reference/rounding_variance.cpp
// One chunk of the declared-rounding variance (rounding_variance.hpp). Each product C = A·B whose
// operands are rounded contributes R_A·B² + A²·R_B (R = (ρ⊙X)², squares elementwise): the
// variance of Σ_p (ε_ip A_ip) B_pj + A_ip (ε'_pj B_pj) for independent ε, ε' of size ≤ ρ. An
// upstream error δX of variance V_X reaching a linear map Y = M X adds M²·V_X. The formulas, stage
// by stage, are docs/glr/precision-contract.md §3.
#include "glr/reference/rounding_variance.hpp"

#include <cmath>

#include "glr/reference/decayed_gram.hpp"

namespace kcv::glr::detail {
namespace {

using P = Product;

Matrix abs_product(const Matrix& a, const Matrix& b) {  // |a| ⊙ |b|
  Matrix out(a.rows(), a.cols());
  for (std::int64_t i = 0; i < a.rows(); ++i)
    for (std::int64_t j = 0; j < a.cols(); ++j) out(i, j) = std::fabs(a(i, j) * b(i, j));
  return out;
}

Matrix geometric_mean(const Matrix& a, const Matrix& b) {  // sqrt(a ⊙ b)
  Matrix out(a.rows(), a.cols());
  for (std::int64_t i = 0; i < a.rows(); ++i)
    for (std::int64_t j = 0; j < a.cols(); ++j) out(i, j) = std::sqrt(a(i, j) * b(i, j));
  return out;
}

Matrix sum(Matrix a, const Matrix& b, double beta = 1.0) {
  axpy(beta, b, a);
  return a;
}

// Variance of Σ_p (ε ⊙ Y)_ip Z_pe over two right-hand uses Z1 (rounded r1) and Z2 (r2) of one
// value Y: the right-side twin of shared_rounding_var.
Matrix shared_right_var(const Matrix& y, const Matrix* y_var, Rounding r1, const Matrix& z1,
                        Rounding r2, const Matrix& z2) {
  const Matrix v1 = rounding_var(y, r1, y_var);
  if (r1 == r2) return matmul(v1, squared(sum(z1, z2)));
  const Matrix v2 = rounding_var(y, r2, y_var);
  Matrix out = sum(matmul(v1, squared(z1)), matmul(v2, squared(z2)));
  axpy(2.0, matmul(geometric_mean(v1, v2), abs_product(z1, z2)), out);
  return out;
}

// The delta rule's part of a chunk: Δ's own error (not through H) and the two maps A^qk W, K̄ᵀW
// through which the entering state's rounding and error reach o and the next state.
struct DeltaRuleVariance {
  Matrix delta_var;  ///< of Δ, from this chunk's roundings
  Matrix aw;         ///< A^qk W (c × K)
  Matrix kw;         ///< K̄ᵀ W (K × K)
  Matrix t_var;      ///< of T (the substitution's error, before T's own rounding)
  Matrix w_var;      ///< of W (before W's own rounding)
};

// Stages F2 (L, T) and F3 (W, U) and the local part of F4's Δ = U − W H.
DeltaRuleVariance delta_rule_variance(const ChunkInputs& in, const ChunkFactors& f, const Matrix& h,
                                      const PrecisionContract& c) {
  std::vector<double> beta_sq;
  for (double b : in.beta) beta_sq.push_back(b * b);
  const Matrix l = scale_rows(f.gram_kk, in.beta);
  const Matrix l_var = scale_rows(
      decayed_gram_rounding_var(in.k, in.k, in.gate, Triangle::kStrict, c[P::kGramKK]), beta_sq);
  // T = (I + L)⁻¹: δT = −T (δL T + E), E the rounding of the substitution's products L·T.
  const Matrix t2 = squared(f.t);
  Matrix solve = sum(matmul(rounding_var(l, c[P::kSolve].a, &l_var), t2),
                     matmul(squared(l), rounding_var(f.t, c[P::kSolve].b)));
  const Matrix t_var = strict_lower(matmul(t2, sum(matmul(l_var, t2), solve)));
  // U − W H = T (Ṽ − X H): T's error and T's rounding reach Δ through both uses together.
  const Matrix xh = matmul(f.x, h);
  const Matrix h2 = squared(h);
  const Matrix x_round = rounding_var(f.x, c[P::kWyW].b);
  Matrix minus_xh = xh;
  for (std::int64_t i = 0; i < xh.rows(); ++i)
    for (std::int64_t e = 0; e < xh.cols(); ++e) minus_xh(i, e) = -xh(i, e);
  DeltaRuleVariance out;
  out.delta_var = matmul(t_var, squared(sum(f.v_tilde, xh, -1.0)));
  axpy(1.0, shared_right_var(f.t, &t_var, c[P::kWyU].a, f.v_tilde, c[P::kWyW].a, minus_xh),
       out.delta_var);
  axpy(1.0, matmul(t2, matmul(x_round, h2)), out.delta_var);                    // X in W = T X
  axpy(1.0, matmul(t2, rounding_var(f.v_tilde, c[P::kWyU].b)), out.delta_var);  // Ṽ in U = T Ṽ
  const Matrix w_var =
      sum(matmul(sum(t_var, rounding_var(f.t, c[P::kWyW].a, &t_var)), squared(f.x)),
          matmul(t2, x_round));
  axpy(1.0, matmul(rounding_var(f.w, c[P::kStateW].a, &w_var), h2), out.delta_var);  // W in W H
  const Matrix u_var =
      sum(matmul(t_var, squared(f.v_tilde)), matmul(t2, rounding_var(f.v_tilde, c[P::kWyU].b)));
  axpy(1.0, rounding_var(f.u, c.u_addend, &u_var), out.delta_var);  // U as Δ's addend
  out.aw = matmul(f.a_qk, f.w);
  out.kw = matmul_tn(f.k_bar, f.w);
  out.t_var = t_var;
  out.w_var = w_var;
  return out;
}

}  // namespace

DeltaRuleForwardVariance delta_rule_forward_variance(const ChunkInputs& in, const ChunkFactors& f,
                                                     const Matrix& h,
                                                     const PrecisionContract& contract) {
  DeltaRuleVariance v = delta_rule_variance(in, f, h, contract);
  return {std::move(v.t_var), std::move(v.w_var), std::move(v.delta_var)};
}

Matrix squared(const Matrix& x) {
  Matrix out(x.rows(), x.cols());
  for (std::int64_t i = 0; i < x.rows(); ++i)
    for (std::int64_t j = 0; j < x.cols(); ++j) out(i, j) = x(i, j) * x(i, j);
  return out;
}

Matrix rounding_var(const Matrix& x, Rounding r, const Matrix* var) {
  Matrix out(x.rows(), x.cols());
  if (r == Rounding::kNone) return out;
  const double u = unit_roundoff(r);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    for (std::int64_t j = 0; j < x.cols(); ++j) {
      const bool exact = representable(r, x(i, j)) && (var == nullptr || (*var)(i, j) == 0.0);
      out(i, j) = exact ? 0.0 : u * u * x(i, j) * x(i, j);
    }
  return out;
}

Matrix shared_rounding_var(const Matrix& c1, Rounding r1, const Matrix& c2, Rounding r2,
                           const Matrix& y, const Matrix* y_var) {
  const Matrix v1 = rounding_var(y, r1, y_var);
  if (r1 == r2) return matmul(squared(sum(c1, c2)), v1);
  const Matrix v2 = rounding_var(y, r2, y_var);
  Matrix out = sum(matmul(squared(c1), v1), matmul(squared(c2), v2));
  axpy(2.0, matmul(abs_product(c1, c2), geometric_mean(v1, v2)), out);
  return out;
}

ChunkVariance chunk_rounding_variance(const ChunkInputs& in, const ChunkFactors& f, const Matrix& h,
                                      const Matrix& h_var, const Matrix& delta, const Matrix& next,
                                      double scale, bool delta_rule, const PrecisionContract& c) {
  const std::int64_t rows = delta.rows();
  const std::int64_t kd = h.rows();
  const Matrix h2 = squared(h);
  const Matrix d2 = squared(delta);
  DeltaRuleVariance dr{Matrix(rows, delta.cols()), Matrix(rows, kd), Matrix(kd, kd)};
  if (delta_rule) dr = delta_rule_variance(in, f, h, c);
  // Δ's error, for the exactness test of its rounding only: local part plus W δH.
  const Matrix delta_upstream =
      delta_rule ? sum(dr.delta_var, matmul(squared(f.w), h_var)) : Matrix(rows, delta.cols());
  // F5: O = scale (Q̄ H + A^qk Δ), Δ = Δ_local − W H.
  const Matrix a_var =
      decayed_gram_rounding_var(in.q, in.k, in.gate, Triangle::kInclusive, c[P::kGramQK]);
  const Matrix neg_aw = sum(Matrix(rows, kd), dr.aw, -1.0);
  Matrix o = matmul(rounding_var(f.q_bar, c[P::kOutputInter].a), h2);
  const Rounding h_in_w = delta_rule ? c[P::kStateW].b : Rounding::kNone;
  axpy(1.0, shared_rounding_var(f.q_bar, c[P::kOutputInter].b, neg_aw, h_in_w, h, &h_var), o);
  axpy(1.0, matmul(squared(sum(f.q_bar, neg_aw)), h_var), o);
  axpy(1.0, matmul(sum(a_var, rounding_var(f.a_qk, c[P::kOutputIntra].a, &a_var)), d2), o);
  axpy(1.0,
       matmul(squared(f.a_qk),
              sum(rounding_var(delta, c[P::kOutputIntra].b, &delta_upstream), dr.delta_var)),
       o);
  for (std::int64_t i = 0; i < o.rows(); ++i)
    for (std::int64_t e = 0; e < o.cols(); ++e) o(i, e) *= scale * scale;
  // F4: H' = M H + K̄ᵀ Δ_local, M = Diag(e_last) − K̄ᵀ W.
  Matrix m = sum(Matrix(kd, kd), dr.kw, -1.0);
  for (std::int64_t d = 0; d < kd; ++d) m(d, d) += f.e_last[d];
  Matrix n = matmul(squared(m), h_var);
  axpy(1.0, matmul_tn(rounding_var(f.k_bar, c[P::kStateUpdate].a), d2), n);
  axpy(1.0,
       matmul_tn(squared(f.k_bar),
                 sum(rounding_var(delta, c[P::kStateUpdate].b, &delta_upstream), dr.delta_var)),
       n);
  axpy(1.0, matmul(squared(dr.kw), rounding_var(h, h_in_w, &h_var)), n);
  axpy(1.0, rounding_var(next, c.state_carry, &n), n);
  return {std::move(o), std::move(n)};
}

}  // namespace kcv::glr::detail
