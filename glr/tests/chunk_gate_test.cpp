// File: glr/tests/chunk_gate_test.cpp
// Stage F1 and B6: the log-space cumsum restarts at every chunk and every sequence, the decay
// factors read the last *valid* row of a partial chunk, and the reverse cumsum is the adjoint of
// the cumsum. Integer-valued gates keep every sum exact, so equality is exact.
#include "glr/reference/chunk_gate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "glr/reference/chunk_io.hpp"
#include "support/problems.hpp"

namespace kcv::glr {
namespace {

using detail::ChunkGate;
using detail::Matrix;

TEST(ChunkGate, CumsumRestartsAtEveryChunkAndSequence) {
  testing::ProblemSpec spec;
  spec.lengths = {21, 10};
  spec.key_dim = 2;
  spec.value_dim = 2;
  testing::Case c = testing::make_case(Member::kKda, spec);
  for (std::size_t i = 0; i < c.problem.g.size(); ++i) c.problem.g[i] = -static_cast<double>(i % 5);
  const std::int64_t chunk = 16;
  for (std::int64_t n = 0; n < 2; ++n) {
    for (detail::ChunkRange r : detail::chunks_of(c.problem.shape, n, chunk)) {
      EXPECT_LE(r.end - r.begin, chunk);
      const ChunkGate gate = detail::gather_chunk(Member::kKda, c.problem, 0, r).gate;
      for (std::int64_t d = 0; d < 2; ++d) {
        double want = 0.0;
        for (std::int64_t i = 0; i < r.end - r.begin; ++i) {
          want += c.problem.g[(r.begin + i) * 2 + d];
          EXPECT_EQ(gate.log_cum(i, d), want) << "token " << r.begin + i;
        }
        EXPECT_EQ(gate.at_end(d), std::exp(want)) << "G_last is the last valid row";
      }
    }
  }
  EXPECT_EQ(detail::chunks_of(c.problem.shape, 0, chunk).size(), 2u);  // 16 + 5
  EXPECT_EQ(detail::chunks_of(c.problem.shape, 1, chunk).front().begin, 21);
}

TEST(ChunkGate, FactorsAreExponentsOfDifferencesOfTheCumsum) {
  Matrix g(5, 1);
  for (std::int64_t i = 0; i < 5; ++i) g(i, 0) = -static_cast<double>(i + 1);
  const ChunkGate gate(GateKind::kScalar, 5, g);  // G = -1, -3, -6, -10, -15
  for (std::int64_t d : {0, 3}) {                 // a scalar gate serves every key channel
    EXPECT_EQ(gate.from_start(2, d), std::exp(-6.0));
    EXPECT_EQ(gate.to_end(1, d), std::exp(-15.0 - -3.0));
    EXPECT_EQ(gate.at_end(d), std::exp(-15.0));
    EXPECT_EQ(gate.between(3, 1, d), std::exp(-10.0 - -3.0));
    EXPECT_EQ(gate.between(2, 2, d), 1.0);
  }
}

TEST(ChunkGate, NoGateMeansEveryFactorIsOne) {
  const ChunkGate gate(GateKind::kNone, 4, Matrix(4, 0));
  EXPECT_EQ(gate.width(), 0);
  EXPECT_EQ(gate.from_start(3, 1), 1.0);
  EXPECT_EQ(gate.to_end(0, 1), 1.0);
  EXPECT_EQ(gate.between(3, 0, 2), 1.0);
}

TEST(ChunkGate, ReverseCumsumIsTheAdjointOfTheCumsum) {
  const std::int64_t rows = 23;
  Matrix x(rows, 3), y(rows, 3);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t c = 0; c < 3; ++c) {
      x(i, c) = static_cast<double>((7 * i + 3 * c) % 11) - 5.0;
      y(i, c) = static_cast<double>((5 * i + c) % 13) - 6.0;
    }
  const ChunkGate cum(GateKind::kChannel, rows, x);
  const Matrix ry = detail::reverse_cumsum(y);
  double lhs = 0.0, rhs = 0.0;  // ⟨y, cumsum x⟩ = ⟨revcumsum y, x⟩, exact in integers
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t c = 0; c < 3; ++c) {
      lhs += y(i, c) * cum.log_cum(i, c);
      rhs += ry(i, c) * x(i, c);
    }
  EXPECT_EQ(lhs, rhs);
}

}  // namespace
}  // namespace kcv::glr
