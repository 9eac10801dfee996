// File: glr/reference/chunk_pass.cpp
// The two serial passes of chunk_pass.hpp (gdn-spec.md §5 F4, §6 B0–B2).
#include "glr/reference/chunk_pass.hpp"

#include <utility>

#include "glr/reference/chunk_gate.hpp"

namespace kcv::glr::detail {

std::vector<ChunkRecord> forward_records(Member m, const Problem& p, std::int64_t n,
                                         std::int64_t hv, std::int64_t chunk_size,
                                         Matrix* final_state) {
  const bool delta_rule = traits(m).delta_rule;
  std::vector<ChunkRecord> recs;
  Matrix h = load_state(p.h0, p.shape, n, hv, p.layout);
  for (ChunkRange r : chunks_of(p.shape, n, chunk_size)) {
    ChunkRecord rec{r, gather_chunk(m, p, hv, r), {}, h, {}, {}, {}};
    {
      const GateTable factors(rec.in.gate);
      rec.f = prepare_chunk(rec.in, delta_rule);
      rec.delta = chunk_delta(rec.in, rec.f, h, delta_rule);
      h = chunk_next_state(rec.f, h, rec.delta);
    }
    recs.push_back(std::move(rec));
  }
  if (final_state != nullptr) *final_state = std::move(h);
  return recs;
}

Matrix reverse_scan(const Problem& p, const Cotangents& cot, std::int64_t n, std::int64_t hv,
                    bool delta_rule, std::vector<ChunkRecord>& recs) {
  Matrix d_state = load_state(cot.d_final_state, p.shape, n, hv, p.layout);
  for (auto it = recs.rbegin(); it != recs.rend(); ++it) {
    const Matrix d_o = gather_rows(cot.d_o, p.shape, hv, it->range);
    ScanStep step = dh_scan_step(it->f, local_delta_grad(it->f, d_o, p.scale), d_state, d_o,
                                 p.scale, delta_rule);
    it->d_end = std::move(d_state);
    it->d_delta = std::move(step.d_delta);
    d_state = std::move(step.d_entry);
  }
  return d_state;
}

}  // namespace kcv::glr::detail
