// File: glr/dev/tril_inverse_columns_test.cpp
// The tensor-core forward's triangular inverse (glr/tiles/tril_inverse_columns.cuh) in the host
// emulation, on 64×64 tiles L = diag(β)·StrictLower(K Kᵀ ⊙ Γ) of a gated delta-rule chunk with c
// valid rows (zero rows and columns past them, as the prepare kernel builds L):
//  * bit for bit the CTA-wide invert_unit_lower (tril_inverse.cuh, which the CUDA-core stages
//    use) on the same tile, NaN in L included, with 4 host threads playing the 4 warps and with
//    one host thread playing the whole CTA: the same sums in the same order, whatever the schedule;
//  * against the fp64 reference (glr/reference/tril_inverse.cpp on the c×c block): the residual
//    |(I + L)·T̂ − I| ≤ γ_{2c}·|I + L|·|T̂| entrywise (u = 2⁻²⁴; the bound of tril_inverse_test.cpp);
//    every entry written; rows and columns past c those of the identity;
//  * a NaN in L reaches exactly the entries of T where the reference's T is NaN (the block
//    algorithm's pattern: L_pm multiplies T_mj for every m of T_ms's block rows, the zeros above
//    T_ss's diagonal included, so the pattern is not that of a plain column substitution).
#include "check/emulator/cuda_shim.hpp"  // first: the CUDA execution model
// (the headers under test come after the shim)
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "glr/reference/tril_inverse.hpp"
#include "glr/tiles/tril_inverse.cuh"
#include "glr/tiles/tril_inverse_columns.cuh"

namespace kcv::glr::gpu::detail {
namespace {

using glr::detail::Matrix;

constexpr int kN = 64;
constexpr int kCtaThreads = 128;

struct Tiles {
  RowAlignedTile<kN, kN> l, t;  // the tensor-core forward's layout (l's upper blocks: scratch)
  Tile<kN, kN> plain_l, plain_t, plain_scratch;  // invert_unit_lower's
};

// Runs body() as one 128-thread CTA played by `host_threads` host threads (4: one per warp, as
// glr/dev/host_runner.cpp; 1: the whole CTA on one thread, barriers empty).
template <typename Body>
void run_cta(int host_threads, Body&& body) {
  namespace emu = check::emulator;
  const int lanes = kCtaThreads / host_threads;
  blockDim = dim3(kCtaThreads);
  emu::lanes_per_host_thread = lanes;
  std::barrier<> barrier(host_threads);
  emu::cta_barrier = host_threads > 1 ? &barrier : nullptr;
  std::vector<std::thread> threads;
  for (int w = 0; w < host_threads; ++w)
    threads.emplace_back([&, w] {
      threadIdx = uint3{static_cast<unsigned>(w * lanes), 0, 0};
      body();
    });
  for (std::thread& t : threads) t.join();
  emu::cta_barrier = nullptr;
  emu::lanes_per_host_thread = 1;
}

// L of a chunk with c valid rows: β_i (k_i·k_j) exp(G_i − G_j) for j < i < c (unit keys of
// dimension 32, β ∈ (0, 1), log-gates in (−0.1, 0)), zero elsewhere.
Matrix chunk_l(int c, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal;
  constexpr int kDim = 32;
  std::vector<double> k(static_cast<std::size_t>(c * kDim)), beta(c), g(c);
  double cum = 0.0;
  for (int i = 0; i < c; ++i) {
    double norm = 0.0;
    for (int d = 0; d < kDim; ++d) norm += std::pow(k[i * kDim + d] = normal(rng), 2);
    for (int d = 0; d < kDim; ++d) k[i * kDim + d] /= std::sqrt(norm);
    beta[i] = unit(rng);
    g[i] = cum -= 0.1 * unit(rng);
  }
  Matrix l(kN, kN);
  for (int i = 0; i < c; ++i)
    for (int j = 0; j < i; ++j) {
      double dot = 0.0;
      for (int d = 0; d < kDim; ++d) dot += k[i * kDim + d] * k[j * kDim + d];
      l(i, j) = static_cast<float>(beta[i] * dot * std::exp(g[i] - g[j]));
    }
  return l;
}

// Both device inverses of l (fp32); the outputs start as NaN, so an unwritten entry shows.
std::unique_ptr<Tiles> invert_both(const Matrix& l, int host_threads) {
  auto tiles = std::make_unique<Tiles>();
  std::memset(static_cast<void*>(tiles.get()), 0xff, sizeof(Tiles));
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j) {
      tiles->l(i, j) = static_cast<float>(l(i, j));
      tiles->plain_l(i, j) = static_cast<float>(l(i, j));
    }
  Tiles& s = *tiles;
  run_cta(host_threads, [&] { invert_unit_lower_by_columns<kN>(s.l, s.t); });
  run_cta(host_threads, [&] { invert_unit_lower<kN, 16>(s.plain_l, s.plain_t, s.plain_scratch); });
  return tiles;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

Matrix leading_block(const Matrix& a, int c) {
  Matrix b(c, c);
  for (int i = 0; i < c; ++i)
    for (int j = 0; j < c; ++j) b(i, j) = a(i, j);
  return b;
}

constexpr int kValidRows[] = {1, 15, 16, 17, 40, 63, 64};

TEST(TrilInverseByColumns, EqualsTheRowBarrierInverseBitForBit) {
  for (int c : kValidRows)
    for (int host_threads : {4, 1}) {
      Matrix l = chunk_l(c, 100 + c);
      if (c > 20) l(c - 1, 3) = std::numeric_limits<double>::quiet_NaN();
      const auto s = invert_both(l, host_threads);
      for (int i = 0; i < kN; ++i)
        for (int j = 0; j < kN; ++j)
          ASSERT_TRUE(same_bits(s->t(i, j), s->plain_t(i, j)))
              << "c " << c << ", " << host_threads << " host threads, T(" << i << ", " << j
              << "): " << s->t(i, j) << " vs " << s->plain_t(i, j);
    }
}

TEST(TrilInverseByColumns, ResidualIsWithinTheSubstitutionBoundAndPaddingIsIdentity) {
  const double u = std::ldexp(1.0, -24);
  for (int c : kValidRows) {
    const Matrix l = leading_block(chunk_l(c, 200 + c), c);
    Matrix padded(kN, kN);
    for (int i = 0; i < c; ++i)
      for (int j = 0; j < c; ++j) padded(i, j) = l(i, j);
    const auto s = invert_both(padded, 4);
    Matrix t(c, c), unit_l = l, abs_unit_l(c, c), abs_t(c, c);
    for (int i = 0; i < c; ++i) unit_l(i, i) += 1.0;
    for (int i = 0; i < c; ++i)
      for (int j = 0; j < c; ++j) {
        t(i, j) = s->t(i, j);
        abs_t(i, j) = std::abs(t(i, j));
        abs_unit_l(i, j) = std::abs(unit_l(i, j));
      }
    const Matrix r = glr::detail::matmul(unit_l, t);
    const Matrix bound = glr::detail::matmul(abs_unit_l, abs_t);
    const double g = 2.0 * c * u / (1.0 - 2.0 * c * u);
    for (int i = 0; i < c; ++i)
      for (int j = 0; j < c; ++j)
        EXPECT_LE(std::abs(r(i, j) - (i == j ? 1.0 : 0.0)), g * bound(i, j))
            << "c " << c << ", (" << i << ", " << j << ")";
    for (int i = 0; i < kN; ++i)
      for (int j = 0; j < kN; ++j) {
        if (i < c && j < c) {
          EXPECT_TRUE(std::isfinite(s->t(i, j))) << "c " << c << ", (" << i << ", " << j << ")";
        } else {
          EXPECT_EQ(s->t(i, j), i == j ? 1.0f : 0.0f)
              << "c " << c << ", (" << i << ", " << j << ")";
        }
      }
  }
}

TEST(TrilInverseByColumns, NanInLReachesTheEntriesTheReferenceSays) {
  // One NaN per case: in a diagonal block, in each off-diagonal block, at the corners.
  const std::pair<int, int> spots[] = {{5, 2},  {17, 16}, {20, 3},  {40, 33}, {50, 20},
                                       {63, 0}, {63, 62}, {33, 31}, {48, 47}, {35, 8}};
  for (const int c : {64, 40})
    for (const auto& [pi, pj] : spots) {
      if (pi >= c) continue;
      Matrix l = leading_block(chunk_l(c, 300 + pi), c);
      l(pi, pj) = std::numeric_limits<double>::quiet_NaN();
      const Matrix want = glr::detail::unit_lower_inverse(l);
      Matrix padded(kN, kN);
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < c; ++j) padded(i, j) = l(i, j);
      const auto s = invert_both(padded, 4);
      int nans = 0;
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < c; ++j) {
          nans += std::isnan(want(i, j)) ? 1 : 0;
          EXPECT_EQ(std::isnan(s->t(i, j)), std::isnan(want(i, j)))
              << "NaN at L(" << pi << ", " << pj << "), c " << c << ": T(" << i << ", " << j
              << ") = " << s->t(i, j) << ", reference " << want(i, j);
        }
      EXPECT_GT(nans, 0);
      EXPECT_LT(nans, c * c / 2) << "a NaN that reaches most of T shows little";
    }
}

TEST(TrilInverseByColumns, RoundsGiveEveryOffDiagonalBlockOneHalfWarp) {
  using tril_columns::round_job;
  for (int blocks = 1; blocks <= 6; ++blocks) {
    std::vector<int> finished(static_cast<std::size_t>(blocks * blocks), 0);
    for (int d = 1; d < blocks; ++d) {
      std::vector<int> seen(static_cast<std::size_t>(blocks * blocks), 0);
      for (int h = 0; h < tril_columns::round_half_warps(blocks, d); ++h) {
        const tril_columns::BlockJob job = round_job(blocks, d, h);
        if (job.r < 0) continue;
        ASSERT_GE(job.r - job.s, d);
        ASSERT_LT(job.r, blocks);
        ++seen[job.r * blocks + job.s];
        if (job.r - job.s == d) ++finished[job.r * blocks + job.s];
      }
      for (int r = 0; r < blocks; ++r)
        for (int s = 0; s < r; ++s)
          EXPECT_EQ(seen[r * blocks + s], r - s >= d ? 1 : 0) << blocks << " " << d;
    }
    for (int r = 0; r < blocks; ++r)
      for (int s = 0; s < r; ++s) EXPECT_EQ(finished[r * blocks + s], 1);
  }
  EXPECT_EQ(tril_columns::round_half_warps(4, 1), 7);  // 4 warps at N = 64
}

}  // namespace
}  // namespace kcv::glr::gpu::detail
