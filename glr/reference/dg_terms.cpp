// File: glr/reference/dg_terms.cpp
// dg_terms (include/kcv/glr/error_model.hpp): the magnitudes of the terms the chunk form sums into
// each dg element, from the reference's own intermediates. With G_s the cumulative log-decay from
// the sequence start, the inputs enter the loss only as q_s e^{G_s} and k_s e^{−G_s} (v_s e^{−G_s}
// for a scalar gate with the delta rule) and the final state, so
//   dg_t = Σ_{s = t..e} (q_s·dq_s − k_s·dk_s) + ⟨S_e, dS_e⟩
// for t in a chunk whose last token is e (S_e the state leaving the chunk, dS_e its gradient),
// per value head: up to C row products plus K·V boundary products (docs/glr/precision-contract.md
// §2.3). The chunked reference's form of the same sum (glr/reference/chunk_backward.cpp, the
// CUDA-core kernels, the tensor-core SSD kernel) leaves out pairs that cancel exactly and sums,
// in place of ⟨S_e, dS_e⟩, e_last·⟨H, dS_e⟩ and the inter-chunk k·dk terms of the rows before the
// last, k_s ⊙ r_s ⊙ (Δ dS_eᵀ)_s; their squares are added to the magnitudes too, so the scale
// covers both forms (the totals are the gauge form's). dq, dk, dv per value head come from the
// backward of the problem with q, k repeated to the value heads (before GVA's group sum).
#include <cmath>

#include "glr/oracle/indexing.hpp"
#include "glr/oracle/matrix.hpp"
#include "glr/reference/chunk_pass.hpp"
#include "kcv/glr/error_model.hpp"

namespace kcv::glr {
namespace {

// q and k repeated to the value heads: dq, dk of the result are per value head.
Problem per_value_head(const Problem& p) {
  const Shape& s = p.shape;
  const detail::TensorIndex ix(s);
  Problem e = p;
  e.shape.qk_heads = s.v_heads;
  e.q.assign(static_cast<std::size_t>(s.tokens * s.v_heads * s.key_dim), 0.0);
  e.k = e.q;
  for (std::int64_t t = 0; t < s.tokens; ++t)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv)
      for (std::int64_t d = 0; d < s.key_dim; ++d) {
        const std::size_t to = static_cast<std::size_t>((t * s.v_heads + hv) * s.key_dim + d);
        e.q[to] = p.q[ix.qk(t, ix.qk_head(hv), d)];
        e.k[to] = p.k[ix.qk(t, ix.qk_head(hv), d)];
      }
  return e;
}

struct RowTerms {
  std::vector<double> sum, sq;  // [T, HV, gate width]
};

RowTerms row_terms(Member member, const Problem& e, const Gradients& g, std::int64_t gw) {
  const Shape& s = e.shape;
  const bool v_form = traits(member).delta_rule && traits(member).gate == GateKind::kScalar;
  RowTerms out{std::vector<double>(e.g.size(), 0.0), std::vector<double>(e.g.size(), 0.0)};
  for (std::int64_t t = 0; t < s.tokens; ++t)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      const std::size_t qk = static_cast<std::size_t>((t * s.v_heads + hv) * s.key_dim);
      const std::size_t vv = static_cast<std::size_t>((t * s.v_heads + hv) * s.value_dim);
      const std::size_t row = static_cast<std::size_t>((t * s.v_heads + hv) * gw);
      for (std::int64_t d = 0; d < s.key_dim; ++d) {
        const double a = e.q[qk + d] * g.dq[qk + d];
        const double b = v_form ? 0.0 : e.k[qk + d] * g.dk[qk + d];
        out.sum[row + (gw == 1 ? 0 : d)] += a - b;
        out.sq[row + (gw == 1 ? 0 : d)] += a * a + b * b;
      }
      for (std::int64_t c = 0; v_form && c < s.value_dim; ++c) {
        const double b = e.v[vv + c] * g.dv[vv + c];
        out.sum[row] -= b;
        out.sq[row] += b * b;
      }
    }
  return out;
}

// Adds ⟨S_e, dS_e⟩ (per key channel, or summed over it) to every row of each chunk, after the
// rows' chunk-local reverse cumsum, and to the squares the reference form's own terms,
// e_last·H ⊙ dS_e and k_s·(r_s ⊙ (Δ dS_eᵀ)_s) for s before the chunk's last row.
void add_boundary_terms(Member member, const Problem& p, const Cotangents& cot, std::int64_t gw,
                        std::int64_t chunk, RowTerms& t) {
  const Shape& s = p.shape;
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      detail::Matrix final_state;
      auto recs = detail::forward_records(member, p, n, hv, chunk, &final_state);
      detail::reverse_scan(p, cot, n, hv, traits(member).delta_rule, recs);
      for (std::size_t i = 0; i < recs.size(); ++i) {
        const detail::Matrix& end = i + 1 < recs.size() ? recs[i + 1].h : final_state;
        std::vector<double> bsum(static_cast<std::size_t>(gw), 0.0), bsq(bsum);
        const detail::ChunkRecord& rec = recs[i];
        for (std::int64_t d = 0; d < s.key_dim; ++d)
          for (std::int64_t e = 0; e < s.value_dim; ++e) {
            const double v = end(d, e) * rec.d_end(d, e);
            const double from_h =
                rec.f.e_last[static_cast<std::size_t>(d)] * rec.h(d, e) * rec.d_end(d, e);
            bsum[gw == 1 ? 0 : d] += v;
            bsq[gw == 1 ? 0 : d] += v * v + from_h * from_h;
          }
        const detail::Matrix dk_raw = detail::matmul_nt(rec.delta, rec.d_end);
        for (std::int64_t j = 0; j + 1 < rec.in.k.rows(); ++j) {
          std::vector<double> term(static_cast<std::size_t>(gw), 0.0);
          for (std::int64_t d = 0; d < s.key_dim; ++d)
            term[gw == 1 ? 0 : d] += rec.in.k(j, d) * rec.in.gate.to_end(j, d) * dk_raw(j, d);
          for (std::int64_t c = 0; c < gw; ++c) bsq[c] += term[c] * term[c];
        }
        for (std::int64_t r = recs[i].range.end - 1; r >= recs[i].range.begin; --r)
          for (std::int64_t c = 0; c < gw; ++c) {
            const std::size_t at = static_cast<std::size_t>((r * s.v_heads + hv) * gw + c);
            if (r + 1 < recs[i].range.end) {  // chunk-local reverse cumsum of the row terms
              t.sum[at] += t.sum[at + static_cast<std::size_t>(s.v_heads * gw)];
              t.sq[at] += t.sq[at + static_cast<std::size_t>(s.v_heads * gw)];
            }
          }
        for (std::int64_t r = recs[i].range.begin; r < recs[i].range.end; ++r)
          for (std::int64_t c = 0; c < gw; ++c) {
            const std::size_t at = static_cast<std::size_t>((r * s.v_heads + hv) * gw + c);
            t.sum[at] += bsum[c];
            t.sq[at] += bsq[c];
          }
      }
    }
}

}  // namespace

Expected<DgTerms> dg_terms(Member member, const Problem& p, const Cotangents& cot,
                           ChunkOptions options) {
  if (Status st = validate(options); !st) return st.error();
  if (gate_width(traits(member).gate, p.shape.key_dim) == 0) return DgTerms{};
  const Problem e = per_value_head(p);
  Expected<Gradients> g = chunked_backward(member, e, cot, options);
  if (!g) return g.error();
  return dg_terms(member, e, cot, *g, options);
}

Expected<DgTerms> dg_terms(Member member, const Problem& p, const Cotangents& cot,
                           const Gradients& grads, ChunkOptions options) {
  if (Status st = validate(options); !st) return st.error();
  if (p.shape.qk_heads != p.shape.v_heads) {
    return make_error(ErrorCode::kInvalidArgument,
                      "dg_terms: the gradients' problem must have one q/k head per value head",
                      "qk_heads");
  }
  const std::int64_t gw = gate_width(traits(member).gate, p.shape.key_dim);
  if (gw == 0) return DgTerms{};
  const Problem& e = p;
  RowTerms t = row_terms(member, e, grads, gw);
  add_boundary_terms(member, p, cot, gw, options.chunk_size, t);
  DgTerms out{std::vector<double>(t.sum.size()), std::move(t.sum)};
  for (std::size_t i = 0; i < out.scale.size(); ++i)
    out.scale[i] = std::sqrt(t.sq[i]) + std::fabs(out.total[i]);
  return out;
}

}  // namespace kcv::glr
