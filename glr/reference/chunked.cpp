// File: glr/reference/chunked.cpp
// Drivers of the chunked reference: per (sequence, value head), the serial loops over chunks that
// tie the per-chunk stages together. Forward: F1–F3 per chunk, then F4/F5 with the running state.
// Backward: B0 recompute (entering states H_n and Δ_n; fla recomputes rather than stores them),
// B1 + B2 as one reverse loop (dH_end of chunk n is fla's dh[n]; after the loop it is dh0), then
// B3–B6 per chunk, which are independent of each other given H_n, dH_n, Δ_n and dΔ_n.
#include "kcv/glr/chunked.hpp"

#include <string>

#include "glr/oracle/validate.hpp"
#include "glr/reference/chunk_gate.hpp"
#include "glr/reference/chunk_pass.hpp"

namespace kcv::glr {
namespace {

using detail::ChunkFactors;
using detail::ChunkInputs;
using detail::ChunkRange;
using detail::Matrix;

void head_backward(Member m, const Problem& p, const Cotangents& cot, std::int64_t n,
                   std::int64_t hv, std::int64_t chunk_size, Gradients& out) {
  const bool delta_rule = traits(m).delta_rule;
  std::vector<detail::ChunkRecord> recs = detail::forward_records(m, p, n, hv, chunk_size);
  const Matrix dh0 = detail::reverse_scan(p, cot, n, hv, delta_rule, recs);  // B1 + B2
  detail::store_state(dh0, p.shape, n, hv, p.layout, out.dh0);
  for (const detail::ChunkRecord& rec : recs) {  // B3–B6
    const detail::GateTable factors(rec.in.gate);
    const Matrix d_o = detail::gather_rows(cot.d_o, p.shape, hv, rec.range);
    const detail::ChunkGrads g = detail::chunk_gradients(
        rec.in, rec.f, {rec.h, rec.d_end, rec.delta, rec.d_delta}, d_o, p.scale, delta_rule);
    detail::scatter_grads(g, detail::reverse_cumsum(g.d_gate), p.shape, hv, rec.range, out);
  }
}

}  // namespace

Status validate(ChunkOptions opt) {
  if (opt.chunk_size >= kSubChunk && opt.chunk_size % kSubChunk == 0) return {};
  return detail::invalid_argument("chunk_size must be a positive multiple of " +
                                  std::to_string(kSubChunk) + ", got " +
                                  std::to_string(opt.chunk_size));
}

Expected<Outputs> chunked_forward(Member member, const Problem& p, ChunkOptions opt) {
  if (Status st = validate(member, p); !st) return st.error();
  if (Status st = validate(opt); !st) return st.error();
  const Shape& s = p.shape;
  const bool delta_rule = traits(member).delta_rule;
  Outputs out;
  out.o.assign(static_cast<std::size_t>(s.v_size()), 0.0);
  out.final_state.assign(static_cast<std::size_t>(s.state_size()), 0.0);
  for (std::int64_t n = 0; n < s.sequences(); ++n) {
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      Matrix h = detail::load_state(p.h0, s, n, hv, p.layout);
      for (ChunkRange r : detail::chunks_of(s, n, opt.chunk_size)) {
        const ChunkInputs in = detail::gather_chunk(member, p, hv, r);
        const detail::GateTable factors(in.gate);
        const ChunkFactors f = detail::prepare_chunk(in, delta_rule);
        const Matrix delta = detail::chunk_delta(in, f, h, delta_rule);
        detail::scatter_rows(detail::chunk_output(f, h, delta, p.scale), s, hv, r, out.o);
        h = detail::chunk_next_state(f, h, delta);
      }
      detail::store_state(h, s, n, hv, p.layout, out.final_state);
    }
  }
  return out;
}

Expected<Gradients> chunked_backward(Member member, const Problem& p, const Cotangents& cot,
                                     ChunkOptions opt) {
  if (Status st = validate(member, p); !st) return st.error();
  if (Status st = validate(p, cot); !st) return st.error();
  if (Status st = validate(opt); !st) return st.error();
  Gradients out;
  out.dq.assign(p.q.size(), 0.0);
  out.dk.assign(p.k.size(), 0.0);
  out.dv.assign(p.v.size(), 0.0);
  out.dg.assign(p.g.size(), 0.0);
  out.dbeta.assign(p.beta.size(), 0.0);
  out.dh0.assign(static_cast<std::size_t>(p.shape.state_size()), 0.0);
  for (std::int64_t n = 0; n < p.shape.sequences(); ++n)
    for (std::int64_t hv = 0; hv < p.shape.v_heads; ++hv)
      head_backward(member, p, cot, n, hv, opt.chunk_size, out);
  return out;
}

}  // namespace kcv::glr
