// File: glr/reference/chunk_pass.hpp
// The serial passes of the chunked reference over the chunks of one (sequence, value head), kept
// as records so that every consumer (the backward, dg's term magnitudes, the declared-rounding
// bound of error_model.hpp) reads the same intermediates: B0's forward recompute (entering state
// H_n, factors, Δ_n of every chunk) and B1 + B2's reverse scan (dH_end and dΔ of every chunk).
#pragma once

#include <cstdint>
#include <vector>

#include "glr/reference/chunk_io.hpp"

namespace kcv::glr::detail {

struct ChunkRecord {
  ChunkRange range;
  ChunkInputs in;
  ChunkFactors f;
  Matrix h;        ///< state entering the chunk
  Matrix delta;    ///< Δ
  Matrix d_end;    ///< ∂L/∂(state leaving the chunk); filled by reverse_scan
  Matrix d_delta;  ///< dΔ; filled by reverse_scan
};

/// The forward pass of sequence n, value head hv, keeping every chunk; `final_state` (optional)
/// receives the state leaving the last chunk.
std::vector<ChunkRecord> forward_records(Member m, const Problem& p, std::int64_t n,
                                         std::int64_t hv, std::int64_t chunk_size,
                                         Matrix* final_state = nullptr);

/// B1 + B2 over the records, last chunk first; returns ∂L/∂h0 of the sequence and head.
Matrix reverse_scan(const Problem& p, const Cotangents& cot, std::int64_t n, std::int64_t hv,
                    bool delta_rule, std::vector<ChunkRecord>& recs);

}  // namespace kcv::glr::detail
