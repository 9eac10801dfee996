// File: glr/tests/support/chunk_data.hpp
// Random single-chunk data for the stage tests (Gram matrices, triangular inverse): c rows of
// l2-normalised keys/queries, β = σ(N(0,1)), and log-decays of the same regimes as problems.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "glr/oracle/matrix.hpp"
#include "glr/reference/chunk_gate.hpp"
#include "support/problems.hpp"

namespace kcv::glr::testing {

struct ChunkData {
  detail::Matrix q, k;       ///< c×K, unit rows
  std::vector<double> beta;  ///< c
  detail::Matrix g;          ///< c × gate width (raw log-decays)
};

ChunkData make_chunk(std::int64_t rows, std::int64_t key_dim, GateKind gate, Decay decay,
                     std::uint64_t seed);

/// A random c×n matrix of N(0,1) entries.
detail::Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed);

}  // namespace kcv::glr::testing
