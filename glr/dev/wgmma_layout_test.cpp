// File: glr/dev/wgmma_layout_test.cpp
// The host emulation of glr/arch/wgmma.cuh against plain references:
//  * sw128_offset places every element of a [64][128] tile once, inside the tile, each 16-byte
//    piece's 8 elements contiguous, and the XOR only within a row's 128 bytes;
//  * the address the emulation reads for (row, k) of k-step s through sw128_desc's descriptor is
//    sw128_offset(rows, row, 16s + k): the tile writer's layout and the descriptor's address
//    arithmetic name the same bytes;
//  * D's fragment map places each element of a 64 × N tile once over 4 warps, 32 lanes;
//  * eight accumulated k-steps of wgmma_bf16 equal a plain integer product exactly for N = 16, 32,
//    64, with operands written through sw128_offset;
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

/// Emulated shared memory for one test: 64 KB, 1024-byte aligned, set as the CTA's.
struct Smem {
  alignas(1024) std::byte bytes[64 * 1024];
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

TEST(Sw128Desc, NamesTheBytesTheLayoutWrites) {
  Smem smem;
  for (const int rows : {16, 32, 64})
    for (const int at : {0, 16384})
      for (int step = 0; step < 8; ++step) {
        const WgmmaDesc d = sw128_desc(smem.bytes + at, rows, step);
        EXPECT_EQ((d.bits >> 62) & 3u, 1u);               // 128-byte swizzle
        EXPECT_EQ((d.bits >> 32) & 0x3fffu, 1024u >> 4);  // 8 rows apart
        EXPECT_EQ((d.bits >> 49) & 7u, 0u);               // base offset
        for (int r = 0; r < rows; ++r)
          for (int k = 0; k < 16; ++k)
            ASSERT_EQ(emulated_wgmma::element_address(d.bits, r, k),
                      static_cast<std::uint32_t>(at + sw128_offset(rows, r, 16 * step + k)))
                << "rows " << rows << " step " << step << " r " << r << " k " << k;
      }
}

TEST(WgmmaFragment, PlacesEachElementOnce) {
  for (const int n : {16, 32, 64}) {
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

// A (64 × 128) and B (n × 128) of small integers, so every sum is exact in fp32.
float a_value(int r, int k) { return static_cast<float>((r * 7 + k * 3) % 11 - 5); }
float b_value(int c, int k) { return static_cast<float>((c * 5 + k) % 9 - 4); }
constexpr int kA = 0;
constexpr int kB = 16384;

template <int N>
void write_operands(Smem& smem) {
  for (int k = 0; k < 128; ++k) {
    for (int r = 0; r < 64; ++r) smem.put(kA, 64, r, k, a_value(r, k));
    for (int c = 0; c < N; ++c) smem.put(kB, N, c, k, b_value(c, k));
  }
}

template <int N>
void issue_all_steps(Smem& smem, FragWg<N> (&d)[4], int warp) {
  AsWarp as(warp);
  for (int step = 0; step < 8; ++step)
    wgmma_bf16<N>(d[warp], sw128_desc(smem.bytes + kA, 64, step),
                  sw128_desc(smem.bytes + kB, N, step), step > 0);
  wgmma_commit();
}

template <int N>
void expect_plain_product() {
  Smem smem;
  write_operands<N>(smem);
  FragWg<N> d[4];
  for (int w = 0; w < 4; ++w) issue_all_steps<N>(smem, d, w);
  wgmma_wait<0>();
  for (int w = 0; w < 4; ++w)
    for (int l = 0; l < 32; ++l)
      for (int reg = 0; reg < N / 2; ++reg) {
        const Coord x = wg_d_coord(w, l, reg);
        float want = 0;
        for (int k = 0; k < 128; ++k) want += a_value(x.row, k) * b_value(x.col, k);
        ASSERT_EQ(d[w].r[l][reg], want) << "N " << N << " row " << x.row << " col " << x.col;
      }
}

TEST(WgmmaBf16, EqualsPlainProduct) {
  expect_plain_product<16>();
  expect_plain_product<32>();
  expect_plain_product<64>();
}

TEST(WgmmaBf16, ComputesAtTheWaitThatRetiresItsGroup) {
  Smem smem;
  write_operands<32>(smem);
  FragWg<32> first[4], second[4];
  for (int w = 0; w < 4; ++w) issue_all_steps<32>(smem, first, w);
  for (int w = 0; w < 4; ++w) issue_all_steps<32>(smem, second, w);
  EXPECT_TRUE(std::isnan(first[0].r[0][0]));
  wgmma_wait<4>();  // the four newest groups (second's) stay in flight
  const float want = first[0].r[0][0];
  EXPECT_FALSE(std::isnan(want));
  EXPECT_TRUE(std::isnan(second[0].r[0][0]));
  // an operand written while second's products are in flight reaches them
  for (int k = 0; k < 128; ++k) smem.put(kA, 64, 0, k, 2.0f * a_value(0, k));
  wgmma_wait<0>();
  EXPECT_EQ(second[0].r[0][0], 2.0f * want);  // row 0, column 0: lane 0, register 0
  // a product issued without accumulate ignores D's old values; with it, adds them
  FragWg<32> d[4];
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 16; ++i) d[1].r[l][i] = 1000.0f;
  {
    AsWarp as(1);
    wgmma_bf16<32>(d[1], sw128_desc(smem.bytes + kA, 64, 0), sw128_desc(smem.bytes + kB, 32, 0),
                   false);
    wgmma_commit();
    wgmma_wait<0>();
  }
  float step0 = 0;
  const Coord x = wg_d_coord(1, 5, 3);
  for (int k = 0; k < 16; ++k) step0 += a_value(x.row, k) * b_value(x.col, k);
  EXPECT_EQ(d[1].r[5][3], step0);
  {
    AsWarp as(1);
    wgmma_bf16<32>(d[1], sw128_desc(smem.bytes + kA, 64, 0), sw128_desc(smem.bytes + kB, 32, 0),
                   true);
    wgmma_commit();
    wgmma_wait<0>();
  }
  EXPECT_EQ(d[1].r[5][3], 2.0f * step0);
  // a product never waited for is forgotten, its D left NaN
  {
    AsWarp as(2);
    wgmma_bf16<32>(d[2], sw128_desc(smem.bytes + kA, 64, 0), sw128_desc(smem.bytes + kB, 32, 0),
                   false);
    wgmma_commit();
  }
  emulated_wgmma::drop_pending();
  wgmma_wait<0>();
  EXPECT_TRUE(std::isnan(d[2].r[0][0]));
}

}  // namespace
}  // namespace kcv::glr::arch
