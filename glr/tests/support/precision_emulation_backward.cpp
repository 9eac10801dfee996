// File: glr/tests/support/precision_emulation_backward.cpp
// emulate_backward (precision_emulation.hpp): the chunked backward of every member in fp32, each
// product with its operands rounded as the contract declares
// (docs/glr/precision-contract.md §6; Δ = V, T = I, W = 0 without the delta rule):
//   dΔ = scale·A^qkᵀ dO + K̄ dS                            local_delta_grad, scan_state
//   dS_entry = e_last ⊙ dS + scale·Q̄ᵀ dO − Wᵀ dΔ          scan_query, scan_w
//   dq = scale·e ⊙ (dO Hᵀ) + [Gram VJP]                   grad_query, gram_vjp
//   dk = r ⊙ (Δ dSᵀ) + [Gram VJP] (+ the WY terms)        grad_key, gram_vjp
//   dP = scale·Tril_incl(dO Δᵀ) (⊙ Γ for a scalar gate)   grad_a, rounded once
//   delta rule: dW = −dΔ Hᵀ, dṼ = Tᵀ dΔ, dX = Tᵀ dW,      grad_w, wy_grad_x
//     dT = StrictLower(dW Xᵀ + dΔ Ṽᵀ),                    wy_grad_t
//     dL = −StrictLower((Tᵀ dT) Tᵀ),                      solve_vjp (two products)
//     M = β ⊙ dL ⊙ Γ rounded once, dk += M K + Mᵀ K;      gram_vjp (kda: Γ in the Gram)
//     dv = β ⊙ dṼ, dk += β e ⊙ dX, dβ from the unrounded fp32 values
//   dg without the delta rule and for kda in the reference's form, which the tensor-core backward
//     sums (docs/glr/tensor-core-backward.md), per channel for gla and kda:
//     Σ_{s=t..last} q_s·dq'_s − Σ_{s=t..last−1} k_s·dk'_s
//       + e_last·⟨H, dS⟩ + Σ_{s<last} k_s·(r ⊙ V dSᵀ)_s
//   (dq', dk' without dP's diagonal pairs; kda adds X ⊙ dX and K ⊙ (da − db) of L's Gram VJP per
//   row, chunk_backward.hpp); gdn's in the gauge form
//     Σ_{s≥t} (q_s·dq_s − v_s·dv_s) + ⟨S, dS⟩ (S the state leaving the chunk).
// A per-channel gate's Gram VJP reads the anchored operands off the diagonal sub-blocks and the
// per-pair ones on them (decayed_gram.hpp). dq and dk of a q/k head sum their value heads' fp32
// parts in head order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "glr/oracle/indexing.hpp"
#include "support/emulation_stages.hpp"
#include "support/precision_emulation.hpp"

namespace kcv::glr::testing {
namespace {

using P = Product;
using emulation::Chunk;
using emulation::Factors;
using emulation::FMatrix;
using emulation::product;
using emulation::rounded;

FMatrix transposed(const FMatrix& m) {
  FMatrix t(m.cols, m.rows);
  for (std::int64_t i = 0; i < m.rows; ++i)
    for (std::int64_t j = 0; j < m.cols; ++j) t(j, i) = m(i, j);
  return t;
}

std::int64_t anchor(std::int64_t i) { return i / kSubChunk * kSubChunk; }

// The Gram VJP of A^qk = P(Q, K) with dP already rounded: dq' and dk' (without the diagonal
// pairs) added into dq_off, dk_off, the diagonal pairs into dq_diag, dk_diag.
struct GramVjp {
  FMatrix dq_off{0, 0}, dk_off{0, 0}, dq_diag{0, 0}, dk_diag{0, 0};
};

GramVjp gram_vjp(const Chunk& ch, const FMatrix& dp, Rounding rb) {
  const std::int64_t c = ch.k.rows, kd = ch.k.cols;
  GramVjp g{FMatrix(c, kd), FMatrix(c, kd), FMatrix(c, kd), FMatrix(c, kd)};
  if (ch.gate != GateKind::kChannel) {  // Γ is on dP already
    const FMatrix qr = rounded(ch.q, rb), kr = rounded(ch.k, rb);
    for (std::int64_t i = 0; i < c; ++i)
      for (std::int64_t d = 0; d < kd; ++d) {
        float acc_q = 0.0f, acc_k = 0.0f;
        for (std::int64_t j = 0; j < i; ++j) acc_q += dp(i, j) * kr(j, d);
        for (std::int64_t j = i + 1; j < c; ++j) acc_k += dp(j, i) * qr(j, d);
        g.dq_off(i, d) = acc_q;
        g.dk_off(i, d) = acc_k;
        g.dq_diag(i, d) = dp(i, i) * kr(i, d);
        g.dk_diag(i, d) = dp(i, i) * qr(i, d);
      }
    return g;
  }
  for (std::int64_t d = 0; d < kd; ++d) {
    // dq: row i, anchor n = anchor(i): e^{G_i − G_n}·Σ_{j<n} dP_ij·bf(k_j e^{G_n − G_j}), then the
    // diagonal sub-block's per-pair products.
    for (std::int64_t i = 0; i < c; ++i) {
      const std::int64_t n = anchor(i);
      float off = 0.0f;
      for (std::int64_t j = 0; j < n; ++j)
        off += dp(i, j) * round_to(rb, ch.k(j, d) * ch.decay(ch.log_cum(n, d) - ch.log_cum(j, d)));
      float acc = off * ch.decay(ch.log_cum(i, d) - ch.log_cum(n, d));
      for (std::int64_t j = n; j < i; ++j)
        acc += dp(i, j) * round_to(rb, ch.k(j, d) * ch.decay(ch.log_cum(i, d) - ch.log_cum(j, d)));
      g.dq_off(i, d) = acc;
      g.dq_diag(i, d) = dp(i, i) * round_to(rb, ch.k(i, d));
    }
    // dk: column j, each later sub-chunk R (anchor n > j): e^{G_n − G_j}·Σ_{i∈R} dP_ij·
    // bf(q_i e^{G_i − G_n}); then j's own sub-chunk per pair.
    for (std::int64_t j = 0; j < c; ++j) {
      float acc = 0.0f;
      for (std::int64_t i = j + 1; i < std::min(anchor(j) + kSubChunk, c); ++i)
        acc += dp(i, j) * round_to(rb, ch.q(i, d) * ch.decay(ch.log_cum(i, d) - ch.log_cum(j, d)));
      for (std::int64_t n = anchor(j) + kSubChunk; n < c; n += kSubChunk) {
        float block = 0.0f;
        for (std::int64_t i = n; i < std::min(n + kSubChunk, c); ++i)
          block +=
              dp(i, j) * round_to(rb, ch.q(i, d) * ch.decay(ch.log_cum(i, d) - ch.log_cum(n, d)));
        acc += block * ch.decay(ch.log_cum(n, d) - ch.log_cum(j, d));
      }
      g.dk_off(j, d) = acc;
      g.dk_diag(j, d) = dp(j, j) * round_to(rb, ch.q(j, d));
    }
  }
  return g;
}

FMatrix strict_lower(FMatrix m) {
  for (std::int64_t i = 0; i < m.rows; ++i)
    for (std::int64_t j = i; j < m.cols; ++j) m(i, j) = 0.0f;
  return m;
}

FMatrix minus(FMatrix m) {
  for (float& x : m.a) x = -x;
  return m;
}

// What one chunk of one value head contributes.
struct ChunkGrads {
  FMatrix dq, dk, dv, dg;
  std::vector<float> dbeta;
  FMatrix d_entry;  // dS entering the chunk
};

// B4 of the delta rule: dW, dṼ, dX, dT, the solve's VJP and the Gram VJP of L, into dk, dv, dβ;
// for a per-channel gate (kda) also their terms of dG into gate_rows (c × K).
void wy_backward(const Chunk& ch, const Factors& f, const FMatrix& h, const FMatrix& d_delta,
                 const PrecisionContract& pc, ChunkGrads& g, FMatrix& gate_rows) {
  const std::int64_t c = ch.k.rows, kd = ch.k.cols, vd = ch.v.cols;
  const FMatrix dw = minus(product(d_delta, pc[P::kGradW].a, transposed(h), pc[P::kGradW].b));
  const FMatrix dv_tilde = product(f.t, pc[P::kWyGradX].a, d_delta, pc[P::kWyGradX].b, true);
  const FMatrix dx = product(f.t, pc[P::kWyGradX].a, dw, pc[P::kWyGradX].b, true);
  FMatrix dt = product(dw, pc[P::kWyGradT].a, transposed(f.x), pc[P::kWyGradT].b);
  const FMatrix dt_v =
      product(d_delta, pc[P::kWyGradT].a, transposed(f.v_tilde), pc[P::kWyGradT].b);
  for (std::size_t x = 0; x < dt.a.size(); ++x) dt.a[x] += dt_v.a[x];
  dt = strict_lower(std::move(dt));
  // dL = −StrictLower(Tᵀ dT Tᵀ), two products
  const FMatrix y = product(f.t, pc[P::kSolveVjp].a, dt, pc[P::kSolveVjp].b, true);
  const FMatrix dl =
      strict_lower(minus(product(y, pc[P::kSolveVjp].b, transposed(f.t), pc[P::kSolveVjp].a)));
  // M = β ⊙ dL ⊙ Γ (kda: β ⊙ dL, its decay inside the Gram), rounded once: dk += M K + Mᵀ K
  FMatrix m(c, c);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < i; ++j)
      m(i, j) =
          ch.beta[i] * dl(i, j) *
          (ch.gate == GateKind::kScalar ? ch.decay(ch.log_cum(i, 0) - ch.log_cum(j, 0)) : 1.0f);
  const FMatrix mr = rounded(m, pc[P::kGramVjp].a), kr = rounded(ch.k, pc[P::kGramVjp].b);
  const bool channel = ch.gate == GateKind::kChannel;
  Chunk kk = ch;  // P(K, K): the Gram VJP with K on both sides
  kk.q = ch.k;
  const GramVjp gl = channel ? gram_vjp(kk, mr, pc[P::kGramVjp].b) : GramVjp{};
  g.dbeta.assign(static_cast<std::size_t>(c), 0.0f);
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t d = 0; d < kd; ++d) {
      float acc = 0.0f;
      if (channel) {
        acc = gl.dq_off(i, d) + gl.dk_off(i, d);
      } else {
        for (std::int64_t j = 0; j < i; ++j) acc += mr(i, j) * kr(j, d);
        for (std::int64_t j = i + 1; j < c; ++j) acc += mr(j, i) * kr(j, d);
      }
      const float e = ch.decay(ch.log_cum(i, d));
      g.dk(i, d) += ch.beta[i] * e * dx(i, d) + acc;
      g.dbeta[i] += ch.k(i, d) * e * dx(i, d);
      if (channel)  // X ⊙ dX and the Gram's a ⊙ da − b ⊙ db
        gate_rows(i, d) += f.x(i, d) * dx(i, d) + ch.k(i, d) * (gl.dq_off(i, d) - gl.dk_off(i, d));
    }
    for (std::int64_t e = 0; e < vd; ++e) {
      g.dv(i, e) = ch.beta[i] * dv_tilde(i, e);
      g.dbeta[i] += ch.v(i, e) * dv_tilde(i, e);
    }
    for (std::int64_t j = 0; j < i; ++j) g.dbeta[i] += dl(i, j) * f.gram_kk(i, j);
  }
}

// One chunk of the reverse pass, from dS leaving it; s_end is the state leaving it (gdn's dg).
ChunkGrads chunk_backward(const Chunk& ch, const Factors& f, const FMatrix& h, const FMatrix& s_end,
                          const FMatrix& ds, const FMatrix& d_o, const PrecisionContract& pc,
                          float scale, bool delta_rule) {
  const std::int64_t c = ch.k.rows, kd = ch.k.cols, vd = ch.v.cols, last = c - 1;
  const std::int64_t gw = ch.gate == GateKind::kNone ? 0 : (ch.gate == GateKind::kScalar ? 1 : kd);
  ChunkGrads g{FMatrix(c, kd), FMatrix(c, kd), FMatrix(c, vd), FMatrix(c, gw), {}, FMatrix(0, 0)};
  FMatrix delta = f.u;  // Δ = V without the delta rule
  if (delta_rule) {
    const FMatrix wh = product(f.w, pc[P::kStateW].a, h, pc[P::kStateW].b);
    for (std::size_t x = 0; x < delta.a.size(); ++x) delta.a[x] -= wh.a[x];
  }
  // dΔ = scale·A^qkᵀ dO + K̄ dS
  const FMatrix local =
      product(f.a_qk, pc[P::kLocalDeltaGrad].a, d_o, pc[P::kLocalDeltaGrad].b, true);
  const FMatrix through_s = product(f.k_bar, pc[P::kScanState].a, ds, pc[P::kScanState].b);
  FMatrix d_delta(c, vd);
  for (std::size_t x = 0; x < d_delta.a.size(); ++x)
    d_delta.a[x] = scale * local.a[x] + through_s.a[x];
  // dS_entry = e_last ⊙ dS + scale·Q̄ᵀ dO (− Wᵀ dΔ)
  g.d_entry = product(f.q_bar, pc[P::kScanQuery].a, d_o, pc[P::kScanQuery].b, true);
  const FMatrix wdd =
      delta_rule ? product(f.w, pc[P::kScanW].a, d_delta, pc[P::kScanW].b, true) : FMatrix(kd, vd);
  for (std::int64_t d = 0; d < kd; ++d)
    for (std::int64_t e = 0; e < vd; ++e)
      g.d_entry(d, e) = f.e_last[d] * ds(d, e) + scale * g.d_entry(d, e) - wdd(d, e);
  // the inter-chunk terms
  const FMatrix doh = product(d_o, pc[P::kGradQuery].a, transposed(h), pc[P::kGradQuery].b);
  const FMatrix dds = product(delta, pc[P::kGradKey].a, transposed(ds), pc[P::kGradKey].b);
  FMatrix dq_inter(c, kd), dk_inter(c, kd);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      dq_inter(i, d) = scale * ch.decay(ch.log_cum(i, d)) * doh(i, d);
      dk_inter(i, d) = ch.decay(ch.log_cum(last, d) - ch.log_cum(i, d)) * dds(i, d);
    }
  // dP, rounded once, and the Gram VJP
  FMatrix dp = product(d_o, pc[P::kGradA].a, transposed(delta), pc[P::kGradA].b);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < c; ++j) {
      const bool scalar = ch.gate == GateKind::kScalar;
      dp(i, j) = j > i ? 0.0f
                       : scale * dp(i, j) *
                             (scalar ? ch.decay(ch.log_cum(i, 0) - ch.log_cum(j, 0)) : 1.0f);
    }
  const GramVjp gv = gram_vjp(ch, rounded(dp, pc[P::kGramVjp].a), pc[P::kGramVjp].b);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      g.dq(i, d) = dq_inter(i, d) + gv.dq_off(i, d) + gv.dq_diag(i, d);
      g.dk(i, d) = dk_inter(i, d) + gv.dk_off(i, d) + gv.dk_diag(i, d);
    }
  FMatrix rows(c, gw);
  if (delta_rule) {
    wy_backward(ch, f, h, d_delta, pc, g, rows);
  } else {
    g.dv = d_delta;
  }
  if (gw == 0) return g;
  if (delta_rule &&
      ch.gate == GateKind::kScalar) {  // the gauge form: Σ_{s≥t} (q_s·dq_s − v_s·dv_s) + ⟨S, dS⟩
    for (std::int64_t i = 0; i < c; ++i) {
      float term = 0.0f;
      for (std::int64_t d = 0; d < kd; ++d) term += ch.q(i, d) * g.dq(i, d);
      for (std::int64_t e = 0; e < vd; ++e) term -= ch.v(i, e) * g.dv(i, e);
      rows(i, 0) = term;
    }
    const FMatrix sr = rounded(s_end, pc[P::kGradQuery].b), dsr = rounded(ds, pc[P::kScanState].b);
    for (std::size_t x = 0; x < sr.a.size(); ++x) rows(last, 0) += sr.a[x] * dsr.a[x];
  } else {  // the reference's form (file comment)
    for (std::int64_t i = 0; i < c; ++i)
      for (std::int64_t d = 0; d < kd; ++d) {
        float term = ch.q(i, d) * (dq_inter(i, d) + gv.dq_off(i, d));
        if (i != last) term -= ch.k(i, d) * (dk_inter(i, d) + gv.dk_off(i, d));
        rows(i, gw == 1 ? 0 : d) += term;
      }
    const FMatrix hr = rounded(h, pc[P::kGradQuery].b), dsr = rounded(ds, pc[P::kGradKey].b);
    for (std::int64_t d = 0; d < kd; ++d) {
      float hd = 0.0f, key = 0.0f;
      for (std::int64_t e = 0; e < vd; ++e) hd += hr(d, e) * dsr(d, e);
      for (std::int64_t s = 0; s < last; ++s) key += ch.k(s, d) * dk_inter(s, d);
      rows(last, gw == 1 ? 0 : d) += f.e_last[d] * hd + key;
    }
  }
  for (std::int64_t col = 0; col < gw; ++col) {
    float suffix = 0.0f;
    for (std::int64_t t = last; t >= 0; --t) g.dg(t, col) = suffix += rows(t, col);
  }
  return g;
}

}  // namespace

Gradients emulate_backward(Member member, const Problem& p, const Cotangents& cot,
                           const PrecisionContract& pc, BackwardExtra extra, ChunkOptions options) {
  const Shape& s = p.shape;
  const detail::TensorIndex ix(s);
  const bool delta_rule = traits(member).delta_rule;
  const std::int64_t gw = gate_width(traits(member).gate, s.key_dim);
  const auto scale = static_cast<float>(p.scale);
  Gradients out;
  out.dv.assign(p.v.size(), 0.0);
  out.dg.assign(p.g.size(), 0.0);
  out.dbeta.assign(p.beta.size(), 0.0);
  out.dh0.assign(static_cast<std::size_t>(s.state_size()), 0.0);
  std::vector<float> dq_sum(p.q.size()), dk_sum(p.k.size());  // a GVA group's heads, in order
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      // the forward recompute: the state entering every chunk, and the last one leaving
      std::vector<std::int64_t> begins;
      std::vector<FMatrix> states;
      FMatrix h = emulation::load_state(p.h0, p, n, hv);
      for (std::int64_t b = s.seq_begin(n); b < s.seq_end(n); b += options.chunk_size) {
        const std::int64_t end = std::min(b + options.chunk_size, s.seq_end(n));
        const Factors f =
            emulation::prepare(emulation::gather(member, p, hv, b, end), delta_rule, pc);
        FMatrix o(end - b, s.value_dim);
        begins.push_back(b);
        states.push_back(h);
        h = emulation::step(f, h, delta_rule, pc, scale, o);
      }
      states.push_back(h);
      // the reverse pass from dht
      FMatrix ds = emulation::load_state(cot.d_final_state, p, n, hv);
      for (std::size_t j = begins.size(); j-- > 0;) {
        const std::int64_t b = begins[j], end = std::min(b + options.chunk_size, s.seq_end(n));
        const std::int64_t c = end - b;
        const Chunk ch = emulation::gather(member, p, hv, b, end);
        const Factors f = emulation::prepare(ch, delta_rule, pc);
        FMatrix d_o(c, s.value_dim);
        for (std::int64_t i = 0; i < c; ++i)
          for (std::int64_t e = 0; e < s.value_dim; ++e)
            d_o(i, e) = static_cast<float>(cot.d_o[ix.v(b + i, hv, e)]);
        ChunkGrads g =
            chunk_backward(ch, f, states[j], states[j + 1], ds, d_o, pc, scale, delta_rule);
        ds = std::move(g.d_entry);
        if (extra.ds_carry_bf16 && j > 0) ds = rounded(std::move(ds), Rounding::kBf16);
        for (std::int64_t i = 0; i < c; ++i) {
          for (std::int64_t d = 0; d < s.key_dim; ++d) {
            const auto at = static_cast<std::size_t>(ix.qk(b + i, ix.qk_head(hv), d));
            dq_sum[at] += g.dq(i, d);
            dk_sum[at] += g.dk(i, d);
          }
          for (std::int64_t e = 0; e < s.value_dim; ++e)
            out.dv[ix.v(b + i, hv, e)] = round_to(Rounding::kBf16, g.dv(i, e));
          for (std::int64_t d = 0; d < gw; ++d) out.dg[ix.per_head(b + i, hv, gw, d)] = g.dg(i, d);
          if (delta_rule) out.dbeta[ix.beta(b + i, hv)] = round_to(Rounding::kBf16, g.dbeta[i]);
        }
      }
      for (std::int64_t d = 0; d < s.key_dim; ++d)
        for (std::int64_t e = 0; e < s.value_dim; ++e)
          out.dh0[ix.state(n, hv, d, e, p.layout)] = ds(d, e);
    }
  for (float x : dq_sum) out.dq.push_back(round_to(Rounding::kBf16, x));
  for (float x : dk_sum) out.dk.push_back(round_to(Rounding::kBf16, x));
  return out;
}

}  // namespace kcv::glr::testing
