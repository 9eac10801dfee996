// File: glr/tests/support/chunk_data.cpp
// Builds ChunkData through make_case (one sequence, one head), so the draws match problems.hpp.
#include "support/chunk_data.hpp"

#include <random>

namespace kcv::glr::testing {

ChunkData make_chunk(std::int64_t rows, std::int64_t key_dim, GateKind gate, Decay decay,
                     std::uint64_t seed) {
  ProblemSpec spec;
  spec.lengths = {rows};
  spec.key_dim = key_dim;
  spec.value_dim = 1;
  spec.decay = decay;
  spec.seed = seed;
  const Member m = gate == GateKind::kChannel  ? Member::kKda
                   : gate == GateKind::kScalar ? Member::kGatedDeltaNet
                                               : Member::kDeltaNet;
  const Case c = make_case(m, spec);
  const std::int64_t gw = gate_width(gate, key_dim);
  ChunkData out{detail::Matrix(rows, key_dim), detail::Matrix(rows, key_dim), c.problem.beta,
                detail::Matrix(rows, gw)};
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t d = 0; d < key_dim; ++d) {
      out.q(i, d) = c.problem.q[i * key_dim + d];
      out.k(i, d) = c.problem.k[i * key_dim + d];
    }
    for (std::int64_t d = 0; d < gw; ++d) out.g(i, d) = c.problem.g[i * gw + d];
  }
  return out;
}

detail::Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  detail::Matrix m(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) m(i, j) = normal(rng);
  return m;
}

}  // namespace kcv::glr::testing
