// File: glr/check/reference_run.cpp
// Slicing, parallel evaluation and scatter for reference_run.hpp.
#include "check/reference_run.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include "kcv/glr/chunked.hpp"

namespace kcv::glr::check {
namespace {

struct Slice {
  std::int64_t seq = 0;
  std::int64_t hv = 0;
  Problem problem;
  Cotangents cot;
  Expected<Outputs> fwd = Error{};
  Expected<Gradients> grads = Error{};
};

// Copies `width` values per token of head `head` (of `heads`) for tokens [b, e).
std::vector<double> rows(const std::vector<double>& src, std::int64_t b, std::int64_t e,
                         std::int64_t heads, std::int64_t head, std::int64_t width) {
  std::vector<double> out;
  if (src.empty() || width == 0) return out;
  out.reserve(static_cast<std::size_t>((e - b) * width));
  for (std::int64_t t = b; t < e; ++t)
    for (std::int64_t x = 0; x < width; ++x) out.push_back(src[(t * heads + head) * width + x]);
  return out;
}

std::vector<double> state_block(const std::vector<double>& src, const Shape& s, std::int64_t n,
                                std::int64_t hv) {
  if (src.empty()) return {};
  const std::int64_t kv = s.key_dim * s.value_dim;
  const auto first = src.begin() + (n * s.v_heads + hv) * kv;
  return std::vector<double>(first, first + kv);
}

Slice make_slice(const HostInputs& in, std::int64_t n, std::int64_t hv) {
  const Problem& p = in.problem;
  const Shape& s = p.shape;
  const std::int64_t b = s.seq_begin(n);
  const std::int64_t e = s.seq_end(n);
  const std::int64_t h = hv / (s.v_heads / s.qk_heads);
  const std::int64_t gw = gate_width(traits(in.member).gate, s.key_dim);
  Slice sl;
  sl.seq = n;
  sl.hv = hv;
  Problem& q = sl.problem;
  q.shape.tokens = e - b;
  q.shape.qk_heads = 1;
  q.shape.v_heads = 1;
  q.shape.key_dim = s.key_dim;
  q.shape.value_dim = s.value_dim;
  q.q = rows(p.q, b, e, s.qk_heads, h, s.key_dim);
  q.k = rows(p.k, b, e, s.qk_heads, h, s.key_dim);
  q.v = rows(p.v, b, e, s.v_heads, hv, s.value_dim);
  q.g = rows(p.g, b, e, s.v_heads, hv, gw);
  q.beta = rows(p.beta, b, e, s.v_heads, hv, 1);
  q.h0 = state_block(p.h0, s, n, hv);
  q.scale = p.scale;
  q.layout = p.layout;
  sl.cot.d_o = rows(in.cot.d_o, b, e, s.v_heads, hv, s.value_dim);
  sl.cot.d_final_state = state_block(in.cot.d_final_state, s, n, hv);
  return sl;
}

// Writes (or adds) a slice's per-token rows back into the full tensor.
void scatter(const std::vector<double>& src, std::vector<double>& dst, std::int64_t b,
             std::int64_t e, std::int64_t heads, std::int64_t head, std::int64_t width, bool add) {
  if (src.empty() || width == 0) return;
  std::size_t i = 0;
  for (std::int64_t t = b; t < e; ++t)
    for (std::int64_t x = 0; x < width; ++x) {
      double& d = dst[(t * heads + head) * width + x];
      d = add ? d + src[i] : src[i];
      ++i;
    }
}

void scatter_state(const std::vector<double>& src, std::vector<double>& dst, const Shape& s,
                   std::int64_t n, std::int64_t hv) {
  const std::int64_t kv = s.key_dim * s.value_dim;
  for (std::int64_t i = 0; i < kv; ++i) dst[(n * s.v_heads + hv) * kv + i] = src[i];
}

}  // namespace

Expected<ReferenceResults> run_reference(const HostInputs& in, int threads) {
  const Shape& s = in.problem.shape;
  std::vector<Slice> slices;
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) slices.push_back(make_slice(in, n, hv));
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < slices.size(); i = next++) {
      Slice& sl = slices[i];
      sl.fwd = chunked_forward(in.member, sl.problem);
      sl.grads = chunked_backward(in.member, sl.problem, sl.cot);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();

  const std::int64_t gw = gate_width(traits(in.member).gate, s.key_dim);
  ReferenceResults r;
  r.fwd.o.assign(static_cast<std::size_t>(s.v_size()), 0.0);
  r.fwd.final_state.assign(static_cast<std::size_t>(s.state_size()), 0.0);
  Gradients& g = r.grads;
  g.dq.assign(static_cast<std::size_t>(s.qk_size()), 0.0);
  g.dk.assign(static_cast<std::size_t>(s.qk_size()), 0.0);
  g.dv.assign(static_cast<std::size_t>(s.v_size()), 0.0);
  g.dg.assign(static_cast<std::size_t>(s.tokens * s.v_heads * gw), 0.0);
  g.dbeta.assign(in.problem.beta.size(), 0.0);
  g.dh0.assign(static_cast<std::size_t>(s.state_size()), 0.0);
  for (const Slice& sl : slices) {  // value-head order within each sequence
    if (!sl.fwd) return sl.fwd.error();
    if (!sl.grads) return sl.grads.error();
    const std::int64_t b = s.seq_begin(sl.seq);
    const std::int64_t e = s.seq_end(sl.seq);
    const std::int64_t h = sl.hv / (s.v_heads / s.qk_heads);
    scatter(sl.fwd->o, r.fwd.o, b, e, s.v_heads, sl.hv, s.value_dim, false);
    scatter_state(sl.fwd->final_state, r.fwd.final_state, s, sl.seq, sl.hv);
    scatter(sl.grads->dq, g.dq, b, e, s.qk_heads, h, s.key_dim, true);
    scatter(sl.grads->dk, g.dk, b, e, s.qk_heads, h, s.key_dim, true);
    scatter(sl.grads->dv, g.dv, b, e, s.v_heads, sl.hv, s.value_dim, false);
    scatter(sl.grads->dg, g.dg, b, e, s.v_heads, sl.hv, gw, false);
    scatter(sl.grads->dbeta, g.dbeta, b, e, s.v_heads, sl.hv, 1, false);
    scatter_state(sl.grads->dh0, g.dh0, s, sl.seq, sl.hv);
  }
  return r;
}

}  // namespace kcv::glr::check
