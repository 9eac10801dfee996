// File: glr/tests/chunk_gate_test.cpp
// Stage F1 and B6: the log-space cumsum restarts at every chunk and every sequence, the decay
// factors read the last *valid* row of a partial chunk, and the reverse cumsum is the adjoint of
// the cumsum. Integer-valued gates keep every sum exact, so equality is exact.
#include "glr/reference/chunk_gate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

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

// Every factor a gate gives, bit for bit, for both gated kinds and a scalar gate read by several
// key channels; the pairs j > i (which a table does not hold) too.
std::vector<double> all_factors(const ChunkGate& g, std::int64_t channels) {
  std::vector<double> out;
  for (std::int64_t d = 0; d < channels; ++d) {
    out.push_back(g.at_end(d));
    for (std::int64_t i = 0; i < g.rows(); ++i) {
      out.push_back(g.from_start(i, d));
      out.push_back(g.to_end(i, d));
      for (std::int64_t j = 0; j < g.rows(); ++j) out.push_back(g.between(i, j, d));
    }
  }
  return out;
}

TEST(ChunkGate, ATableGivesTheSameBitsAndLeavesWithItsScope) {
  const std::int64_t rows = 37, channels = 5;
  for (GateKind kind : {GateKind::kScalar, GateKind::kChannel}) {
    Matrix g(rows, kind == GateKind::kScalar ? 1 : channels);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t c = 0; c < g.cols(); ++c)
        g(i, c) = -0.37 * std::sin(1.3 * static_cast<double>(i) + static_cast<double>(c)) - 0.4;
    const ChunkGate gate(kind, rows, g);
    const std::vector<double> plain = all_factors(gate, channels);
    std::vector<double> tabled, nested, copied;
    {
      const detail::GateTable table(gate);
      EXPECT_TRUE(gate.tabulated());
      tabled = all_factors(gate, channels);
      {
        const detail::GateTable inner(gate);  // the outer table serves; leaving keeps it
      }
      EXPECT_TRUE(gate.tabulated());
      nested = all_factors(gate, channels);
      const ChunkGate copy = gate;  // a copy does not carry the table (it would outlive it)
      EXPECT_FALSE(copy.tabulated());
      copied = all_factors(copy, channels);
      ChunkGate other = copy;  // a gate assigned to drops its table (its G has changed)
      const detail::GateTable other_table(other);
      EXPECT_TRUE(other.tabulated());
      other = ChunkGate(kind, 2, Matrix(2, g.cols()));
      EXPECT_FALSE(other.tabulated());
      EXPECT_EQ(other.between(1, 0, 0), 1.0);  // e^0 from its own G, not the old table
    }
    EXPECT_FALSE(gate.tabulated());
    ASSERT_EQ(tabled.size(), plain.size());
    EXPECT_EQ(std::memcmp(tabled.data(), plain.data(), plain.size() * sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(nested.data(), plain.data(), plain.size() * sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(copied.data(), plain.data(), plain.size() * sizeof(double)), 0);
    EXPECT_EQ(all_factors(gate, channels), plain);  // after the scope, computed again
  }
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
