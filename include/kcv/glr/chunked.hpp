// File: include/kcv/glr/chunked.hpp
// fp64 chunked reference: the chunk-parallel algorithm of gdn-spec.md §4–§9, stage by stage, for
// every member, with gate kind and delta rule as parameters of the same stages (the shape the
// CUDA kernels take). Forward: chunk-local log-space cumsum of g (F1); intra-chunk decayed Gram
// matrices and T = (I + L)^{-1} by 16×16 block forward substitution (F2); W = T·X, U = T·Ṽ (F3);
// the serial inter-chunk state pass with Δ = U − W·H_n (F4); the output (F5). Backward: recompute
// (B0), dΔ^loc (B1), the reverse dh scan (B2), dq/dk/dw and the gate terms (B3), the WY /
// triangular-inverse VJP with dβ (B4), the sums (B5) and the chunk-local reverse cumsum for dg
// (B6). Chunks never straddle sequences; a sequence's last chunk may be partial.
#pragma once

#include <cstdint>

#include "kcv/expected.hpp"
#include "kcv/glr/member.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr {

/// Sub-chunk size of the triangular inverse and of the anchored per-channel Gram blocks (§7, §8).
inline constexpr std::int64_t kSubChunk = 16;

struct ChunkOptions {
  std::int64_t chunk_size = 64;  ///< C; a positive multiple of kSubChunk
};

/// @post ok() ⇔ chunk_size is a positive multiple of kSubChunk.
[[nodiscard]] Status validate(ChunkOptions options);

/// Chunked forward. @pre validate(member, problem).ok(); @post same contract as oracle_forward.
[[nodiscard]] Expected<Outputs> chunked_forward(Member member, const Problem& problem,
                                                ChunkOptions options = {});

/// Chunked backward. @post same contract as oracle_backward.
[[nodiscard]] Expected<Gradients> chunked_backward(Member member, const Problem& problem,
                                                   const Cotangents& cot,
                                                   ChunkOptions options = {});

}  // namespace kcv::glr
