// File: glr/reference/chunk_io.cpp
// Gather/scatter between packed tensors and per-chunk matrices (see chunk_io.hpp).
#include "glr/reference/chunk_io.hpp"

#include <algorithm>

namespace kcv::glr::detail {

std::vector<ChunkRange> chunks_of(const Shape& s, std::int64_t n, std::int64_t chunk_size) {
  std::vector<ChunkRange> out;
  for (std::int64_t b = s.seq_begin(n); b < s.seq_end(n); b += chunk_size)
    out.push_back({b, std::min(b + chunk_size, s.seq_end(n))});
  return out;
}

ChunkInputs gather_chunk(Member member, const Problem& p, std::int64_t hv, ChunkRange r) {
  const Shape& s = p.shape;
  const TensorIndex ix(s);
  const MemberTraits tr = traits(member);
  const std::int64_t c = r.end - r.begin;
  const std::int64_t h = ix.qk_head(hv);
  const std::int64_t gw = gate_width(tr.gate, s.key_dim);
  ChunkInputs in{Matrix(c, s.key_dim), Matrix(c, s.key_dim), gather_rows(p.v, s, hv, r), {}, {}};
  Matrix g_rows(c, gw);
  for (std::int64_t i = 0; i < c; ++i) {
    const std::int64_t t = r.begin + i;
    for (std::int64_t d = 0; d < s.key_dim; ++d) {
      in.q(i, d) = p.q[ix.qk(t, h, d)];
      in.k(i, d) = p.k[ix.qk(t, h, d)];
    }
    for (std::int64_t d = 0; d < gw; ++d) g_rows(i, d) = p.g[ix.per_head(t, hv, gw, d)];
    if (tr.delta_rule) in.beta.push_back(p.beta[ix.beta(t, hv)]);
  }
  in.gate = ChunkGate(tr.gate, c, g_rows);
  return in;
}

Matrix gather_rows(const std::vector<double>& values, const Shape& s, std::int64_t hv,
                   ChunkRange r) {
  const TensorIndex ix(s);
  Matrix m(r.end - r.begin, s.value_dim);
  for (std::int64_t i = 0; i < m.rows(); ++i)
    for (std::int64_t e = 0; e < s.value_dim; ++e) m(i, e) = values[ix.v(r.begin + i, hv, e)];
  return m;
}

void scatter_rows(const Matrix& rows, const Shape& s, std::int64_t hv, ChunkRange r,
                  std::vector<double>& values) {
  const TensorIndex ix(s);
  for (std::int64_t i = 0; i < rows.rows(); ++i)
    for (std::int64_t e = 0; e < s.value_dim; ++e) values[ix.v(r.begin + i, hv, e)] = rows(i, e);
}

void scatter_grads(const ChunkGrads& g, const Matrix& dg, const Shape& s, std::int64_t hv,
                   ChunkRange r, Gradients& out) {
  const TensorIndex ix(s);
  const std::int64_t h = ix.qk_head(hv);
  scatter_rows(g.dv, s, hv, r, out.dv);
  for (std::int64_t i = 0; i < r.end - r.begin; ++i) {
    const std::int64_t t = r.begin + i;
    for (std::int64_t d = 0; d < s.key_dim; ++d) {
      out.dq[ix.qk(t, h, d)] += g.dq(i, d);
      out.dk[ix.qk(t, h, d)] += g.dk(i, d);
    }
    for (std::int64_t d = 0; d < dg.cols(); ++d)
      out.dg[ix.per_head(t, hv, dg.cols(), d)] = dg(i, d);
    if (!g.dbeta.empty()) out.dbeta[ix.beta(t, hv)] = g.dbeta[i];
  }
}

}  // namespace kcv::glr::detail
