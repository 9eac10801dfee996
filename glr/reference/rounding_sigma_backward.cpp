// File: glr/reference/rounding_sigma_backward.cpp
// declared_backward_sigma and backward_bounds (include/kcv/glr/error_model.hpp): the declared-
// rounding term of dq, dk, dv, dg, dβ and dh0 for every member. The delta rule's chunk is
// delta_chunk_variance below (precision-contract.md §6, "The delta rule"); a per-channel gate's
// Gram VJPs are channel_gram_vjp_variance.hpp. Per (sequence, value head): the forward records with
// each chunk's state variance (rounding_variance.hpp), the reverse scan with the variance of the
// carried state gradient, then per chunk the first-order variance of each gradient under the
// contract's backward roundings. The derivation is docs/glr/precision-contract.md §6; in short,
// with H the state entering a chunk (variance V_H), S the one leaving it (V_S), dS = ∂L/∂S
// (V_dS), dP = scale·Γ ⊙ Tril_incl(dO Δᵀ):
//   dS_entry = Diag(e_last) dS + scale·Q̄ᵀ dO    e_last²·V_dS + scale²·R_Q̄ᵀ·dO²
//   dv = scale·A^qkᵀ dO + K̄ dS                   scale²·(R_A + V_A)ᵀ·dO² + R_K̄·dS²
//                                                 + K̄²·(R_dS + V_dS)
//   dq = scale·(dO Hᵀ) ⊙ E + dP K                scale²e²·dO²·(R_H + V_H)ᵀ + R_dP·K²
//   dk = (Δ dSᵀ) ⊙ R + dPᵀ Q                     r²·Δ²·(R_dS + V_dS)ᵀ + R_dPᵀ·Q²
//   dg_t = Σ_{s=t..last} (q_s·dq_s − k_s·dk_s) + ⟨S, dS⟩, each rounded value through all of its
//   uses at once (one value, one error).
// Rounded values read twice (dS by K̄ dS and Δ dSᵀ; H by dO Hᵀ and, as S, by dg's boundary term)
// must be read in one format. q, k, v and dO must be exact in the formats the contract reads them
// in (bf16 inputs under the bf16 grade); otherwise the function returns an error.
#include <algorithm>
#include <cmath>
#include <span>

#include "glr/oracle/validate.hpp"
#include "glr/reference/channel_gram_vjp_variance.hpp"
#include "glr/reference/chunk_gate.hpp"
#include "glr/reference/chunk_pass.hpp"
#include "glr/reference/decayed_gram.hpp"
#include "glr/reference/rounding_variance.hpp"
#include "kcv/glr/error_model.hpp"

namespace kcv::glr {
namespace {

using detail::Matrix;
using P = Product;

Matrix plus(Matrix a, const Matrix& b) {
  detail::axpy(1.0, b, a);
  return a;
}

bool any_nonzero(const Matrix& m) {
  for (std::int64_t i = 0; i < m.rows(); ++i)
    for (std::int64_t j = 0; j < m.cols(); ++j)
      if (m(i, j) != 0.0) return true;
  return false;
}

double dot_sq(const Matrix& w, const Matrix& x) {  // Σ w ⊙ x
  double s = 0.0;
  for (std::int64_t i = 0; i < w.rows(); ++i)
    for (std::int64_t j = 0; j < w.cols(); ++j) s += w(i, j) * x(i, j);
  return s;
}

// The variances of one (sequence, value head), added into the whole problem's variance vectors.
struct Variances {
  std::vector<double> dq, dk, dv, dg, dbeta, dh0;
};

struct Roundings {
  Rounding qbar, abar_dv, kbar, ds, h, dp;
};

Status check_contract(const PrecisionContract& c, Roundings& r) {
  if (c[P::kScanState].b != c[P::kGradKey].b)
    return detail::invalid_argument(
        "contract: dS must be read in one format by scan_state and grad_key");
  r = {c[P::kScanQuery].a, c[P::kLocalDeltaGrad].a, c[P::kScanState].a,
       c[P::kScanState].b, c[P::kGradQuery].b,      c[P::kGramVjp].a};
  return {};
}

// Inputs the bound takes as exact: the operands the contract reads q, k, v and dO as.
Status check_exact_inputs(const detail::ChunkInputs& in, const Matrix& d_o,
                          const PrecisionContract& c) {
  const bool inexact = any_nonzero(detail::rounding_var(in.q, c[P::kGramVjp].b)) ||
                       any_nonzero(detail::rounding_var(in.k, c[P::kGramVjp].b)) ||
                       any_nonzero(detail::rounding_var(in.v, c[P::kGradKey].a)) ||
                       any_nonzero(detail::rounding_var(in.v, c[P::kGradA].b)) ||
                       any_nonzero(detail::rounding_var(d_o, c[P::kLocalDeltaGrad].b)) ||
                       any_nonzero(detail::rounding_var(d_o, c[P::kGradQuery].a)) ||
                       any_nonzero(detail::rounding_var(d_o, c[P::kScanQuery].b)) ||
                       any_nonzero(detail::rounding_var(d_o, c[P::kGradA].a));
  if (inexact)
    return detail::invalid_argument(
        "q, k, v and d_o must be exact in the formats the contract reads them in");
  return {};
}

// dg's variance for every row t of one chunk, rows × gate width, from the combined maps of §6:
// the terms through H (its rounding and forward error) and dS (its rounding and carried error),
// and, for a scalar gate, dP's rounding (`r_dp`; a per-channel gate's Gram VJP terms are
// channel_gram_vjp_variance's). The boundary term is e_last·⟨H, dS⟩ + Σ_{s<last} r_s k_s·(dS Δ_s)
// (the state leaving the chunk is not read), so H's rounding and forward error share one
// coefficient, C_t + e_last·dS, and dS's is D_t = e_last·H + Σ_{s<t} r_s k_s ⊗ Δ_s, the state after
// row t − 1 carried to the chunk's end. D_t is summed forward from H, not as the leaving state
// minus a suffix: under strong decay it is far below the leaving state's last bit. A per-channel
// gate keeps channel d's terms in column d.
Matrix dg_variance(const detail::ChunkRecord& rec, const Matrix& d_o, const Matrix* r_dp,
                   const Matrix& r_h, const Matrix& v_h, const Matrix& ds_var, double scale) {
  const detail::ChunkInputs& in = rec.in;
  const std::int64_t c = in.k.rows(), kd = in.k.cols(), vd = in.v.cols();
  const Matrix& ds = rec.d_end;
  Matrix out(c, in.gate.width());
  Matrix dcoef(kd, vd);  // D_t
  for (std::int64_t d = 0; d < kd; ++d)
    for (std::int64_t x = 0; x < vd; ++x)
      dcoef(d, x) = rec.f.e_last[static_cast<std::size_t>(d)] * rec.h(d, x);
  for (std::int64_t t = 0; t < c; ++t)
    for (std::int64_t d = 0; d < kd; ++d) {
      double var = 0.0;
      for (std::int64_t x = 0; x < vd; ++x) var += dcoef(d, x) * dcoef(d, x) * ds_var(d, x);
      out(t, in.gate.col(d)) += var;
      const double rk = in.gate.to_end(t, d) * in.k(t, d);
      for (std::int64_t x = 0; x < vd; ++x) dcoef(d, x) += rk * rec.delta(t, x);
    }
  Matrix ch(kd, vd);  // C_t = scale·Σ_{s≥t} e_s q_s ⊗ dO_s: H's coefficient through dq
  const Matrix qk = r_dp != nullptr ? detail::matmul_nt(in.q, in.k) : Matrix();
  for (std::int64_t t = c - 1; t >= 0; --t) {
    for (std::int64_t d = 0; d < kd; ++d) {
      const double e = in.gate.from_start(t, d);
      for (std::int64_t x = 0; x < vd; ++x) ch(d, x) += scale * e * in.q(t, d) * d_o(t, x);
    }
    if (r_dp != nullptr) {
      double var = 0.0;
      for (std::int64_t i = t; i < c; ++i)  // dP's rounding: pairs j < t ≤ i do not cancel
        for (std::int64_t j = 0; j < t; ++j) var += (*r_dp)(i, j) * qk(i, j) * qk(i, j);
      out(t, 0) += var;
    }
    for (std::int64_t d = 0; d < kd; ++d) {
      const double el = rec.f.e_last[static_cast<std::size_t>(d)];
      double var = 0.0;
      for (std::int64_t x = 0; x < vd; ++x) {
        const double through_h = ch(d, x) + el * ds(d, x);
        var += through_h * through_h * (r_h(d, x) + v_h(d, x));
      }
      out(t, in.gate.col(d)) += var;
    }
  }
  return out;
}

// kda's dg variance, rows × K (§6, "The delta rule with a per-channel gate"), in the reference's
// form dg_t,d = Σ_{s≥t} dG_s,d: the terms through H and dS with their combined coefficients
// (dg_variance), Δ's error through dk's inter-chunk term of the rows before t (the rows from t on
// cancel against the last row's sum), the Gram VJPs of A^qk and of L with their combined
// coefficients (`gram_dg`, channel_gram_vjp_variance), and X ⊙ dX row by row (`x_term`: x²·V_dX).
Matrix kda_dg_variance(const detail::ChunkRecord& rec, const Matrix& d_o, const Matrix& gram_dg,
                       const Matrix& x_term, const Matrix& delta_all, const Matrix& r_h,
                       const Matrix& v_h, const Matrix& ds_all, double scale) {
  const detail::ChunkInputs& in = rec.in;
  const std::int64_t c = in.k.rows(), kd = in.k.cols();
  Matrix out = dg_variance(rec, d_o, nullptr, r_h, v_h, ds_all, scale);
  detail::axpy(1.0, gram_dg, out);
  const Matrix through_delta = detail::matmul_nt(delta_all, detail::squared(rec.d_end));
  for (std::int64_t d = 0; d < kd; ++d) {
    double rows_from_t = 0.0, rows_before_t = 0.0;
    for (std::int64_t t = c - 1; t >= 0; --t) {
      rows_from_t += x_term(t, d);
      out(t, d) += rows_from_t;
    }
    for (std::int64_t t = 0; t < c; ++t) {
      out(t, d) += rows_before_t;
      const double kr = in.k(t, d) * in.gate.to_end(t, d);
      rows_before_t += kr * kr * through_delta(t, d);
    }
  }
  return out;
}

// The delta rule's backward roundings (§6, "The delta rule"). dΔ, H and Δ are each rounded once
// and read by several products, so the contract must read each in one format.
struct DeltaRoundings {
  Rounding w, dd, h, delta, dw, x, vt, t, dt, m;
};

Status check_delta_contract(const PrecisionContract& c, DeltaRoundings& r) {
  const Rounding dd = c[P::kScanW].b;
  if (c[P::kGradW].a != dd || c[P::kWyGradT].a != dd || c[P::kWyGradX].b != dd)
    return detail::invalid_argument(
        "contract: dΔ must be read in one format by scan_w, grad_w, wy_grad_t and wy_grad_x");
  if (c[P::kGradW].b != c[P::kGradQuery].b)
    return detail::invalid_argument(
        "contract: H must be read in one format by grad_query and grad_w");
  if (c[P::kGradA].b != c[P::kGradKey].a)
    return detail::invalid_argument(
        "contract: Δ must be read in one format by grad_a and grad_key");
  r = {c[P::kScanW].a,    dd,
       c[P::kGradW].b,    c[P::kGradA].b,
       c[P::kWyGradT].a,  c[P::kWyGradT].b,
       c[P::kWyGradT].b,  c[P::kWyGradX].a,
       c[P::kSolveVjp].b, c[P::kGramVjp].a};
  return {};
}

Matrix scaled(Matrix m, double f) {
  for (std::int64_t i = 0; i < m.rows(); ++i)
    for (std::int64_t j = 0; j < m.cols(); ++j) m(i, j) *= f;
  return m;
}

// One chunk of a delta-rule member without a gate or with a scalar gate: the variances of dq, dk
// (this value head's part), dv, dβ, dg (scalar gate) and of the state gradient handed to the
// previous chunk. v_h: the entering state's forward variance; ds_var: the carried variance of
// dS = rec.d_end; s_end, v_s: the leaving state and its forward variance.
struct DeltaChunkVariance {
  Matrix dq, dk, dv;
  std::vector<double> dbeta;
  Matrix dg;  ///< rows × gate width
  Matrix ds_entry;
};

DeltaChunkVariance delta_chunk_variance(const detail::ChunkRecord& rec, const Matrix& d_o,
                                        const Matrix& v_h, const Matrix& ds_var,
                                        const Matrix& s_end, const Matrix& v_s, bool gated,
                                        const PrecisionContract& c, const Roundings& rd,
                                        const DeltaRoundings& dr, double scale) {
  using detail::matmul;
  using detail::matmul_nt;
  using detail::matmul_tn;
  using detail::rounding_var;
  using detail::squared;
  const detail::ChunkInputs& in = rec.in;
  const detail::ChunkFactors& f = rec.f;
  const std::int64_t rows = in.k.rows(), kd = in.k.cols();
  const double sc2 = scale * scale;
  const Matrix dos = squared(d_o);
  // The forward's values and their variances (rounding_variance.hpp).
  const detail::DeltaRuleForwardVariance fv = detail::delta_rule_forward_variance(in, f, rec.h, c);
  const Matrix h_all = plus(rounding_var(rec.h, dr.h, &v_h), v_h);
  const Matrix v_delta = plus(
      fv.delta_local, matmul(squared(f.w), plus(v_h, rounding_var(rec.h, c[P::kStateW].b, &v_h))));
  const Matrix delta_all = plus(rounding_var(rec.delta, dr.delta, &v_delta), v_delta);
  const Matrix t_all = plus(rounding_var(f.t, dr.t, &fv.t), fv.t);
  const Matrix w_all = plus(rounding_var(f.w, dr.w, &fv.w), fv.w);
  const Matrix t2 = squared(f.t), k2 = squared(in.k);
  // B1 + B2: dΔ = scale·A^qkᵀ dO + K̄ dS; its error apart from the carried dS error (which goes
  // through N below together with its direct path).
  const Matrix r_ds = rounding_var(rec.d_end, rd.ds, &ds_var);
  const Matrix a_var = detail::decayed_gram_rounding_var(
      in.q, in.k, in.gate, detail::Triangle::kInclusive, c[P::kGramQK]);
  Matrix dd_local =
      scaled(matmul_tn(plus(rounding_var(f.a_qk, rd.abar_dv, &a_var), a_var), dos), sc2);
  detail::axpy(1.0, matmul(rounding_var(f.k_bar, rd.kbar), squared(rec.d_end)), dd_local);
  const Matrix v_dd = plus(dd_local, matmul(squared(f.k_bar), plus(r_ds, ds_var)));
  const Matrix r_dd = rounding_var(rec.d_delta, dr.dd, &v_dd);
  const Matrix dd_all = plus(r_dd, v_dd);
  const Matrix dd2 = squared(rec.d_delta);
  DeltaChunkVariance out;
  // dS_entry = N dS + scale·Q̄ᵀ dO − Wᵀ(dΔ_local + ε), N = Diag(e_last) − Wᵀ K̄.
  const Matrix wk = matmul_tn(f.w, f.k_bar);
  Matrix n = scaled(wk, -1.0);
  for (std::int64_t d = 0; d < kd; ++d) n(d, d) += f.e_last[static_cast<std::size_t>(d)];
  out.ds_entry = matmul(squared(n), ds_var);
  detail::axpy(1.0, matmul(squared(wk), r_ds), out.ds_entry);
  detail::axpy(1.0, matmul_tn(squared(f.w), plus(dd_local, r_dd)), out.ds_entry);
  detail::axpy(1.0, matmul_tn(w_all, dd2), out.ds_entry);
  detail::axpy(sc2, matmul_tn(rounding_var(f.q_bar, rd.qbar), dos), out.ds_entry);
  // B3: dP = scale·Γ ⊙ Tril_incl(dO Δᵀ) with Δ rounded and in error; dq, dk's output part.
  // A per-channel gate (kda) keeps its decay inside the Gram: dP = scale·Tril_incl(dO Δᵀ), and
  // the Gram VJP's variance is channel_gram_vjp_variance's.
  const bool channel = in.gate.kind() == GateKind::kChannel;
  Matrix dp = detail::lower_inclusive(matmul_nt(d_o, rec.delta));
  Matrix v_dp = detail::lower_inclusive(matmul_nt(dos, delta_all));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j <= i; ++j) {
      const double gm = scale * (channel ? 1.0 : in.gate.between(i, j, 0));
      dp(i, j) *= gm;
      v_dp(i, j) *= gm * gm;
    }
  const Matrix dp_all = plus(rounding_var(dp, rd.dp, &v_dp), v_dp);
  const Matrix ds_all = plus(r_ds, ds_var);
  // the inter-chunk terms, then the Gram VJP of A^qk (kept apart for kda's dg: `rest`)
  out.dq = matmul_nt(dos, h_all);
  out.dk = plus(matmul_nt(squared(rec.delta), ds_all), matmul_nt(delta_all, squared(rec.d_end)));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      const double e = in.gate.from_start(i, d), r = in.gate.to_end(i, d);
      out.dq(i, d) *= sc2 * e * e;
      out.dk(i, d) *= r * r;
    }
  Matrix dq_rest, dk_rest, gram_dg;  // gram_dg: the Gram VJPs' share of kda's dg
  if (channel) {
    detail::ChannelGramVjpVariance a =
        detail::channel_gram_vjp_variance(in.q, in.k, in.gate, dp, &v_dp, c[P::kGramVjp]);
    dq_rest = std::move(a.dq);
    dk_rest = std::move(a.dk);
    gram_dg = std::move(a.dg);
  } else {
    dq_rest = matmul(dp_all, k2);
    dk_rest = matmul_tn(dp_all, squared(in.q));
  }
  // B4: dW = −dΔ Hᵀ, dṼ = Tᵀ dΔ, dX = Tᵀ dW.
  const Matrix dw = scaled(matmul_nt(rec.d_delta, rec.h), -1.0);
  const Matrix v_dw_h = matmul_nt(dd2, h_all);  // H's rounding and error through dW
  const Matrix v_dw = plus(matmul_nt(dd_all, squared(rec.h)), v_dw_h);
  const Matrix r_dw = rounding_var(dw, dr.dw, &v_dw);
  const Matrix dw_all = plus(r_dw, v_dw);
  const Matrix v_dvt = plus(matmul_tn(t_all, dd2), matmul_tn(t2, dd_all));
  const Matrix v_dx = plus(matmul_tn(t_all, squared(dw)), matmul_tn(t2, dw_all));
  std::vector<double> beta2;  // β²
  for (std::int64_t i = 0; i < rows; ++i)
    beta2.push_back(in.beta[static_cast<std::size_t>(i)] * in.beta[static_cast<std::size_t>(i)]);
  out.dv = detail::scale_rows(v_dvt, beta2);
  Matrix x_term(rows, kd);                 // kda's dg: X ⊙ dX, x²·V_dX
  for (std::int64_t i = 0; i < rows; ++i)  // X = diag(β)(K ⊙ E): dk += β e ⊙ dX
    for (std::int64_t d = 0; d < kd; ++d) {
      const double e = in.gate.from_start(i, d);
      dk_rest(i, d) += beta2[static_cast<std::size_t>(i)] * e * e * v_dx(i, d);
      x_term(i, d) = f.x(i, d) * f.x(i, d) * v_dx(i, d);
    }
  // dT = StrictLower(dW Xᵀ + dΔ Ṽᵀ): dΔ's error through both uses at once, δdΔ (Ṽ − X H)ᵀ.
  Matrix z = f.v_tilde;
  detail::axpy(-1.0, matmul(f.x, rec.h), z);
  Matrix v_dt = matmul_nt(dd_all, squared(z));
  detail::axpy(1.0, matmul_nt(plus(v_dw_h, r_dw), squared(f.x)), v_dt);
  detail::axpy(1.0, matmul_nt(squared(dw), rounding_var(f.x, dr.x)), v_dt);
  detail::axpy(1.0, matmul_nt(dd2, rounding_var(f.v_tilde, dr.vt)), v_dt);
  v_dt = detail::strict_lower(std::move(v_dt));
  Matrix dt = matmul_nt(dw, f.x);
  detail::axpy(1.0, matmul_nt(rec.d_delta, f.v_tilde), dt);
  dt = detail::strict_lower(std::move(dt));
  const Matrix dt_all = plus(rounding_var(dt, dr.dt, &v_dt), v_dt);
  // dL = −StrictLower(Y Tᵀ), Y = Tᵀ dT (Y rounded as the second product's operand).
  const Matrix y = matmul_tn(f.t, dt);
  const Matrix v_y = plus(matmul_tn(t_all, squared(dt)), matmul_tn(t2, dt_all));
  const Matrix y_all = plus(rounding_var(y, dr.dt, &v_y), v_y);
  const Matrix v_dl =
      detail::strict_lower(plus(matmul_nt(y_all, t2), matmul_nt(squared(y), t_all)));
  const Matrix dl = detail::strict_lower(scaled(matmul_nt(y, f.t), -1.0));
  // M = β ⊙ dL ⊙ Γ (the Gram VJP's dP; kda: β ⊙ dL, its decay inside the Gram):
  // dk += M K + Mᵀ K.
  Matrix m = detail::scale_rows(dl, in.beta), v_m = detail::scale_rows(v_dl, beta2);
  if (channel) {
    const detail::ChannelGramVjpVariance l = detail::channel_gram_vjp_variance(
        in.k, in.k, in.gate, m, &v_m, OperandRounding{dr.m, c[P::kGramVjp].b});
    detail::axpy(1.0, plus(l.dq, l.dk), dk_rest);
    detail::axpy(1.0, l.dg, gram_dg);
  } else {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < i; ++j) {
        const double gm = in.gate.between(i, j, 0);
        m(i, j) *= gm;
        v_m(i, j) *= gm * gm;
      }
    const Matrix m_all = plus(rounding_var(m, dr.m, &v_m), v_m);
    detail::axpy(1.0, plus(matmul(m_all, k2), matmul_tn(m_all, k2)), dk_rest);
  }
  detail::axpy(1.0, dq_rest, out.dq);
  detail::axpy(1.0, dk_rest, out.dk);
  // dβ = Σ_e v·dṼ + Σ_d e k·dX + Σ_j dL ⊙ P(K, K) (P decayed): fp32 sums of unrounded values.
  out.dbeta.assign(static_cast<std::size_t>(rows), 0.0);
  for (std::int64_t i = 0; i < rows; ++i) {
    double var = 0.0;
    for (std::int64_t x = 0; x < in.v.cols(); ++x) var += in.v(i, x) * in.v(i, x) * v_dvt(i, x);
    for (std::int64_t d = 0; d < kd; ++d) {
      const double e = in.gate.from_start(i, d);
      var += e * e * k2(i, d) * v_dx(i, d);
    }
    for (std::int64_t j = 0; j < i; ++j) var += f.gram_kk(i, j) * f.gram_kk(i, j) * v_dl(i, j);
    out.dbeta[static_cast<std::size_t>(i)] = var;
  }
  if (!gated) return out;
  if (channel) {
    out.dg = kda_dg_variance(rec, d_o, gram_dg, x_term, delta_all, rounding_var(rec.h, dr.h, &v_h),
                             v_h, ds_all, scale);
    return out;
  }
  // dg_t = Σ_{s ≥ t} (q_s·dq_s − v_s·dv_s) + ⟨S, dS⟩ (§2.3 with the delta rule): the row
  // products' errors taken as independent (not through combined coefficients as for ssd), and
  // the boundary's two rounded, erring factors.
  const Matrix v_s_all = plus(rounding_var(s_end, rd.h, &v_s), v_s);
  const double boundary = dot_sq(squared(rec.d_end), v_s_all) + dot_sq(squared(s_end), ds_all);
  out.dg = Matrix(rows, 1);
  double running = 0.0;
  for (std::int64_t i = rows - 1; i >= 0; --i) {
    for (std::int64_t d = 0; d < kd; ++d) running += in.q(i, d) * in.q(i, d) * out.dq(i, d);
    for (std::int64_t x = 0; x < in.v.cols(); ++x)
      running += in.v(i, x) * in.v(i, x) * out.dv(i, x);
    out.dg(i, 0) = running + boundary;
  }
  return out;
}

// One (sequence, value head): forward variances, reverse scan, per-chunk gradient variances.
Status head_variance(Member m, const Problem& p, const Cotangents& cot, std::int64_t n,
                     std::int64_t hv, const PrecisionContract& c, const Roundings& rd,
                     const DeltaRoundings& dr, ChunkOptions opt, Variances& out) {
  const Shape& s = p.shape;
  const bool gated = traits(m).gate != GateKind::kNone;
  const bool delta = traits(m).delta_rule;
  Matrix final_state;
  std::vector<detail::ChunkRecord> recs =
      detail::forward_records(m, p, n, hv, opt.chunk_size, &final_state);
  std::vector<Matrix> h_var, s_var;
  Matrix hv_run(s.key_dim, s.value_dim);
  for (std::size_t j = 0; j < recs.size(); ++j) {
    const Matrix& next = j + 1 < recs.size() ? recs[j + 1].h : final_state;
    const detail::GateTable factors(recs[j].in.gate);
    detail::ChunkVariance v = detail::chunk_rounding_variance(
        recs[j].in, recs[j].f, recs[j].h, hv_run, recs[j].delta, next, p.scale, delta, c);
    h_var.push_back(hv_run);
    hv_run = std::move(v.next_state);
    s_var.push_back(hv_run);
  }
  detail::reverse_scan(p, cot, n, hv, delta, recs);
  Matrix ds_var(s.key_dim, s.value_dim);  // dht is an fp32 input: exact
  const double sc2 = p.scale * p.scale;
  const std::int64_t group = s.v_heads / s.qk_heads;
  for (std::size_t jj = recs.size(); jj-- > 0;) {
    const detail::ChunkRecord& rec = recs[jj];
    const detail::ChunkInputs& in = rec.in;
    const detail::GateTable factors(in.gate);
    const Matrix d_o = detail::gather_rows(cot.d_o, s, hv, rec.range);
    if (Status st = check_exact_inputs(in, d_o, c); !st) return st;
    const std::int64_t rows = in.k.rows();
    if (delta) {
      const Matrix& s_end = jj + 1 < recs.size() ? recs[jj + 1].h : final_state;
      DeltaChunkVariance dv = delta_chunk_variance(rec, d_o, h_var[jj], ds_var, s_end, s_var[jj],
                                                   gated, c, rd, dr, p.scale);
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t t = rec.range.begin + i;
        for (std::int64_t d = 0; d < s.key_dim; ++d) {
          const auto at = static_cast<std::size_t>((t * s.qk_heads + hv / group) * s.key_dim + d);
          out.dq[at] += dv.dq(i, d);
          out.dk[at] += dv.dk(i, d);
        }
        for (std::int64_t x = 0; x < s.value_dim; ++x)
          out.dv[static_cast<std::size_t>((t * s.v_heads + hv) * s.value_dim + x)] = dv.dv(i, x);
        out.dbeta[static_cast<std::size_t>(t * s.v_heads + hv)] =
            dv.dbeta[static_cast<std::size_t>(i)];
        for (std::int64_t d = 0; gated && d < dv.dg.cols(); ++d)
          out.dg[static_cast<std::size_t>((t * s.v_heads + hv) * dv.dg.cols() + d)] = dv.dg(i, d);
      }
      ds_var = std::move(dv.ds_entry);
      continue;
    }
    const Matrix dos = detail::squared(d_o);
    const Matrix r_ds = detail::rounding_var(rec.d_end, rd.ds, &ds_var);
    const Matrix ds_all = plus(r_ds, ds_var);
    // dv
    const Matrix a_var = detail::decayed_gram_rounding_var(
        in.q, in.k, in.gate, detail::Triangle::kInclusive, c[P::kGramQK]);
    Matrix dv =
        detail::matmul_tn(plus(detail::rounding_var(rec.f.a_qk, rd.abar_dv, &a_var), a_var), dos);
    for (std::int64_t i = 0; i < dv.rows(); ++i)
      for (std::int64_t x = 0; x < dv.cols(); ++x) dv(i, x) *= sc2;
    detail::axpy(
        1.0, detail::matmul(detail::rounding_var(rec.f.k_bar, rd.kbar), detail::squared(rec.d_end)),
        dv);
    detail::axpy(1.0, detail::matmul(detail::squared(rec.f.k_bar), ds_all), dv);
    // dP = scale·Γ ⊙ Tril_incl(dO Δᵀ) (a per-channel gate: scale·Tril_incl(dO Δᵀ), its decay
    // inside the Gram VJP) and its rounding
    const bool channel = in.gate.kind() == GateKind::kChannel;
    Matrix dp = detail::lower_inclusive(detail::matmul_nt(d_o, rec.delta));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j <= i; ++j)
        dp(i, j) *= p.scale * (channel ? 1.0 : in.gate.between(i, j, 0));
    const Matrix r_dp = detail::rounding_var(dp, rd.dp);
    // dq, dk: the inter-chunk terms scale·e ⊙ (dO Hᵀ) and r ⊙ (Δ dSᵀ), then the Gram VJP's
    const Matrix r_h = detail::rounding_var(rec.h, rd.h, &h_var[jj]);
    Matrix dq = detail::matmul_nt(dos, plus(r_h, h_var[jj]));
    Matrix dk = detail::matmul_nt(detail::squared(rec.delta), ds_all);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t d = 0; d < dq.cols(); ++d) {
        const double e = in.gate.from_start(i, d), r = in.gate.to_end(i, d);
        dq(i, d) *= sc2 * e * e;
        dk(i, d) *= r * r;
      }
    detail::ChannelGramVjpVariance cg;
    if (channel) {
      cg = detail::channel_gram_vjp_variance(in.q, in.k, in.gate, dp, nullptr, c[P::kGramVjp]);
      detail::axpy(1.0, cg.dq, dq);
      detail::axpy(1.0, cg.dk, dk);
    } else {
      detail::axpy(1.0, detail::matmul(r_dp, detail::squared(in.k)), dq);
      detail::axpy(1.0, detail::matmul_tn(r_dp, detail::squared(in.q)), dk);
    }
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t t = rec.range.begin + i;
      for (std::int64_t d = 0; d < s.key_dim; ++d) {
        const auto at = static_cast<std::size_t>((t * s.qk_heads + hv / group) * s.key_dim + d);
        out.dq[at] += dq(i, d);
        out.dk[at] += dk(i, d);
      }
      for (std::int64_t x = 0; x < s.value_dim; ++x)
        out.dv[static_cast<std::size_t>((t * s.v_heads + hv) * s.value_dim + x)] = dv(i, x);
    }
    if (gated) {
      Matrix g = dg_variance(rec, d_o, channel ? nullptr : &r_dp, r_h, h_var[jj], ds_all, p.scale);
      if (channel) detail::axpy(1.0, cg.dg, g);
      const std::int64_t gw = g.cols();
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t d = 0; d < gw; ++d)
          out.dg[static_cast<std::size_t>(((rec.range.begin + i) * s.v_heads + hv) * gw + d)] =
              g(i, d);
    }
    // the scan: dS of the previous chunk
    Matrix next_var = detail::matmul_tn(detail::rounding_var(rec.f.q_bar, rd.qbar), dos);
    for (std::int64_t d = 0; d < s.key_dim; ++d) {
      const double el = rec.f.e_last[static_cast<std::size_t>(d)];
      for (std::int64_t x = 0; x < s.value_dim; ++x)
        next_var(d, x) = sc2 * next_var(d, x) + el * el * ds_var(d, x);
    }
    ds_var = std::move(next_var);
  }
  detail::store_state(ds_var, s, n, hv, p.layout, out.dh0);
  return {};
}

std::vector<double> root(std::vector<double> v) {
  for (double& x : v) x = std::sqrt(x);
  return v;
}

}  // namespace

Expected<BackwardSigma> declared_backward_sigma(Member member, const Problem& p,
                                                const Cotangents& cot,
                                                const PrecisionContract& contract,
                                                ChunkOptions options) {
  if (Status st = validate(member, p); !st) return st.error();
  if (Status st = validate(p, cot); !st) return st.error();
  if (Status st = validate(options); !st) return st.error();
  const MemberTraits tr = traits(member);
  Roundings rd;
  if (Status st = check_contract(contract, rd); !st) return st.error();
  DeltaRoundings dr{};
  if (tr.delta_rule)
    if (Status st = check_delta_contract(contract, dr); !st) return st.error();
  const Shape& s = p.shape;
  Variances v{std::vector<double>(p.q.size(), 0.0),
              std::vector<double>(p.k.size(), 0.0),
              std::vector<double>(p.v.size(), 0.0),
              std::vector<double>(p.g.size(), 0.0),
              std::vector<double>(p.beta.size(), 0.0),
              std::vector<double>(static_cast<std::size_t>(s.state_size()), 0.0)};
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv)
      if (Status st = head_variance(member, p, cot, n, hv, contract, rd, dr, options, v); !st)
        return st.error();
  return BackwardSigma{root(std::move(v.dq)), root(std::move(v.dk)),    root(std::move(v.dv)),
                       root(std::move(v.dg)), root(std::move(v.dbeta)), root(std::move(v.dh0))};
}

Expected<BackwardBounds> backward_bounds(Member member, const Problem& p, const Cotangents& cot,
                                         const Gradients& ref, const PrecisionContract& contract,
                                         ChunkOptions options) {
  Expected<BackwardSigma> sigma = declared_backward_sigma(member, p, cot, contract, options);
  if (!sigma) return sigma.error();
  const ModelScale m = model_scale(p, options);
  const std::int64_t gw = gate_width(traits(member).gate, p.shape.key_dim);
  BackwardBounds out;
  const auto bound = [&](Output o, const std::vector<double>& y, const std::vector<double>& sg,
                         std::span<const double> terms, std::vector<double>& dst) -> Status {
    Expected<std::vector<double>> t = tau(o, y, p.shape, gw, m, output_unit_roundoff(o), terms, sg);
    if (!t) return t.error();
    dst = std::move(*t);
    return {};
  };
  if (Status st = bound(Output::kDq, ref.dq, sigma->dq, {}, out.dq); !st) return st.error();
  if (Status st = bound(Output::kDk, ref.dk, sigma->dk, {}, out.dk); !st) return st.error();
  if (Status st = bound(Output::kDv, ref.dv, sigma->dv, {}, out.dv); !st) return st.error();
  if (Status st = bound(Output::kDh0, ref.dh0, sigma->dh0, {}, out.dh0); !st) return st.error();
  if (traits(member).delta_rule)
    if (Status st = bound(Output::kDbeta, ref.dbeta, sigma->dbeta, {}, out.dbeta); !st)
      return st.error();
  if (traits(member).gate != GateKind::kNone) {
    Expected<DgTerms> terms = dg_terms(member, p, cot, options);
    if (!terms) return terms.error();
    if (Status st = bound(Output::kDg, ref.dg, sigma->dg, terms->scale, out.dg); !st)
      return st.error();
  }
  return out;
}

}  // namespace kcv::glr
