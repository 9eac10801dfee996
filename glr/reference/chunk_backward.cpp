// File: glr/reference/chunk_backward.cpp
// The per-chunk backward stages of chunk_backward.hpp. B3 is split into its inter-chunk part
// (terms through H and dH_end) and its intra-chunk part (through A^qk); B4 is wy_grads.
#include "glr/reference/chunk_backward.hpp"

#include "glr/reference/decayed_gram.hpp"
#include "glr/reference/tril_inverse.hpp"

namespace kcv::glr::detail {
namespace {

// B3, the inter-chunk part: terms through H (output) and dH_end (state update), gate included.
void inter_chunk_grads(const ChunkInputs& in, const ChunkFactors& f, const ChunkState& st,
                       const Matrix& d_o, double scale, ChunkGrads& g) {
  const ChunkGate& gate = in.gate;
  const std::int64_t c = in.k.rows();
  const std::int64_t kd = in.k.cols();
  const std::int64_t last = c - 1;
  const Matrix dq_bar = matmul_nt(d_o, st.h);           // ∂L/∂Q̄ = scale · dO Hᵀ
  const Matrix dk_bar = matmul_nt(st.delta, st.d_end);  // ∂L/∂K̄ = Δ dH_endᵀ
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t d = 0; d < kd; ++d) {
      const double dq_bar_id = scale * dq_bar(i, d);
      g.dq(i, d) += dq_bar_id * gate.from_start(i, d);
      g.dk(i, d) += dk_bar(i, d) * gate.to_end(i, d);
      add_gate_grad(g.d_gate, gate, i, d, f.q_bar(i, d) * dq_bar_id);
      if (i == last) continue;  // R_last = 1: the row and last-row terms cancel exactly
      const double k_term = f.k_bar(i, d) * dk_bar(i, d);
      add_gate_grad(g.d_gate, gate, i, d, -k_term);
      add_gate_grad(g.d_gate, gate, last, d, k_term);
    }
  }
  for (std::int64_t d = 0; d < kd; ++d) {
    double hd = 0.0;
    for (std::int64_t e = 0; e < st.h.cols(); ++e) hd += st.h(d, e) * st.d_end(d, e);
    add_gate_grad(g.d_gate, gate, last, d, f.e_last[d] * hd);
  }
}

// B3, the intra-chunk part: dA^qk = scale · Tril_incl(dO Δᵀ) through the decayed Gram VJP.
void intra_qk_grads(const ChunkInputs& in, const ChunkFactors& f, const ChunkState& st,
                    const Matrix& d_o, double scale, ChunkGrads& g) {
  Matrix d_aqk = lower_inclusive(matmul_nt(d_o, st.delta));
  for (std::int64_t i = 0; i < d_aqk.rows(); ++i)
    for (std::int64_t j = 0; j <= i; ++j) d_aqk(i, j) *= scale;
  const GramGrads gg = decayed_gram_vjp(d_aqk, in.q, in.k, f.a_qk, in.gate, Triangle::kInclusive);
  axpy(1.0, gg.da, g.dq);
  axpy(1.0, gg.db, g.dk);
  axpy(1.0, gg.d_gate, g.d_gate);
}

// B4: the WY representation and the triangular-inverse VJP (delta rule only).
void wy_grads(const ChunkInputs& in, const ChunkFactors& f, const ChunkState& st, ChunkGrads& g) {
  const ChunkGate& gate = in.gate;
  const std::int64_t c = in.k.rows();
  const std::int64_t kd = in.k.cols();
  Matrix dt = matmul_nt(g.dw, f.x);
  axpy(1.0, matmul_nt(st.d_delta, f.v_tilde), dt);
  dt = strict_lower(std::move(dt));
  const Matrix dx = matmul_tn(f.t, g.dw);
  const Matrix dv_tilde = matmul_tn(f.t, st.d_delta);
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t d = 0; d < kd; ++d) {
      const double e = gate.from_start(i, d);
      g.dk(i, d) += in.beta[i] * e * dx(i, d);
      g.dbeta[i] += in.k(i, d) * e * dx(i, d);
      add_gate_grad(g.d_gate, gate, i, d, f.x(i, d) * dx(i, d));
    }
    for (std::int64_t e = 0; e < in.v.cols(); ++e) {
      g.dv(i, e) = in.beta[i] * dv_tilde(i, e);
      g.dbeta[i] += in.v(i, e) * dv_tilde(i, e);
    }
  }
  const Matrix dl = unit_lower_inverse_vjp(f.t, dt);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < i; ++j) g.dbeta[i] += dl(i, j) * f.gram_kk(i, j);
  const GramGrads gg =
      decayed_gram_vjp(scale_rows(dl, in.beta), in.k, in.k, f.gram_kk, gate, Triangle::kStrict);
  axpy(1.0, gg.da, g.dk);
  axpy(1.0, gg.db, g.dk);
  axpy(1.0, gg.d_gate, g.d_gate);
}

}  // namespace

Matrix local_delta_grad(const ChunkFactors& f, const Matrix& d_o, double scale) {
  Matrix d = matmul_tn(f.a_qk, d_o);
  for (std::int64_t i = 0; i < d.rows(); ++i)
    for (std::int64_t e = 0; e < d.cols(); ++e) d(i, e) *= scale;
  return d;
}

ScanStep dh_scan_step(const ChunkFactors& f, const Matrix& d_delta_local, const Matrix& d_end,
                      const Matrix& d_o, double scale, bool delta_rule) {
  ScanStep s{d_delta_local, scale_rows(d_end, f.e_last)};
  axpy(1.0, matmul(f.k_bar, d_end), s.d_delta);
  axpy(scale, matmul_tn(f.q_bar, d_o), s.d_entry);
  if (delta_rule) axpy(-1.0, matmul_tn(f.w, s.d_delta), s.d_entry);
  return s;
}

ChunkGrads chunk_gradients(const ChunkInputs& in, const ChunkFactors& f, const ChunkState& st,
                           const Matrix& d_o, double scale, bool delta_rule) {
  const std::int64_t c = in.k.rows();
  ChunkGrads g{Matrix(c, in.q.cols()),     Matrix(c, in.k.cols()),
               Matrix(c, in.v.cols()),     Matrix(),
               Matrix(c, in.gate.width()), {}};
  inter_chunk_grads(in, f, st, d_o, scale, g);
  intra_qk_grads(in, f, st, d_o, scale, g);
  if (!delta_rule) {
    g.dv = st.d_delta;  // Δ = V
    return g;
  }
  g.dw = matmul_nt(st.d_delta, st.h);  // dW = −dΔ Hᵀ
  for (std::int64_t i = 0; i < g.dw.rows(); ++i)
    for (std::int64_t d = 0; d < g.dw.cols(); ++d) g.dw(i, d) = -g.dw(i, d);
  g.dbeta.assign(static_cast<std::size_t>(c), 0.0);
  wy_grads(in, f, st, g);
  return g;
}

}  // namespace kcv::glr::detail
