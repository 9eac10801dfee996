// File: glr/dev/arch_layout_test.cpp
// The host emulation of the tensor-core atoms (glr/arch) and of the operand loaders built on them
// (glr/tiles/mma_tile.cuh), against plain references:
//  * the fragment maps of mma.m16n8k16 (A, B, C/D) place each element of their matrix exactly
//    once over 32 lanes;
//  * each of the four loaders (A row-major, A transposed, B k-major, B n-major) hands every lane,
//    register and half the element the mma fragment table asks for, at an offset inside a larger
//    tile (tiles whose values are their own row and column indices);
//  * mma_acc over all four operand combinations equals a plain integer matrix product exactly
//    (small integers: every sum is exact in fp32), also for a k sub-range and skipped column pairs;
//  * the CTA-wide loops cover each element once with host threads playing warps, and cp.async's
//    emulation copies valid rows and zero-fills the rest; the copies with compile-time trip
//    counts (copy_rows_async_fixed, copy_floats_async_fixed) copy what the loops copy, and
//    copy_block_async each warp's block only, and the copy warps after a kernel's compute warps
//    what the loop copies;
//  * store_rows writes each valid row's pairs once at its row address, and the emulation's named
//    barrier releases a round only when its warps have all arrived;
//  * RowPartials keeps each quad lane's per-row sum in column order and stores it in place;
//  * dot_part sums each thread's 8-element groups of two tiles in element order, every element
//    once;
//  * pack_bf16x2 rounds to nearest even;
//  * exp_approx's host model keeps expf's special values, flushes subnormal results and stays
//    within 1.25·u_f32·|x| + 2 ulp of e^x.
// What this cannot show is that the PTX ISA's tables are what the H200 does: the device check
// (glr/dev/run_on_h200.sh) compares the same kernels with the fp64 reference there.
#include "check/emulator/cuda_shim.hpp"  // first: the CUDA execution model
// (the headers under test come after the shim)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "glr/arch/exp_approx.cuh"
#include "glr/tiles/block_loops.cuh"
#include "glr/tiles/mma_tile.cuh"

namespace kcv::glr::gpu::detail {
namespace {

using arch::Coord;

// Sets threadIdx / blockDim for code that runs as warp `w` of a 128-thread CTA.
struct AsWarp {
  explicit AsWarp(int w, unsigned threads = 128) {
    blockDim = dim3(threads);
    threadIdx = uint3{static_cast<unsigned>(32 * w), 0, 0};
  }
};

template <int R, int C>
std::unique_ptr<SmemBf16<R, C>> tile_of(auto&& value) {
  auto t = std::make_unique<SmemBf16<R, C>>();
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C + 8; ++j)
      *t->ptr(i, j) = __float2bfloat16_rn(j < C ? static_cast<float>(value(i, j)) : -1.0f);
  return t;
}

TEST(FragmentMaps, PlaceEachElementOnce) {
  std::set<std::pair<int, int>> a, b, c;
  for (int l = 0; l < 32; ++l) {
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) {
        const Coord x = arch::a_coord(l, r, h);
        a.insert({x.row, x.col});
      }
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) {
        const Coord x = arch::b_coord(l, r, h);
        b.insert({x.row, x.col});
      }
    for (int i = 0; i < 4; ++i) {
      const Coord x = arch::c_coord(l, i);
      c.insert({x.row, x.col});
    }
  }
  EXPECT_EQ(a.size(), 256u);
  EXPECT_EQ(b.size(), 128u);
  EXPECT_EQ(c.size(), 128u);
  EXPECT_EQ(*a.rbegin(), std::make_pair(15, 15));
  EXPECT_EQ(*b.rbegin(), std::make_pair(15, 7));
  EXPECT_EQ(*c.rbegin(), std::make_pair(15, 7));
}

// Element (lane, reg, half) of a loaded fragment, decoded from the tile of row (or column) indices.
int elem(const arch::Frag<std::uint32_t, 4>& f, int lane, int reg, int half) {
  return static_cast<int>(arch::unpack_bf16(f.r[lane][reg], half));
}
int elem(const arch::FragB& f, int lane, int reg, int half) {
  return static_cast<int>(arch::unpack_bf16(f.r[lane][reg], half));
}

TEST(Loaders, HandEveryLaneTheElementOfTheFragmentTable) {
  AsWarp warp(0);
  const auto rows = tile_of<48, 64>([](int i, int) { return i; });
  const auto cols = tile_of<48, 64>([](int, int j) { return j; });
  const int p0 = 16, q0 = 40;  // tile offsets: rows p0.., columns q0..
  arch::FragA ar, ac;
  load_a_row_major(ar, *rows, p0, q0);
  load_a_row_major(ac, *cols, p0, q0);
  arch::FragA tr, tc;
  load_a_transposed(tr, *rows, q0 - 24, p0);  // A = Sᵀ: A[m][k] = S[p0 + k][q0 − 24 + m]
  load_a_transposed(tc, *cols, q0 - 24, p0);
  for (int l = 0; l < 32; ++l)
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) {
        const Coord x = arch::a_coord(l, r, h);
        EXPECT_EQ(elem(ar, l, r, h), p0 + x.row);
        EXPECT_EQ(elem(ac, l, r, h), q0 + x.col);
        EXPECT_EQ(elem(tr, l, r, h), p0 + x.col);
        EXPECT_EQ(elem(tc, l, r, h), q0 - 24 + x.row);
      }
  arch::FragB kr0, kr1, kc0, kc1, nr0, nr1, nc0, nc1;
  load_b_k_major(kr0, kr1, *rows, p0, q0);  // B[k][n] = S[p0 + k][q0 + n]
  load_b_k_major(kc0, kc1, *cols, p0, q0);
  load_b_n_major(nr0, nr1, *rows, q0 - 8, p0);  // B[k][n] = S[p0 + n][q0 − 8 + k]
  load_b_n_major(nc0, nc1, *cols, q0 - 8, p0);
  for (int l = 0; l < 32; ++l)
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) {
        const Coord y = arch::b_coord(l, r, h);  // (k, n)
        EXPECT_EQ(elem(kr0, l, r, h), p0 + y.row);
        EXPECT_EQ(elem(kc0, l, r, h), q0 + y.col);
        EXPECT_EQ(elem(kr1, l, r, h), p0 + y.row);
        EXPECT_EQ(elem(kc1, l, r, h), q0 + 8 + y.col);
        EXPECT_EQ(elem(nr0, l, r, h), p0 + y.col);
        EXPECT_EQ(elem(nc0, l, r, h), q0 - 8 + y.row);
        EXPECT_EQ(elem(nr1, l, r, h), p0 + 8 + y.col);
        EXPECT_EQ(elem(nc1, l, r, h), q0 - 8 + y.row);
      }
}

// Plain C = A·B over k in [16·k0, 16·k1), only the first n_pairs 16-column pairs.
std::vector<int> plain(const std::vector<int>& a, const std::vector<int>& b, int m, int n, int kd,
                       int k0, int k1, int n_pairs) {
  std::vector<int> c(static_cast<std::size_t>(m * n), 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n && j < 16 * n_pairs; ++j)
      for (int k = 16 * k0; k < 16 * k1; ++k) c[i * n + j] += a[i * kd + k] * b[k * n + j];
  return c;
}

template <AStore kA, BStore kB, int N = 32>
void check_product(int k0, int k1, int n_pairs) {
  constexpr int M = 32, K = 48;
  std::mt19937 rng(7 + k0 + 3 * n_pairs);
  std::uniform_int_distribution<int> dist(-4, 4);
  std::vector<int> a(M * K), b(K * N);
  for (int& x : a) x = dist(rng);
  for (int& x : b) x = dist(rng);
  // The operands stored as the enumerators say, the m (n) index offset inside the tile, k from 0.
  const auto sa = kA == AStore::kRowMajor
                      ? tile_of<64, 64>([&](int i, int j) {
                          return i >= 16 && i < 16 + M && j < K ? a[(i - 16) * K + j] : 0;
                        })
                      : tile_of<64, 64>([&](int i, int j) {
                          return i < K && j >= 8 && j < 8 + M ? a[(j - 8) * K + i] : 0;
                        });
  const auto sb = kB == BStore::kKMajor
                      ? tile_of<64, 64>([&](int i, int j) {
                          return i < K && j >= 8 && j < 8 + N ? b[i * N + j - 8] : 0;
                        })
                      : tile_of<64, 64>([&](int i, int j) {
                          return i >= 16 && i < 16 + N && j < K ? b[j * N + i - 16] : 0;
                        });
  AsWarp warp(0);
  AccTile<M, N> acc;
  zero(acc);
  const int m0 = kA == AStore::kRowMajor ? 16 : 8;
  const int n0 = kB == BStore::kKMajor ? 8 : 16;
  mma_acc<kA, kB>(acc, *sa, m0, *sb, n0, k0, k1, n_pairs);
  const std::vector<int> want = plain(a, b, M, N, K, k0, k1, n_pairs);
  int checked = 0;
  for_each_pair(acc, [&](int i, int j, float& x0, float& x1) {
    EXPECT_EQ(x0, static_cast<float>(want[i * N + j])) << i << "," << j;
    EXPECT_EQ(x1, static_cast<float>(want[i * N + j + 1])) << i << "," << j + 1;
    checked += 2;
  });
  EXPECT_EQ(checked, M * N);
}

TEST(MmaAcc, EqualsPlainProductForEveryOperandStorage) {
  check_product<AStore::kRowMajor, BStore::kKMajor>(0, 3, 2);
  check_product<AStore::kRowMajor, BStore::kNMajor>(0, 3, 2);
  check_product<AStore::kTransposed, BStore::kKMajor>(0, 3, 2);
  check_product<AStore::kTransposed, BStore::kNMajor>(0, 3, 2);
}

TEST(MmaAcc, TakesAKRangeAndSkipsColumnPairs) {
  check_product<AStore::kRowMajor, BStore::kKMajor>(1, 3, 1);
  check_product<AStore::kTransposed, BStore::kNMajor>(2, 3, 1);
}

// An odd last n-tile (N = 8, 24) is loaded alone (ldmatrix.x2) and counts as a pair of its own.
TEST(MmaAcc, TakesAnOddLastNTileAlone) {
  check_product<AStore::kRowMajor, BStore::kKMajor, 8>(0, 3, 1);
  check_product<AStore::kRowMajor, BStore::kNMajor, 8>(0, 3, 1);
  check_product<AStore::kTransposed, BStore::kKMajor, 8>(1, 3, 1);
  check_product<AStore::kTransposed, BStore::kNMajor, 8>(0, 2, 1);
  check_product<AStore::kRowMajor, BStore::kKMajor, 24>(0, 3, 2);
  check_product<AStore::kTransposed, BStore::kNMajor, 24>(0, 3, 2);
  check_product<AStore::kRowMajor, BStore::kKMajor, 24>(0, 3, 1);  // the odd tile skipped
  check_product<AStore::kRowMajor, BStore::kNMajor, 8>(0, 3, 0);   // nothing
}

// A lower-triangular A (rows 16..31 of the tile, k 0..31) times B with a NaN in row 21 of the
// diagonal k-step, over N columns: rows i ≥ 21 of the output column see it, rows i < 21 stay
// finite and equal the plain product over j ≤ i; with B finite the triangular product is
// mma_acc's, bit for bit.
template <int N>
void check_lower_triangle_with_a_nan() {
  const auto a =
      tile_of<64, 64>([](int i, int j) { return j <= i && j < 32 ? 1 + (i + j) % 3 : 0; });
  const auto b = tile_of<64, 64>([](int i, int j) { return (i * 7 + j) % 5 - 2; });
  AsWarp warp(0);
  AccTile<16, N> plain_acc, tri;
  zero(plain_acc);
  zero(tri);
  mma_acc<AStore::kRowMajor, BStore::kKMajor>(plain_acc, *a, 16, *b, 0, 0, 2);
  mma_acc_triangular<Triangle::kLower, AStore::kRowMajor, BStore::kKMajor>(tri, *a, 16, *b, 0, 0,
                                                                           2);
  zip(plain_acc, tri, [](float& x, float y) { EXPECT_EQ(x, y); });
  *b->ptr(21, 5) = __float2bfloat16_rn(NAN);
  zero(tri);
  mma_acc_triangular<Triangle::kLower, AStore::kRowMajor, BStore::kKMajor>(tri, *a, 16, *b, 0, 0,
                                                                           2);
  for_each_pair(tri, [&](int il, int j, float& x0, float& x1) {
    const int i = 16 + il;
    for (const auto& [col, x] : {std::pair{j, x0}, std::pair{j + 1, x1}}) {
      if (col == 5 && i >= 21) {
        EXPECT_TRUE(std::isnan(x)) << i << "," << col;
        continue;
      }
      float want = 0;
      for (int k = 0; k <= i && k < 32; ++k) want += a->at(i, k) * b->at(k, col);
      EXPECT_EQ(x, want) << i << "," << col;
    }
  });
}

TEST(MmaAccTriangular, ANonFiniteBRowReachesOnlyTheRowsTheTriangleKeeps) {
  check_lower_triangle_with_a_nan<32>();
}

// The same at 8 and 24 columns (an n-tile loaded alone).
TEST(MmaAccTriangular, AnOddLastNTileToo) {
  check_lower_triangle_with_a_nan<8>();
  check_lower_triangle_with_a_nan<24>();
}

// The other storages: A transposed (an upper triangle, j ≥ i kept) and B stored [n][k]; a NaN in
// B(k = 19, n = 3), stored at (3, 19), reaches rows i ≤ 19 of column 3 only.
TEST(MmaAccTriangular, AnUpperTriangleWithBStoredByColumns) {
  // A(i, j) = at(j, i), nonzero for j ≥ i; B(k, n) = at(n, k).
  const auto a =
      tile_of<64, 64>([](int k, int m) { return k >= m && k < 48 ? 1 + (k + m) % 3 : 0; });
  const auto b = tile_of<64, 64>([](int n, int k) { return (n * 5 + k) % 7 - 3; });
  AsWarp warp(0);
  AccTile<16, 32> plain_acc, tri;
  zero(plain_acc);
  zero(tri);
  mma_acc<AStore::kTransposed, BStore::kNMajor>(plain_acc, *a, 16, *b, 0, 1, 3);
  mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kNMajor>(tri, *a, 16, *b, 0, 1,
                                                                             3);
  zip(plain_acc, tri, [](float& x, float y) { EXPECT_EQ(x, y); });
  *b->ptr(3, 19) = __float2bfloat16_rn(NAN);
  zero(tri);
  mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kNMajor>(tri, *a, 16, *b, 0, 1,
                                                                             3);
  for_each_pair(tri, [&](int il, int j, float& x0, float& x1) {
    const int i = 16 + il;
    for (const auto& [col, x] : {std::pair{j, x0}, std::pair{j + 1, x1}}) {
      if (col == 3 && i <= 19) {
        EXPECT_TRUE(std::isnan(x)) << i << "," << col;
        continue;
      }
      float want = 0;
      for (int k = std::max(i, 16); k < 48; ++k) want += a->at(k, i) * b->at(col, k);
      EXPECT_EQ(x, want) << i << "," << col;
    }
  });
}

// RowPartials over two accumulators of different widths, as a warp adds pairs from for_each_pair:
// slot q of row i is the sum, in column order, of the pairs (i, 8n + 2q), (i, 8n + 2q + 1) of the
// first tile, then of the second (fp32, so the order shows in the bits); store_partials writes
// the warp's 16 rows at r0 and nothing else.
TEST(RowPartials, SumEachQuadLanesPairsInColumnOrder) {
  const auto value = [](int t, int i, int j) {
    return 1.0f + 0x1p-20f * ((t * 977 + i * 131 + j * 7) % 1000);
  };
  AsWarp warp(1);
  AccTile<16, 128> wide;
  AccTile<16, 64> narrow;
  for_each_pair(wide, [&](int i, int j, float& x0, float& x1) {
    x0 = value(0, i, j);
    x1 = value(0, i, j + 1);
  });
  for_each_pair(narrow, [&](int i, int j, float& x0, float& x1) {
    x0 = value(1, i, j);
    x1 = value(1, i, j + 1);
  });
  RowPartials part;
  zero(part);
  for_each_pair(wide, [&](int i, int j, float& x0, float& x1) { add_to_row(part, i, j, x0 + x1); });
  for_each_pair(narrow,
                [&](int i, int j, float& x0, float& x1) { add_to_row(part, i, j, x0 + x1); });
  float got[48][4];
  std::fill(&got[0][0], &got[0][0] + 48 * 4, -1.0f);
  store_partials(part, got, 16);
  for (int i = 0; i < 48; ++i)
    for (int q = 0; q < 4; ++q) {
      float want = -1.0f;
      if (i >= 16 && i < 32) {
        want = 0.0f;
        for (int n = 0; n < 16; ++n)
          want += value(0, i - 16, 8 * n + 2 * q) + value(0, i - 16, 8 * n + 2 * q + 1);
        for (int n = 0; n < 8; ++n)
          want += value(1, i - 16, 8 * n + 2 * q) + value(1, i - 16, 8 * n + 2 * q + 1);
      }
      EXPECT_EQ(got[i][q], want) << i << "," << q;
    }
}

// dot_part over two 128×128 tiles (grad_kernel's S_e and dS) with 128 threads: thread t's part is,
// bit for bit, the plain fp32 sum over the 8-element groups t, t + 128, … in row-major element
// order (values whose sums round, so the order shows in the bits; the padding columns hold NaN,
// so a read past a row shows); with small integers, where every sum is exact, the parts add up
// to ⟨A, B⟩ (each element counted once).
TEST(DotPart, SumsEachThreadsGroupsInElementOrder) {
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> av(128 * 128), bv(128 * 128);
  for (float& x : av) x = unit(rng);
  for (float& x : bv) x = unit(rng);
  const auto filled = [](const std::vector<float>& v) {
    auto t = std::make_unique<SmemBf16<128, 128>>();
    for (int i = 0; i < 128; ++i)
      for (int j = 0; j < 136; ++j)
        *t->ptr(i, j) = __float2bfloat16_rn(j < 128 ? v[i * 128 + j] : std::nanf(""));
    return t;
  };
  const auto a = filled(av), b = filled(bv);
  for (int t = 0; t < 128; ++t) {
    float want = 0.0f;
    for (int g = t; g < 128 * 128 / 8; g += 128)
      for (int k = 0; k < 8; ++k) {
        const int i = 8 * g + k;
        want += a->at(i / 128, i % 128) * b->at(i / 128, i % 128);
      }
    const float got = dot_part<128>(*a, *b, t);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << t << ": " << got << " vs " << want;
  }
  const auto ai = tile_of<128, 128>([](int i, int j) { return (i * 7 + j * 3) % 9 - 4; });
  const auto bi = tile_of<128, 128>([](int i, int j) { return (i * 5 + j * 11) % 7 - 3; });
  double whole = 0.0, parts = 0.0;
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 128; ++j) whole += ai->at(i, j) * bi->at(i, j);
  for (int t = 0; t < 128; ++t) parts += dot_part<128>(*ai, *bi, t);
  EXPECT_EQ(parts, whole);
}

TEST(CtaLoops, HostThreadsPlayingWarpsCoverEachElementOnce) {
  check::emulator::lanes_per_host_thread = 32;
  std::vector<int> seen_cta(1000, 0), seen_1d(1000, 0), seen_2d(40 * 25, 0);
  for (int w = 0; w < 4; ++w) {
    AsWarp warp(w);
    arch::cta_for(1000, [&](int i) { ++seen_cta[i]; });
    for_each_1d(1000, [&](int i) { ++seen_1d[i]; });
    for_each_2d(40, 25, [&](int i, int j) { ++seen_2d[i * 25 + j]; });
  }
  check::emulator::lanes_per_host_thread = 1;
  for (int x : seen_cta) EXPECT_EQ(x, 1);
  for (int x : seen_1d) EXPECT_EQ(x, 1);
  for (int x : seen_2d) EXPECT_EQ(x, 1);
}

// Lands the calling thread's copies (the emulation holds a copy's bytes until the wait for its
// group).
void land_copies() {
  arch::cp_async_commit();
  arch::cp_async_wait<0>();
}

// The emulation lands a group at the wait that retires it, not before: a tile read before its
// wait reads NaN; wait<1> lands all but the newest group.
TEST(CopyRowsAsync, GroupsLandAtTheirWait) {
  std::vector<bf16> src(64 * 128, __float2bfloat16_rn(3.0f));
  auto first = std::make_unique<SmemBf16<64, 128>>();
  auto second = std::make_unique<SmemBf16<64, 128>>();
  for (void* t : {static_cast<void*>(first.get()), static_cast<void*>(second.get())})
    std::memset(t, 0xff, sizeof *first);
  const auto issue = [&](SmemBf16<64, 128>& dst) {
    for (int w = 0; w < 4; ++w) {
      AsWarp warp(w);
      copy_rows_async(dst, src.data(), 128, 64);
    }
    arch::cp_async_commit();
  };
  issue(*first);
  issue(*second);
  EXPECT_TRUE(std::isnan(first->at(5, 7)));
  arch::cp_async_wait<1>();
  EXPECT_EQ(first->at(5, 7), 3.0f);
  EXPECT_EQ(first->at(63, 127), 3.0f);
  EXPECT_TRUE(std::isnan(second->at(0, 0)));
  arch::cp_async_wait<0>();
  EXPECT_EQ(second->at(63, 127), 3.0f);
  // A tile being copied again reads NaN from the copy's issue on, not the values it held, and a
  // copy never waited for does not land at all.
  for (int w = 0; w < 4; ++w) {
    AsWarp warp(w);
    copy_rows_async(*first, src.data(), 128, 1);  // row 0 copied, rows past 0 zero-filled
  }
  EXPECT_TRUE(std::isnan(first->at(0, 0)));
  EXPECT_TRUE(std::isnan(first->at(5, 7)));
  arch::emulated_copies::drop_pending();
  arch::cp_async_wait<0>();
  EXPECT_TRUE(std::isnan(first->at(5, 7)));
}

TEST(CopyRowsAsync, CopiesValidRowsAndZeroFillsTheRest) {
  std::vector<bf16> src(40 * 200);
  for (std::size_t i = 0; i < src.size(); ++i)
    src[i] = __float2bfloat16_rn(static_cast<float>(i % 251) + 1.0f);
  auto dst = std::make_unique<SmemBf16<64, 128>>();
  std::memset(static_cast<void*>(dst.get()), 0xff, sizeof *dst);
  for (int w = 0; w < 4; ++w) {
    AsWarp warp(w);
    copy_rows_async(*dst, src.data() + 8, 200, 37);
  }
  land_copies();
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 128; ++j) {
      const float want = i < 37 ? static_cast<float>((i * 200 + 8 + j) % 251) + 1.0f : 0.0f;
      EXPECT_EQ(dst->at(i, j), want) << i << "," << j;
    }
}

// copy_rows_async_fixed<kThreads, kFirstWarp> into a 64 × C tile, from src + offset, equals the
// loop to kThreads byte for byte (the unwritten padding included), over valid row counts 1, 37,
// 64; the copying threads are the kThreads from warp kFirstWarp on (a kernel's copy warps, after
// its compute warps, where kFirstWarp > 0).
template <int kThreads, int C, int kFirstWarp = 0>
void check_fixed_copy(const std::vector<bf16>& src, int offset) {
  for (int valid : {1, 37, 64}) {
    auto want = std::make_unique<SmemBf16<64, C>>();
    auto got = std::make_unique<SmemBf16<64, C>>();
    for (void* t : {static_cast<void*>(want.get()), static_cast<void*>(got.get())})
      std::memset(t, 0xff, sizeof *want);
    for (int w = 0; w < kThreads / 32; ++w) {
      AsWarp warp(w, kThreads);
      copy_rows_async(*want, src.data() + offset, 200, valid);
    }
    land_copies();
    for (int w = kFirstWarp; w < kFirstWarp + kThreads / 32; ++w) {
      AsWarp warp(w, 32 * kFirstWarp + kThreads);
      copy_rows_async_fixed<kThreads, kFirstWarp>(*got, src.data() + offset, 200, valid);
    }
    land_copies();
    EXPECT_EQ(std::memcmp(want.get(), got.get(), sizeof *want), 0) << C << " " << valid;
  }
}

TEST(CopyRowsAsync, CopyWarpsAfterTheComputeWarpsCopyTheSameAsTheLoop) {
  std::vector<bf16> src(70 * 200);
  for (std::size_t i = 0; i < src.size(); ++i)
    src[i] = __float2bfloat16_rn(static_cast<float>(i % 251) + 1.0f);
  check_fixed_copy<64, 128, 8>(src, 8);  // the state pass's two copy warps after eight
  check_fixed_copy<64, 32, 8>(src, 40);
  check_fixed_copy<32, 128, 16>(src, 8);  // the dH scan's one copy warp after sixteen
  check_fixed_copy<32, 64, 16>(src, 24);
  std::vector<float> f(160);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i) + 0.5f;
  alignas(16) float dst[128];
  std::fill(std::begin(dst), std::end(dst), -1.0f);
  for (int w = 8; w < 10; ++w) {
    AsWarp warp(w, 320);
    copy_floats_async_fixed<64, 128, 8>(dst, f.data());
  }
  land_copies();
  for (int i = 0; i < 128; ++i) EXPECT_EQ(dst[i], f[i]) << i;
}

TEST(CopyRowsAsync, FixedThreadCountCopiesTheSameAsTheLoop) {
  std::vector<bf16> src(70 * 200);
  for (std::size_t i = 0; i < src.size(); ++i)
    src[i] = __float2bfloat16_rn(static_cast<float>(i % 251) + 1.0f);
  check_fixed_copy<128, 128>(src, 8);
  check_fixed_copy<128, 16>(src, 24);
  // 16 warps: a 64 × 128 tile in two steps a thread, and a 64 × 32 tile (256 pieces) by threads
  // 0..255 alone, one piece each.
  check_fixed_copy<512, 128>(src, 8);
  check_fixed_copy<512, 32>(src, 40);
  std::vector<float> f(160);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i) + 0.5f;
  alignas(16) float dst[128];
  std::fill(std::begin(dst), std::end(dst), -1.0f);
  for (int w = 0; w < 4; ++w) {
    AsWarp warp(w);
    copy_floats_async_fixed<128, 128>(dst, f.data());
  }
  land_copies();
  for (int i = 0; i < 128; ++i) EXPECT_EQ(dst[i], f[i]) << i;
}

// Each warp copies its own block: rows r0 + 16w.., columns c0..c0 + kCols, valid rows only.
TEST(CopyBlockAsync, CopiesEachWarpsBlockAndZeroFillsPastTheValidRows) {
  std::vector<bf16> src(70 * 200);
  for (std::size_t i = 0; i < src.size(); ++i)
    src[i] = __float2bfloat16_rn(static_cast<float>(i % 251) + 1.0f);
  const auto value = [&](int i, int j) {
    return static_cast<float>((i * 200 + 8 + j) % 251) + 1.0f;
  };
  for (int valid : {5, 37, 64}) {
    auto k = std::make_unique<SmemBf16<64, 128>>();   // rows 16w..16w+15, all columns
    auto a = std::make_unique<SmemBf16<64, 64>>();    // rows 16w..63, columns 16w..16w+15
    auto wt = std::make_unique<SmemBf16<64, 128>>();  // all rows, columns 32w..32w+31
    for (auto* t : {static_cast<void*>(k.get()), static_cast<void*>(wt.get())})
      std::memset(t, 0xff, sizeof *k);
    std::memset(static_cast<void*>(a.get()), 0xff, sizeof *a);
    for (int w = 0; w < 4; ++w) {
      AsWarp warp(w);
      copy_block_async<16, 128>(*k, src.data() + 8, 200, 16 * w, 16, 0, valid);
      copy_block_async<64, 16>(*a, src.data() + 8, 200, 16 * w, 64 - 16 * w, 16 * w, valid);
      copy_block_async<64, 32>(*wt, src.data() + 8, 200, 0, 64, 32 * w, valid);
    }
    land_copies();
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 128; ++j) {
        const float want = i < valid ? value(i, j) : 0.0f;
        EXPECT_EQ(k->at(i, j), want) << valid << ": " << i << "," << j;
        EXPECT_EQ(wt->at(i, j), want) << valid << ": " << i << "," << j;
        if (j < 64) {
          const bool copied = j / 16 <= i / 16;  // column block w at and below the diagonal
          if (copied)
            EXPECT_EQ(a->at(i, j), want) << valid << ": " << i << "," << j;
          else
            EXPECT_TRUE(std::isnan(a->at(i, j))) << valid << ": " << i << "," << j;
        }
      }
  }
}

// store_rows writes element (i, j) of a warp's 16 × N tile at out + (r0 + i)·stride + j for the
// rows r0 + i < valid, each once, and nothing else.
template <int N>
void check_store_rows(int r0, int valid) {
  AsWarp warp(0);
  AccTile<16, N> t;
  for_each_pair(t, [](int i, int j, float& x0, float& x1) {
    x0 = static_cast<float>(100 * i + j);
    x1 = static_cast<float>(100 * i + j + 1);
  });
  constexpr int kStride = N + 24;
  std::vector<float> out(static_cast<std::size_t>(64 * kStride), -1.0f);
  std::vector<int> writes(out.size(), 0);
  store_rows(t, out.data(), kStride, r0, valid, [&](float* at, float x0, float x1) {
    const std::size_t k = static_cast<std::size_t>(at - out.data());
    out[k] = x0;
    out[k + 1] = x1;
    ++writes[k];
    ++writes[k + 1];
  });
  for (int r = 0; r < 64; ++r)
    for (int j = 0; j < kStride; ++j) {
      const std::size_t k = static_cast<std::size_t>(r * kStride + j);
      const bool kept = r >= r0 && r < r0 + 16 && r < valid && j < N;
      EXPECT_EQ(writes[k], kept ? 1 : 0) << r << "," << j;
      EXPECT_EQ(out[k], kept ? static_cast<float>(100 * (r - r0) + j) : -1.0f) << r << "," << j;
    }
}

TEST(StoreRows, WritesEachValidRowsPairsOnceAtItsRowAddress) {
  check_store_rows<32>(16, 64);
  check_store_rows<32>(48, 53);  // a ragged chunk: rows 53.. of the block left out
  check_store_rows<8>(0, 9);     // only the lanes' first rows and row 8
  check_store_rows<16>(32, 32);  // no row valid
}

// arch::named_barrier_sync in the emulation: host threads playing 3 of a CTA's 4 warps meet at
// barrier 1 round after round (each sees all three arrivals of its round) while the fourth runs
// on without it.
TEST(NamedBarrier, ReleasesTheWarpsOfEachRoundWhenAllHaveArrived) {
  namespace emu = check::emulator;
  std::barrier<> cta(4);
  emu::cta_barrier = &cta;
  emu::lanes_per_host_thread = 32;
  std::atomic<int> arrived{0};
  std::atomic<bool> early{false};
  std::vector<std::thread> warps;
  for (int w = 0; w < 4; ++w)
    warps.emplace_back([&, w] {
      if (w == 3) return;  // not one of the barrier's warps
      for (int round = 1; round <= 20; ++round) {
        arrived.fetch_add(1);
        arch::named_barrier_sync(1, 96);
        if (arrived.load() < 3 * round) early = true;
        arch::named_barrier_sync(1, 96);  // no warp starts the next round before all read
      }
    });
  for (std::thread& t : warps) t.join();
  emu::cta_barrier = nullptr;
  emu::lanes_per_host_thread = 1;
  EXPECT_FALSE(early.load());
  EXPECT_EQ(arrived.load(), 60);
}

TEST(Bf16, PackRoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even mantissa, 1.
  // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to 1 + 2^-6.
  const std::uint32_t p = arch::pack_bf16x2(1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f);
  EXPECT_EQ(arch::unpack_bf16(p, 0), 1.0f);
  EXPECT_EQ(arch::unpack_bf16(p, 1), 1.0f + 0x1p-6f);
  EXPECT_EQ(p & 0xffffu, 0x3f80u);
}

TEST(ExpApprox, KeepsSpecialValuesAndFlushesSubnormalResults) {
  EXPECT_EQ(arch::exp_approx(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(arch::exp_approx(std::nanf(""))));
  EXPECT_EQ(arch::exp_approx(INFINITY), INFINITY);
  EXPECT_EQ(arch::exp_approx(-INFINITY), 0.0f);
  EXPECT_EQ(arch::exp_approx(100.0f), INFINITY);  // e^100 > FLT_MAX, as expf
  EXPECT_EQ(arch::exp_approx(-100.0f), 0.0f);     // e^-100 ≈ 3.7e-44 is subnormal: flushed
  EXPECT_GT(arch::exp_approx(-87.0f), 0.0f);      // e^-87 ≈ 1.6e-38 is normal
}

TEST(ExpApprox, StaysWithinTheProductsRoundingAndTwoUlpOfE) {
  // The relative error that glr/arch/exp_approx.cuh states: 1.25·u_f32·|x| from fl(x·log2 e)
  // (the product's rounding and log2 e's in fp32), 2 ulp (2^-22) from the exponential; the host
  // model has the first and half an ulp of the second.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> draw(-80.0f, 80.0f);
  double worst = 0;
  for (int n = 0; n < 200000; ++n) {
    const float x = n < 2000 ? -20.0f + 0.02f * static_cast<float>(n) : draw(rng);
    const double exact = std::exp(static_cast<double>(x));
    const double rel = std::fabs(arch::exp_approx(x) - exact) / exact;
    const double allowed = 1.25 * 0x1p-24 * std::fabs(x) + 0x1p-22;
    ASSERT_LE(rel, allowed) << "x = " << x;
    worst = std::max(worst, rel / allowed);
  }
  EXPECT_GT(worst, 0.1);  // the product's rounding shows: the test can see an error of that size
}

}  // namespace
}  // namespace kcv::glr::gpu::detail
