// File: glr/tests/support/precision_emulation.cpp
// The fp32 emulation of precision_emulation.hpp: one small float matrix type and one function per
// stage, in the reference's order (chunk_forward.hpp). Every product is a plain loop that
// accumulates in one fp32 register, in index order, after rounding its operands per the contract.
#include "support/precision_emulation.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "glr/oracle/indexing.hpp"
#include "support/emulation_stages.hpp"

namespace kcv::glr::testing {
using P = Product;

namespace emulation {

FMatrix load_state(const std::vector<double>& states, const Problem& p, std::int64_t n,
                   std::int64_t hv) {
  const detail::TensorIndex ix(p.shape);
  FMatrix m(p.shape.key_dim, p.shape.value_dim);
  for (std::int64_t d = 0; d < m.rows && !states.empty(); ++d)
    for (std::int64_t e = 0; e < m.cols; ++e)
      m(d, e) = static_cast<float>(states[ix.state(n, hv, d, e, p.layout)]);
  return m;
}

// A rounded copy: the operand as the product reads it.
FMatrix rounded(FMatrix m, Rounding r) {
  for (float& x : m.a) x = round_to(r, x);
  return m;
}

// C = A·B (transpose_a: Aᵀ·B), operands rounded first, fp32 accumulation in index order.
FMatrix product(const FMatrix& a, Rounding ra, const FMatrix& b, Rounding rb, bool transpose_a) {
  const FMatrix x = rounded(a, ra), y = rounded(b, rb);
  const std::int64_t m = transpose_a ? a.cols : a.rows, k = transpose_a ? a.rows : a.cols;
  FMatrix c(m, b.cols);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < b.cols; ++j) {
      float acc = 0.0f;
      for (std::int64_t p = 0; p < k; ++p) acc += (transpose_a ? x(p, i) : x(i, p)) * y(p, j);
      c(i, j) = acc;
    }
  return c;
}

Chunk gather(Member m, const Problem& p, std::int64_t hv, std::int64_t begin, std::int64_t end) {
  const Shape& s = p.shape;
  const detail::TensorIndex ix(s);
  const std::int64_t c = end - begin, gw = gate_width(traits(m).gate, s.key_dim);
  Chunk ch{
      FMatrix(c, s.key_dim), FMatrix(c, s.key_dim), FMatrix(c, s.value_dim), FMatrix(c, gw), {},
      traits(m).gate};
  for (std::int64_t i = 0; i < c; ++i) {
    const std::int64_t t = begin + i;
    for (std::int64_t d = 0; d < s.key_dim; ++d) {
      ch.q(i, d) = static_cast<float>(p.q[ix.qk(t, ix.qk_head(hv), d)]);
      ch.k(i, d) = static_cast<float>(p.k[ix.qk(t, ix.qk_head(hv), d)]);
    }
    for (std::int64_t e = 0; e < s.value_dim; ++e)
      ch.v(i, e) = static_cast<float>(p.v[ix.v(t, hv, e)]);
    for (std::int64_t d = 0; d < gw; ++d)  // F1: chunk-local cumsum in fp32
      ch.g(i, d) =
          static_cast<float>(p.g[ix.per_head(t, hv, gw, d)]) + (i > 0 ? ch.g(i - 1, d) : 0.0f);
    if (traits(m).delta_rule) ch.beta.push_back(static_cast<float>(p.beta[ix.beta(t, hv)]));
  }
  return ch;
}

// F2's decayed Gram P(A, B) on the triangle, operands rounded (decayed_gram.hpp's pairing).
FMatrix gram(const Chunk& ch, const FMatrix& a, const FMatrix& b, bool strict, OperandRounding r) {
  const std::int64_t c = a.rows;
  FMatrix out(c, c);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < (strict ? i : i + 1); ++j) {
      const std::int64_t anchor = i / kSubChunk * kSubChunk;
      float acc = 0.0f;
      for (std::int64_t d = 0; d < a.cols; ++d) {
        float fa = 1.0f, fb = 1.0f;
        if (ch.gate == GateKind::kChannel && j >= anchor)
          fa = ch.decay(ch.log_cum(i, d) - ch.log_cum(j, d));
        if (ch.gate == GateKind::kChannel && j < anchor) {
          fa = ch.decay(ch.log_cum(i, d) - ch.log_cum(anchor, d));
          fb = ch.decay(ch.log_cum(anchor, d) - ch.log_cum(j, d));
        }
        acc += round_to(r.a, a(i, d) * fa) * round_to(r.b, b(j, d) * fb);
      }
      const bool scalar = ch.gate == GateKind::kScalar;
      out(i, j) = scalar ? acc * ch.decay(ch.log_cum(i, 0) - ch.log_cum(j, 0)) : acc;
    }
  return out;
}

// T = I − StrictLower(L T), row by row, each L·T product with its operands rounded.
FMatrix solve(const FMatrix& l, OperandRounding r) {
  const std::int64_t c = l.rows;
  FMatrix t(c, c);
  for (std::int64_t i = 0; i < c; ++i) {
    t(i, i) = 1.0f;
    for (std::int64_t j = 0; j < i; ++j) {
      float acc = 0.0f;
      for (std::int64_t p = j; p < i; ++p) acc += round_to(r.a, l(i, p)) * round_to(r.b, t(p, j));
      t(i, j) = -acc;
    }
  }
  return t;
}

Factors prepare(const Chunk& ch, bool delta_rule, const PrecisionContract& pc) {
  const std::int64_t c = ch.k.rows, kd = ch.k.cols;
  Factors f{ch.q, ch.k, gram(ch, ch.q, ch.k, false, pc[P::kGramQK]), FMatrix(c, kd), ch.v, {}};
  if (delta_rule) f.x = FMatrix(c, kd), f.v_tilde = FMatrix(c, ch.v.cols);
  for (std::int64_t d = 0; d < kd; ++d) f.e_last.push_back(ch.decay(ch.log_cum(c - 1, d)));
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      const float e = ch.decay(ch.log_cum(i, d));
      f.q_bar(i, d) = ch.q(i, d) * e;
      f.k_bar(i, d) = ch.k(i, d) * ch.decay(ch.log_cum(c - 1, d) - ch.log_cum(i, d));
      if (delta_rule) f.x(i, d) = ch.beta[i] * (ch.k(i, d) * e);
    }
  if (!delta_rule) return f;
  f.gram_kk = gram(ch, ch.k, ch.k, true, pc[P::kGramKK]);
  FMatrix l = f.gram_kk;
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t j = 0; j < i; ++j) l(i, j) *= ch.beta[i];
    for (std::int64_t e = 0; e < ch.v.cols; ++e) f.v_tilde(i, e) = ch.beta[i] * ch.v(i, e);
  }
  f.t = solve(l, pc[P::kSolve]);
  f.w = product(f.t, pc[P::kWyW].a, f.x, pc[P::kWyW].b);
  f.u = rounded(product(f.t, pc[P::kWyU].a, f.v_tilde, pc[P::kWyU].b), pc.u_addend);
  return f;
}

// F4 and F5 of one chunk: writes o's rows, returns the state leaving the chunk.
FMatrix step(const Factors& f, const FMatrix& h, bool delta_rule, const PrecisionContract& pc,
             float scale, FMatrix& o) {
  FMatrix delta = f.u;  // Δ = V without the delta rule
  if (delta_rule) {
    const FMatrix wh = product(f.w, pc[P::kStateW].a, h, pc[P::kStateW].b);
    for (std::size_t i = 0; i < delta.a.size(); ++i) delta.a[i] -= wh.a[i];
  }
  const FMatrix inter = product(f.q_bar, pc[P::kOutputInter].a, h, pc[P::kOutputInter].b);
  const FMatrix intra = product(f.a_qk, pc[P::kOutputIntra].a, delta, pc[P::kOutputIntra].b);
  for (std::size_t i = 0; i < o.a.size(); ++i) o.a[i] = scale * (inter.a[i] + intra.a[i]);
  FMatrix next = product(f.k_bar, pc[P::kStateUpdate].a, delta, pc[P::kStateUpdate].b, true);
  for (std::int64_t d = 0; d < h.rows; ++d)
    for (std::int64_t e = 0; e < h.cols; ++e) next(d, e) = f.e_last[d] * h(d, e) + next(d, e);
  return rounded(std::move(next), pc.state_carry);
}

}  // namespace emulation

using namespace emulation;

Outputs emulate_forward(Member member, const Problem& p, const PrecisionContract& pc,
                        ChunkOptions options) {
  const Shape& s = p.shape;
  const detail::TensorIndex ix(s);
  const bool delta_rule = traits(member).delta_rule;
  Outputs out{std::vector<double>(static_cast<std::size_t>(s.v_size())),
              std::vector<double>(static_cast<std::size_t>(s.state_size()))};
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      FMatrix h = load_state(p.h0, p, n, hv);
      for (std::int64_t b = s.seq_begin(n); b < s.seq_end(n); b += options.chunk_size) {
        const std::int64_t end = std::min(b + options.chunk_size, s.seq_end(n));
        const Factors f = prepare(gather(member, p, hv, b, end), delta_rule, pc);
        FMatrix o(end - b, s.value_dim);
        h = step(f, h, delta_rule, pc, static_cast<float>(p.scale), o);
        for (std::int64_t i = 0; i < o.rows; ++i)
          for (std::int64_t e = 0; e < o.cols; ++e)
            out.o[ix.v(b + i, hv, e)] = round_to(Rounding::kBf16, o(i, e));
      }
      for (std::int64_t d = 0; d < s.key_dim; ++d)
        for (std::int64_t e = 0; e < s.value_dim; ++e)
          out.final_state[ix.state(n, hv, d, e, p.layout)] = h(d, e);
    }
  return out;
}

Problem kernel_inputs(Problem p) {
  for (std::vector<double>* x : {&p.q, &p.k, &p.v, &p.beta})
    for (double& v : *x) v = round_to(Rounding::kBf16, static_cast<float>(v));
  for (std::vector<double>* x : {&p.g, &p.h0})
    for (double& v : *x) v = static_cast<float>(v);
  return p;
}

}  // namespace kcv::glr::testing
