// File: glr/dev/wgmma_layout_test.cpp
// The host emulation of glr/arch/wgmma.cuh against plain references:
//  * sw128_offset places every element of a [64][128] tile once, inside the tile, each 16-byte
//    piece's 8 elements contiguous, and the XOR only within a row's 128 bytes;
//  * the address the emulation reads for element (i, k) of k-step s through a descriptor is the
//    one sw128_offset gives: (i, 16s + k) for Major::kK (sw128_desc_k), (16s + k, c0 + i) for
//    Major::kMN (sw128_desc_mn): the tile writer's layout and the descriptor's address arithmetic
//    name the same bytes;
//  * D's fragment map places each element of a 64 × N tile once over 4 warps, 32 lanes;
//  * eight accumulated k-steps of wgmma_bf16 equal a plain integer product exactly for N = 16, 32,
//    64 and both majors of A and of B (kMN at column offsets inside and across panels), with
//    operands written through sw128_offset;
//  * D is NaN between issue and wait, an operand written before the wait changes the product, a
//    product issued without accumulate ignores D's old values, and drop_pending forgets.
// What this cannot show is that the PTX ISA's descriptor and swizzle are what the H200 does:
// glr_dev_check's wgmma check (device_check_wgmma.cu) runs the same products on the device.
#include "check/emulator/cuda_shim.hpp"  // first: the CUDA execution model
// (the header under test comes after the shim)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "glr/arch/wgmma.cuh"

namespace kcv::glr::arch {
namespace {

struct AsWarp {
  explicit AsWarp(int w) {
    blockDim = dim3(128);
    threadIdx = uint3{static_cast<unsigned>(32 * w), 0, 0};
  }
};

/// Emulated shared memory for one test: 128 KB, 1024-byte aligned, set as the CTA's.
struct Smem {
  alignas(1024) std::byte bytes[128 * 1024];
  Smem() {
    std::memset(bytes, 0xff, sizeof bytes);
    emulated_shared_memory = bytes;
  }
  ~Smem() {
    emulated_wgmma::drop_pending();
    emulated_shared_memory = nullptr;
  }
  void put(int at, int rows, int r, int k, float v) {
    const std::uint16_t b = bf16_bits(__float2bfloat16_rn(v));
    std::memcpy(bytes + at + sw128_offset(rows, r, k), &b, sizeof b);
  }
};

TEST(Sw128Layout, PlacesEachElementOnceWithContiguousPieces) {
  std::set<int> seen;
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < 128; ++k) {
      const int at = sw128_offset(64, r, k);
      ASSERT_GE(at, 0);
      ASSERT_LT(at, 64 * 128 * 2);
      ASSERT_EQ(at % 2, 0);
      seen.insert(at);
      if (k % 8 != 0) {
        EXPECT_EQ(at, sw128_offset(64, r, k - 1) + 2);
      }
      // the swizzle moves a piece within its row's 128 bytes of its panel
      EXPECT_EQ(at / 128, (k / 64) * 64 + r);
    }
  EXPECT_EQ(seen.size(), 64u * 128u);
  // row r's piece 0 is at piece r mod 8: the XOR is not the identity
  EXPECT_EQ(sw128_offset(64, 3, 0) % 128, 3 * 16);
}

TEST(Sw128Desc, NamesTheBytesTheLayoutWritesForBothMajors) {
  Smem smem;
  for (const int rows : {16, 32, 64, 128})
    for (const int at : {0, 16384})
      for (int step = 0; step < rows / 16; ++step) {
        // kK: a [rows][128] tile, i its rows, k its columns 16·step …
        const WgmmaDesc d = sw128_desc_k(smem.bytes + at, rows, step);
        EXPECT_EQ((d.bits >> 62) & 3u, 1u);               // 128-byte swizzle
        EXPECT_EQ((d.bits >> 32) & 0x3fffu, 1024u >> 4);  // 8 rows apart
        EXPECT_EQ((d.bits >> 49) & 7u, 0u);               // base offset
        for (int i = 0; i < rows; ++i)
          for (int k = 0; k < 16; ++k)
            ASSERT_EQ(emulated_wgmma::element_address(d.bits, Major::kK, i, k),
                      static_cast<std::uint32_t>(at + sw128_offset(rows, i, 16 * step + k)))
                << "kK rows " << rows << " step " << step << " i " << i << " k " << k;
        // kMN: a [rows][128] tile, k its rows 16·step …, i its columns c0 …
        for (const int c0 : {0, 32, 64}) {
          const WgmmaDesc m = sw128_desc_mn(smem.bytes + at, rows, step, c0);
          // from a start inside a panel the operand ends at the panel's end (sw128_desc_mn)
          const int extent = c0 % 64 == 0 ? 128 - c0 : 64 - c0 % 64;
          for (int i = 0; i < extent; ++i)
            for (int k = 0; k < 16; ++k)
              ASSERT_EQ(emulated_wgmma::element_address(m.bits, Major::kMN, i, k),
                        static_cast<std::uint32_t>(at + sw128_offset(rows, 16 * step + k, c0 + i)))
                  << "kMN rows " << rows << " step " << step << " c0 " << c0 << " i " << i << " k "
                  << k;
        }
      }
}

TEST(WgmmaFragment, PlacesEachElementOnce) {
  for (const int n : {8, 16, 32, 64}) {
    std::set<std::pair<int, int>> d;
    for (int w = 0; w < 4; ++w)
      for (int l = 0; l < 32; ++l)
        for (int reg = 0; reg < n / 2; ++reg) {
          const Coord x = wg_d_coord(w, l, reg);
          EXPECT_EQ(x.row / 16, w);
          d.insert({x.row, x.col});
        }
    EXPECT_EQ(d.size(), static_cast<std::size_t>(64 * n));
    EXPECT_EQ(*d.rbegin(), std::make_pair(63, n - 1));
  }
}

// A (64 × 128, m × k) and B (128 × n, k × n) of small integers, so every sum is exact in fp32.
float a_value(int m, int k) { return static_cast<float>((m * 7 + k * 3) % 11 - 5); }
float b_value(int k, int n) { return static_cast<float>((n * 5 + k) % 9 - 4); }
constexpr int kA = 0;      // A's tile: [64][128] (kK) or [128][128] (kMN, m at columns a_c0 …)
constexpr int kB = 32768;  // B's tile: [n][128] (kK) or [128][128] (kMN, n at columns b_c0 …)

struct Case {
  Major a_major = Major::kK;
  Major b_major = Major::kK;
  int a_c0 = 0;
  int b_c0 = 0;
};

template <int N>
void write_operands(Smem& smem, const Case& c) {
  for (int k = 0; k < 128; ++k) {
    for (int m = 0; m < 64; ++m)
      if (c.a_major == Major::kK)
        smem.put(kA, 64, m, k, a_value(m, k));
      else
        smem.put(kA, 128, k, c.a_c0 + m, a_value(m, k));
    for (int n = 0; n < N; ++n)
      if (c.b_major == Major::kK)
        smem.put(kB, N, n, k, b_value(k, n));
      else
        smem.put(kB, 128, k, c.b_c0 + n, b_value(k, n));
  }
}

template <int N, Major kAM, Major kBM>
void issue_steps(Smem& smem, const Case& c, FragWg<N>& d, int warp, int first, int last) {
  AsWarp as(warp);
  for (int step = first; step < last; ++step) {
    const WgmmaDesc a = kAM == Major::kK ? sw128_desc_k(smem.bytes + kA, 64, step)
                                         : sw128_desc_mn(smem.bytes + kA, 128, step, c.a_c0);
    const WgmmaDesc b = kBM == Major::kK ? sw128_desc_k(smem.bytes + kB, N, step)
                                         : sw128_desc_mn(smem.bytes + kB, 128, step, c.b_c0);
    wgmma_bf16<N, kAM, kBM>(d, a, b, step > first);
  }
  wgmma_commit();
}

float plain(int m, int n, int first = 0, int last = 8) {
  float want = 0;
  for (int k = 16 * first; k < 16 * last; ++k) want += a_value(m, k) * b_value(k, n);
  return want;
}

template <int N, Major kAM, Major kBM>
void expect_plain_product(Case c) {
  c.a_major = kAM;
  c.b_major = kBM;
  Smem smem;
  write_operands<N>(smem, c);
  FragWg<N> d[4];
  for (int w = 0; w < 4; ++w) issue_steps<N, kAM, kBM>(smem, c, d[w], w, 0, 8);
  wgmma_wait<0>();
  for (int w = 0; w < 4; ++w)
    for (int l = 0; l < 32; ++l)
      for (int reg = 0; reg < N / 2; ++reg) {
        const Coord x = wg_d_coord(w, l, reg);
        ASSERT_EQ(d[w][reg / 4].r[l][reg % 4], plain(x.row, x.col))
            << "N " << N << " A " << (kAM == Major::kK ? "kK" : "kMN") << " B "
            << (kBM == Major::kK ? "kK" : "kMN") << " a_c0 " << c.a_c0 << " b_c0 " << c.b_c0
            << " row " << x.row << " col " << x.col;
      }
}

TEST(WgmmaBf16, EqualsPlainProductForEveryOperandMajor) {
  expect_plain_product<16, Major::kK, Major::kK>({});
  expect_plain_product<32, Major::kK, Major::kK>({});
  expect_plain_product<64, Major::kK, Major::kK>({});
  for (const int a_c0 : {0, 64}) {
    expect_plain_product<32, Major::kMN, Major::kK>({.a_c0 = a_c0});
    expect_plain_product<64, Major::kMN, Major::kMN>({.a_c0 = a_c0, .b_c0 = 64});
  }
  for (const int b_c0 : {0, 32, 64, 96}) {
    expect_plain_product<16, Major::kK, Major::kMN>({.b_c0 = b_c0});
    expect_plain_product<32, Major::kK, Major::kMN>({.b_c0 = b_c0});
  }
  expect_plain_product<64, Major::kK, Major::kMN>({.b_c0 = 64});
  for (const int b_c0 : {8, 56}) {  // the dH scan's: 8 columns inside a panel
    expect_plain_product<8, Major::kK, Major::kMN>({.b_c0 = b_c0});
    expect_plain_product<8, Major::kMN, Major::kMN>({.a_c0 = 64, .b_c0 = b_c0});
  }
  for (const int b_c0 : {16, 48}) {  // the state pass's: 16 columns inside a panel
    expect_plain_product<16, Major::kK, Major::kMN>({.b_c0 = b_c0});
    for (const int a_c0 : {0, 64})
      expect_plain_product<16, Major::kMN, Major::kMN>({.a_c0 = a_c0, .b_c0 = b_c0});
  }
}

TEST(WgmmaBf16, ComputesAtTheWaitThatRetiresItsGroup) {
  Smem smem;
  const Case c;
  write_operands<32>(smem, c);
  FragWg<32> first[4], second[4];
  for (int w = 0; w < 4; ++w) issue_steps<32, Major::kK, Major::kK>(smem, c, first[w], w, 0, 8);
  for (int w = 0; w < 4; ++w) issue_steps<32, Major::kK, Major::kK>(smem, c, second[w], w, 0, 8);
  EXPECT_TRUE(std::isnan(first[0][0].r[0][0]));
  wgmma_wait<4>();                              // the four newest groups (second's) stay in flight
  EXPECT_EQ(first[0][0].r[0][0], plain(0, 0));  // row 0, column 0: warp 0, lane 0, register 0
  EXPECT_TRUE(std::isnan(second[0][0].r[0][0]));
  // an operand written while second's products are in flight reaches them
  for (int k = 0; k < 128; ++k) smem.put(kA, 64, 0, k, 2.0f * a_value(0, k));
  wgmma_wait<0>();
  EXPECT_EQ(second[0][0].r[0][0], 2.0f * plain(0, 0));
  for (int k = 0; k < 128; ++k) smem.put(kA, 64, 0, k, a_value(0, k));
  // a product issued without accumulate ignores D's old values; with it, adds them
  FragWg<32> d;
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 16; ++i) d[i / 4].r[l][i % 4] = 1000.0f;
  issue_steps<32, Major::kK, Major::kK>(smem, c, d, 1, 0, 1);
  wgmma_wait<0>();
  const Coord x = wg_d_coord(1, 5, 3);
  EXPECT_EQ(d[0].r[5][3], plain(x.row, x.col, 0, 1));
  {
    AsWarp as(1);
    wgmma_bf16<32>(d, sw128_desc_k(smem.bytes + kA, 64, 1), sw128_desc_k(smem.bytes + kB, 32, 1),
                   true);
    wgmma_commit();
    wgmma_wait<0>();
  }
  EXPECT_EQ(d[0].r[5][3], plain(x.row, x.col, 0, 2));
  // a product never waited for is forgotten, its D left NaN
  FragWg<32> lost;
  issue_steps<32, Major::kK, Major::kK>(smem, c, lost, 2, 0, 1);
  emulated_wgmma::drop_pending();
  wgmma_wait<0>();
  EXPECT_TRUE(std::isnan(lost[0].r[0][0]));
}

}  // namespace
}  // namespace kcv::glr::arch
