// File: glr/reference/chunk_io.hpp
// Moving one chunk between the packed token-major tensors and the per-chunk matrices of the
// stages: the chunk list of a sequence (chunks never straddle sequences; the last one may be
// partial), gathering a chunk's q/k (through the GVA head map), v, β, g and dO rows, and
// scattering its gradients back (dq/dk summed over the GVA group).
#pragma once

#include <cstdint>
#include <vector>

#include "glr/oracle/indexing.hpp"
#include "glr/reference/chunk_backward.hpp"
#include "glr/reference/chunk_forward.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::detail {

struct ChunkRange {
  std::int64_t begin = 0;  ///< first token (global index)
  std::int64_t end = 0;    ///< one past the last token
};

/// The chunks of sequence n: [bos + iC, min(bos + (i+1)C, eos)).
std::vector<ChunkRange> chunks_of(const Shape& s, std::int64_t n, std::int64_t chunk_size);

/// Rows of q, k, v, β and g of value head hv (F1 runs in the ChunkGate constructor).
ChunkInputs gather_chunk(Member member, const Problem& p, std::int64_t hv, ChunkRange r);

/// Rows of a [T, HV, V] tensor (o or dO) of value head hv.
Matrix gather_rows(const std::vector<double>& values, const Shape& s, std::int64_t hv,
                   ChunkRange r);

/// Writes c×V rows into a [T, HV, V] tensor.
void scatter_rows(const Matrix& rows, const Shape& s, std::int64_t hv, ChunkRange r,
                  std::vector<double>& values);

/// Adds a chunk's dq, dk (into the GVA head) and writes dv, dg (already reverse-cumsummed), dβ.
void scatter_grads(const ChunkGrads& g, const Matrix& dg, const Shape& s, std::int64_t hv,
                   ChunkRange r, Gradients& out);

}  // namespace kcv::glr::detail
