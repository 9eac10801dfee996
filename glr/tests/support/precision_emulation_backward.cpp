// File: glr/tests/support/precision_emulation_backward.cpp
// emulate_backward (precision_emulation.hpp): the chunked backward of the members without the
// delta rule (la, ssd, gla) in fp32, each product with its operands rounded as the contract
// declares, in the form the tensor-core backward sums (docs/glr/tensor-core-backward.md):
//   dS_entry = e_last ⊙ dS + scale·Q̄ᵀ dO                  scan_query
//   dv = scale·A^qkᵀ dO + K̄ dS                            local_delta_grad, scan_state
//   dq = scale·e ⊙ (dO Hᵀ) + [Gram VJP]                   grad_query, gram_vjp
//   dk = r ⊙ (V dSᵀ) + [Gram VJP]                         grad_key, gram_vjp
//   dP = scale·Tril_incl(dO Vᵀ) (⊙ Γ for a scalar gate)   grad_a, rounded once
//   dg_t = Σ_{s=t..last} q_s·dq'_s − Σ_{s=t..last−1} k_s·dk'_s
//          + e_last·⟨H, dS⟩ + Σ_{s<last} k_s·(r ⊙ V dSᵀ)_s  (per channel for gla)
// dq', dk' without dP's diagonal pairs. A per-channel gate's Gram VJP reads the anchored operands
// off the diagonal sub-blocks and the per-pair ones on them (decayed_gram.hpp). The forward
// states H are recomputed under the contract's forward roundings. dq and dk of a q/k head sum
// their value heads' fp32 parts in head order.
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
  FMatrix dq_off, dk_off, dq_diag, dk_diag;
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

struct Sums {  // fp32 accumulators of one problem
  std::vector<float> dq, dk;
};

// One chunk of the reverse pass: writes dv, dg and adds this value head's dq, dk; returns dS
// entering the chunk.
FMatrix chunk_backward(const Chunk& ch, const Factors& f, const FMatrix& h, const FMatrix& ds,
                       const FMatrix& d_o, const PrecisionContract& pc, float scale, FMatrix& dq,
                       FMatrix& dk, FMatrix& dv, FMatrix& dg) {
  const std::int64_t c = ch.k.rows, kd = ch.k.cols, vd = ch.v.cols, last = c - 1;
  // dv = scale·A^qkᵀ dO + K̄ dS
  const FMatrix local =
      product(f.a_qk, pc[P::kLocalDeltaGrad].a, d_o, pc[P::kLocalDeltaGrad].b, true);
  const FMatrix through_s = product(f.k_bar, pc[P::kScanState].a, ds, pc[P::kScanState].b);
  for (std::size_t x = 0; x < dv.a.size(); ++x) dv.a[x] = scale * local.a[x] + through_s.a[x];
  // dS_entry = e_last ⊙ dS + scale·Q̄ᵀ dO
  FMatrix entry = product(f.q_bar, pc[P::kScanQuery].a, d_o, pc[P::kScanQuery].b, true);
  for (std::int64_t d = 0; d < kd; ++d)
    for (std::int64_t e = 0; e < vd; ++e)
      entry(d, e) = f.e_last[d] * ds(d, e) + scale * entry(d, e);
  // the inter-chunk terms
  const FMatrix doh = product(d_o, pc[P::kGradQuery].a, transposed(h), pc[P::kGradQuery].b);
  const FMatrix vds = product(ch.v, pc[P::kGradKey].a, transposed(ds), pc[P::kGradKey].b);
  FMatrix dq_inter(c, kd), dk_inter(c, kd);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      dq_inter(i, d) = scale * ch.decay(ch.log_cum(i, d)) * doh(i, d);
      dk_inter(i, d) = ch.decay(ch.log_cum(last, d) - ch.log_cum(i, d)) * vds(i, d);
    }
  // dP, rounded once, and the Gram VJP
  FMatrix dp = product(d_o, pc[P::kGradA].a, transposed(ch.v), pc[P::kGradA].b);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < c; ++j) {
      const bool scalar = ch.gate == GateKind::kScalar;
      dp(i, j) = j > i ? 0.0f
                       : scale * dp(i, j) *
                             (scalar ? ch.decay(ch.log_cum(i, 0) - ch.log_cum(j, 0)) : 1.0f);
    }
  const GramVjp g = gram_vjp(ch, rounded(dp, pc[P::kGramVjp].a), pc[P::kGramVjp].b);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      dq(i, d) = dq_inter(i, d) + g.dq_off(i, d) + g.dq_diag(i, d);
      dk(i, d) = dk_inter(i, d) + g.dk_off(i, d) + g.dk_diag(i, d);
    }
  if (ch.gate == GateKind::kNone) return entry;
  // dg: the row terms, the boundary on the last row, then the suffix sums
  FMatrix rows(c, dg.cols);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      float term = ch.q(i, d) * (dq_inter(i, d) + g.dq_off(i, d));
      if (i != last) term -= ch.k(i, d) * (dk_inter(i, d) + g.dk_off(i, d));
      rows(i, dg.cols == 1 ? 0 : d) += term;
    }
  const FMatrix hr = rounded(h, pc[P::kGradQuery].b), dsr = rounded(ds, pc[P::kGradKey].b);
  for (std::int64_t d = 0; d < kd; ++d) {
    float hd = 0.0f, key = 0.0f;
    for (std::int64_t e = 0; e < vd; ++e) hd += hr(d, e) * dsr(d, e);
    for (std::int64_t s = 0; s < last; ++s) key += ch.k(s, d) * dk_inter(s, d);
    rows(last, dg.cols == 1 ? 0 : d) += f.e_last[d] * hd + key;
  }
  for (std::int64_t col = 0; col < dg.cols; ++col) {
    float suffix = 0.0f;
    for (std::int64_t t = last; t >= 0; --t) dg(t, col) = suffix += rows(t, col);
  }
  return entry;
}

}  // namespace

Gradients emulate_backward(Member member, const Problem& p, const Cotangents& cot,
                           const PrecisionContract& pc, BackwardExtra extra, ChunkOptions options) {
  const Shape& s = p.shape;
  const detail::TensorIndex ix(s);
  const std::int64_t gw = gate_width(traits(member).gate, s.key_dim);
  const auto scale = static_cast<float>(p.scale);
  Gradients out;
  out.dv.assign(p.v.size(), 0.0);
  out.dg.assign(p.g.size(), 0.0);
  out.dh0.assign(static_cast<std::size_t>(s.state_size()), 0.0);
  Sums sums{std::vector<float>(p.q.size()), std::vector<float>(p.k.size())};
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      // the forward recompute: the state entering every chunk
      std::vector<std::int64_t> begins;
      std::vector<FMatrix> states;
      FMatrix h(s.key_dim, s.value_dim);
      for (std::int64_t d = 0; d < s.key_dim && !p.h0.empty(); ++d)
        for (std::int64_t e = 0; e < s.value_dim; ++e)
          h(d, e) = static_cast<float>(p.h0[ix.state(n, hv, d, e, p.layout)]);
      for (std::int64_t b = s.seq_begin(n); b < s.seq_end(n); b += options.chunk_size) {
        const std::int64_t end = std::min(b + options.chunk_size, s.seq_end(n));
        const Factors f = emulation::prepare(emulation::gather(member, p, hv, b, end), false, pc);
        FMatrix o(end - b, s.value_dim);
        begins.push_back(b);
        states.push_back(h);
        h = emulation::step(f, h, false, pc, scale, o);
      }
      // the reverse pass from dht
      FMatrix ds(s.key_dim, s.value_dim);
      for (std::int64_t d = 0; d < s.key_dim && !cot.d_final_state.empty(); ++d)
        for (std::int64_t e = 0; e < s.value_dim; ++e)
          ds(d, e) = static_cast<float>(cot.d_final_state[ix.state(n, hv, d, e, p.layout)]);
      for (std::size_t j = begins.size(); j-- > 0;) {
        const std::int64_t b = begins[j], end = std::min(b + options.chunk_size, s.seq_end(n));
        const std::int64_t c = end - b;
        const Chunk ch = emulation::gather(member, p, hv, b, end);
        const Factors f = emulation::prepare(ch, false, pc);
        FMatrix d_o(c, s.value_dim), dq(c, s.key_dim), dk(c, s.key_dim), dv(c, s.value_dim),
            dg(c, gw);
        for (std::int64_t i = 0; i < c; ++i)
          for (std::int64_t e = 0; e < s.value_dim; ++e)
            d_o(i, e) = static_cast<float>(cot.d_o[ix.v(b + i, hv, e)]);
        ds = chunk_backward(ch, f, states[j], ds, d_o, pc, scale, dq, dk, dv, dg);
        if (extra.ds_carry_bf16 && j > 0) ds = rounded(std::move(ds), Rounding::kBf16);
        for (std::int64_t i = 0; i < c; ++i) {
          for (std::int64_t d = 0; d < s.key_dim; ++d) {
            const auto at = static_cast<std::size_t>(ix.qk(b + i, ix.qk_head(hv), d));
            sums.dq[at] += dq(i, d);
            sums.dk[at] += dk(i, d);
          }
          for (std::int64_t e = 0; e < s.value_dim; ++e)
            out.dv[ix.v(b + i, hv, e)] = round_to(Rounding::kBf16, dv(i, e));
          for (std::int64_t d = 0; d < gw; ++d) out.dg[ix.per_head(b + i, hv, gw, d)] = dg(i, d);
        }
      }
      for (std::int64_t d = 0; d < s.key_dim; ++d)
        for (std::int64_t e = 0; e < s.value_dim; ++e)
          out.dh0[ix.state(n, hv, d, e, p.layout)] = ds(d, e);
    }
  for (std::vector<float>* from : {&sums.dq, &sums.dk}) {
    std::vector<double>& to = from == &sums.dq ? out.dq : out.dk;
    for (float x : *from) to.push_back(round_to(Rounding::kBf16, x));
  }
  return out;
}

}  // namespace kcv::glr::testing
