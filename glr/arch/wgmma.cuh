// File: glr/arch/wgmma.cuh
// The warpgroup-level tensor-core atom of sm_90a, both operands in shared memory:
//   wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16  D = A·B + D (or A·B), N ∈ {8, 16, 32, 64}
//   wgmma.fence / wgmma.commit_group / wgmma.wait_group N, fence.proxy.async.shared::cta
// A is 64 × 16 (m × k), B is 16 × N (k × n). Every operand tile is a [rows][cols] bf16 tile in
// the 128-byte swizzled panel layout:
//   sw128_offset(rows, r, c): cols/64 panels of rows × 128 bytes; in a panel, row r at byte 128·r,
//   its 16-byte piece p (c = 8p … 8p + 7 of the panel) at piece p XOR (r mod 8). The tile starts
//   1024-byte aligned in the shared window (the XOR reads address bits 7–9), rows a multiple of 8.
// A tile is read in one of two ways (PTX ISA, "Shared Memory Matrix Layout", 128-byte swizzle):
//   Major::kK   the tile's rows are m (or n), its columns k: A as stored, or B transposed (B's
//               columns as the tile's rows). Descriptor of k-step s: start = tile + panel·rows·128
//               + 32·(s mod 4) (panel = 16s / 64), stride byte offset 1024 (8 rows), leading byte
//               offset 16 (unused when swizzled).
//   Major::kMN  the tile's rows are k, its columns m (or n): A transposed (Kᵀ from K's rows), or B
//               as stored. Descriptor of k-step s at column c0: start = tile + 2048·s + panel(c0)·
//               rows·128 + 2·(c0 mod 64), stride byte offset 1024 (8 k-rows), leading byte offset
//               rows·128 (the next 64 columns, the next panel: an operand that starts inside a
//               panel ends in it); wgmma's transpose bit set.
//   Both: swizzle mode 1 (128 bytes) in bits 62–63, base offset 0 ("Matrix Descriptor Format").
// D's fragment (PTX ISA, "Register Fragments", m64nNk16): warp w of the warpgroup holds rows
// 16w … 16w + 15; its lane's register 4j + i holds row 16w + lane/4 + 8·(i/2), column
// 8j + 2·(lane mod 4) + i mod 2: per 8 columns the mma.m16n8k16 C map of
// glr/arch/mma_m16n8k16.cuh, so D is an array of N/8 FragC (FragWg).
// The product runs asynchronously: its operands may be read, and D written, at any time between
// issue and the wgmma_wait that retires its group. Shared memory written by the CTA's threads is
// seen by the product only after fence_proxy_async_shared() and a barrier; D's registers must not
// be read or written in between (wgmma_fence before a product whose D the threads have written).
// Host emulation: issue records the product in the calling warp's open group and fills its part of
// D with NaN (D's values at issue are its addend, or, where an earlier product in flight writes the
// same D, that product's result, as the hardware chains them); commit closes the group; wait N
// computes every closed group but the N newest in issue order, reading the operands from shared
// memory then, through the descriptor's address arithmetic and swizzle (each element of D summed in
// fp32 in k order from its C, as mma_m16n8k16's emulation does). A read of D before the wait sees
// NaN, a write of an operand tile before it changes the product: either race is one on the device
// too.
#pragma once

#include <cstdint>

#include "glr/arch/bf16_bits.cuh"
#include "glr/arch/lanes.cuh"
#include "glr/arch/mma_m16n8k16.cuh"

#if defined(KCV_GLR_HOST_EMULATION)
#include <cstring>
#include <deque>
#include <limits>
#include <vector>
#endif

namespace kcv::glr::arch {

inline constexpr int kWarpgroupWarps = 4;
inline constexpr int kWgmmaRows = 64;  ///< rows of A and D in one product
inline constexpr int kWgmmaK = 16;     ///< k of one product
inline constexpr int kSw128Bytes = 128;
inline constexpr int kSw128PanelCols = kSw128Bytes / 2;  ///< bf16 elements of a row in one panel
inline constexpr int kSw128Align = 1024;

/// How a product reads an operand tile (the header's comment): k along the tile's columns (kK) or
/// along its rows (kMN).
enum class Major { kK, kMN };

/// D of one m64nNk16 product: N/8 m16n8 accumulator fragments a warp (register 4j + i of the PTX
/// fragment is d[j]'s register i), the layout of glr/tiles' AccTile<16, N>::f[0].
template <int N>
using FragWg = FragC[N / 8];

/// Byte offset of element (r, c) of a [rows][cols] tile in the 128-byte swizzled panel layout,
/// from the tile's (1024-byte aligned) start.
__host__ __device__ constexpr int sw128_offset(int rows, int r, int c) {
  const int panel = c / kSw128PanelCols;
  const int piece = (c % kSw128PanelCols) / 8;
  return panel * rows * kSw128Bytes + r * kSw128Bytes + ((piece ^ (r % 8)) * 16) + (c % 8) * 2;
}

/// (row, column) of D's register `reg` of lane `lane` in warp `warp` of the warpgroup.
__host__ __device__ constexpr Coord wg_d_coord(int warp, int lane, int reg) {
  return {16 * warp + lane / 4 + 8 * ((reg % 4) / 2), 8 * (reg / 4) + 2 * (lane % 4) + reg % 2};
}

/// A shared-memory matrix descriptor (64 bits).
struct WgmmaDesc {
  std::uint64_t bits = 0;
};

/// The byte address of p in the shared window: the device's cvta; in the host emulation the offset
/// from the emulated CTA's shared memory.
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
#if defined(KCV_GLR_HOST_EMULATION)
  return static_cast<std::uint32_t>(static_cast<const std::byte*>(p) - emulated_shared_memory);
#else
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
#endif
}

__device__ __forceinline__ WgmmaDesc sw128_descriptor(std::uint32_t start, std::uint32_t leading) {
  constexpr std::uint64_t kStride = 1024 >> 4;
  constexpr std::uint64_t kSwizzle128 = 1;
  return {(static_cast<std::uint64_t>((start >> 4) & 0x3fff)) |
          (static_cast<std::uint64_t>((leading >> 4) & 0x3fff) << 16) | (kStride << 32) |
          (kSwizzle128 << 62)};
}

/// Major::kK: the descriptor of k-step `step` (columns 16·step …) of a [rows][cols] sw128 tile at
/// `tile`, its rows the operand's m (or n).
__device__ __forceinline__ WgmmaDesc sw128_desc_k(const void* tile, int rows, int step) {
  const int c = kWgmmaK * step;
  return sw128_descriptor(
      shared_address(tile) + static_cast<std::uint32_t>((c / kSw128PanelCols) * rows * kSw128Bytes +
                                                        2 * (c % kSw128PanelCols)),
      16);
}

/// Major::kMN: the descriptor of k-step `step` (rows 16·step …) of a [rows][cols] sw128 tile at
/// `tile`, its columns c0 … the operand's m (or n); c0 a multiple of 8, and an operand starting
/// inside a panel (c0 mod 64 ≠ 0) ends in it (the next panel is `leading` from the start).
__device__ __forceinline__ WgmmaDesc sw128_desc_mn(const void* tile, int rows, int step, int c0) {
  return sw128_descriptor(shared_address(tile) + static_cast<std::uint32_t>(
                                                     kWgmmaK * step * kSw128Bytes +
                                                     (c0 / kSw128PanelCols) * rows * kSw128Bytes +
                                                     2 * (c0 % kSw128PanelCols)),
                          static_cast<std::uint32_t>(rows * kSw128Bytes));
}

#if defined(KCV_GLR_HOST_EMULATION)
namespace emulated_wgmma {
/// The byte offset of element (i, k) of one product's operand named by `desc`, i its m (or n):
/// the address the descriptor's fields give for the operand's major-ness, swizzled as the hardware
/// does (bits 4–6 XOR bits 7–9).
inline std::uint32_t element_address(std::uint64_t desc, Major major, int i, int k) {
  const auto start = static_cast<std::uint32_t>(desc & 0x3fff) << 4;
  const auto leading = static_cast<std::uint32_t>((desc >> 16) & 0x3fff) << 4;
  const auto stride = static_cast<std::uint32_t>((desc >> 32) & 0x3fff) << 4;
  const auto u = [](int x) { return static_cast<std::uint32_t>(x); };
  const std::uint32_t linear =
      major == Major::kK
          ? start + u(i / 8) * stride + u(i % 8) * kSw128Bytes + u(k / 8) * 16 + u(k % 8) * 2
          : start + u(i / kSw128PanelCols) * leading + u(k / 8) * stride + u(k % 8) * kSw128Bytes +
                u(i % kSw128PanelCols) * 2;
  return linear ^ (((linear >> 7) & 7u) << 4);
}
inline float element(std::uint64_t desc, Major major, int i, int k) {
  std::uint16_t bits;
  std::memcpy(&bits, emulated_shared_memory + element_address(desc, major, i, k), sizeof bits);
  return bf16_bits_to_float(bits);
}

struct Product {
  FragC* d;              // the warp's fragments: n/8 of them
  std::vector<float> c;  // D's values at issue (the addend when accumulating), unless chained
  std::uint64_t a, b;
  Major a_major, b_major;
  int n;
  int warp;  // the issuing warp's index in its warpgroup
  bool accumulate;
  bool chained;  // an earlier product in flight writes the same D: its result is the addend
};
inline thread_local std::vector<Product> open_group;
inline thread_local std::deque<std::vector<Product>> committed;

/// Whether a product in flight (issued, not yet computed) writes D at `d`.
inline bool in_flight(const FragC* d) {
  for (const Product& p : open_group)
    if (p.d == d) return true;
  for (const std::vector<Product>& g : committed)
    for (const Product& p : g)
      if (p.d == d) return true;
  return false;
}

inline void compute(const Product& p) {
  const int regs = p.n / 2;
  for (int lane = 0; lane < kWarpSize; ++lane)
    for (int reg = 0; reg < regs; ++reg) {
      const Coord x = wg_d_coord(p.warp, lane, reg);
      float& out = p.d[reg / 4].r[lane][reg % 4];
      const auto at = static_cast<std::size_t>(lane * regs + reg);
      float acc = !p.accumulate ? 0.0f : p.chained ? out : p.c[at];
      for (int k = 0; k < kWgmmaK; ++k)
        acc += element(p.a, p.a_major, x.row, k) * element(p.b, p.b_major, x.col, k);
      out = acc;
    }
}
/// Forgets the calling warp's products never waited for (the runner, at a CTA's end).
inline void drop_pending() {
  open_group.clear();
  committed.clear();
}
}  // namespace emulated_wgmma
#endif

/// Orders the warpgroup's register accesses before the products that follow (wgmma.fence).
__device__ __forceinline__ void wgmma_fence() {
#if !defined(KCV_GLR_HOST_EMULATION) && defined(__CUDA_ARCH__)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

/// Makes the CTA's generic-proxy writes to shared memory visible to the async proxy that wgmma
/// (and TMA) read through; a barrier after it publishes them to the other warps' products.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if !defined(KCV_GLR_HOST_EMULATION) && defined(__CUDA_ARCH__)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit() {
#if defined(KCV_GLR_HOST_EMULATION)
  emulated_wgmma::committed.push_back(std::move(emulated_wgmma::open_group));
  emulated_wgmma::open_group.clear();
#elif defined(__CUDA_ARCH__)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

/// Keeps the compiler from moving accesses to D's registers across the asynchronous product.
template <int N>
__device__ __forceinline__ void wgmma_fence_operand(FragWg<N>& d) {
#if !defined(KCV_GLR_HOST_EMULATION) && defined(__CUDA_ARCH__)
  KCV_GLR_UNROLL
  for (int i = 0; i < N / 2; ++i) asm volatile("" : "+f"(d[i / 4].r[0][i % 4])::"memory");
#else
  (void)d;
#endif
}

/// Waits until at most kPending of the warpgroup's committed groups are in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#if defined(KCV_GLR_HOST_EMULATION)
  while (emulated_wgmma::committed.size() > static_cast<std::size_t>(kPending)) {
    for (const emulated_wgmma::Product& p : emulated_wgmma::committed.front())
      emulated_wgmma::compute(p);
    emulated_wgmma::committed.pop_front();
  }
#elif defined(__CUDA_ARCH__)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}

/// d = a·b + d (accumulate) or a·b: one m64nNk16 product of the calling warpgroup (all four warps
/// issue it), a and b descriptors of sw128 tiles read as kA and kB say (sw128_desc_k for Major::kK,
/// sw128_desc_mn for Major::kMN).
template <int N, Major kA = Major::kK, Major kB = Major::kK>
__device__ __forceinline__ void wgmma_bf16(FragWg<N>& d, WgmmaDesc a, WgmmaDesc b,
                                           bool accumulate) {
  static_assert(N == 8 || N == 16 || N == 32 || N == 64, "wgmma_bf16: N is 8, 16, 32 or 64");
#if defined(KCV_GLR_HOST_EMULATION)
  emulated_wgmma::Product p;
  p.d = d;
  p.a = a.bits;
  p.b = b.bits;
  p.a_major = kA;
  p.b_major = kB;
  p.n = N;
  p.warp = warp_id() % kWarpgroupWarps;
  p.accumulate = accumulate;
  p.chained = emulated_wgmma::in_flight(p.d);
  if (!p.chained)
    for (int l = 0; l < kWarpSize; ++l)
      for (int i = 0; i < N / 2; ++i) p.c.push_back(d[i / 4].r[l][i % 4]);
  for (int l = 0; l < kWarpSize; ++l)
    for (int i = 0; i < N / 2; ++i) d[i / 4].r[l][i % 4] = std::numeric_limits<float>::quiet_NaN();
  emulated_wgmma::open_group.push_back(std::move(p));
#elif defined(__CUDA_ARCH__)
  const int scale_d = accumulate ? 1 : 0;
  constexpr int kTransA = kA == Major::kMN ? 1 : 0;
  constexpr int kTransB = kB == Major::kMN ? 1 : 0;
  if constexpr (N == 8) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3}, %4, %5, p, 1, 1, %7, %8;\n}\n"
        : "+f"(d[0].r[0][0]), "+f"(d[0].r[0][1]), "+f"(d[0].r[0][2]), "+f"(d[0].r[0][3])
        : "l"(a.bits), "l"(b.bits), "r"(scale_d), "n"(kTransA), "n"(kTransB));
  } else if constexpr (N == 16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, %11, %12;\n}\n"
        : "+f"(d[0].r[0][0]), "+f"(d[0].r[0][1]), "+f"(d[0].r[0][2]), "+f"(d[0].r[0][3]),
          "+f"(d[1].r[0][0]), "+f"(d[1].r[0][1]), "+f"(d[1].r[0][2]), "+f"(d[1].r[0][3])
        : "l"(a.bits), "l"(b.bits), "r"(scale_d), "n"(kTransA), "n"(kTransB));
  } else if constexpr (N == 32) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "%16, %17, p, 1, 1, %19, %20;\n}\n"
        : "+f"(d[0].r[0][0]), "+f"(d[0].r[0][1]), "+f"(d[0].r[0][2]), "+f"(d[0].r[0][3]),
          "+f"(d[1].r[0][0]), "+f"(d[1].r[0][1]), "+f"(d[1].r[0][2]), "+f"(d[1].r[0][3]),
          "+f"(d[2].r[0][0]), "+f"(d[2].r[0][1]), "+f"(d[2].r[0][2]), "+f"(d[2].r[0][3]),
          "+f"(d[3].r[0][0]), "+f"(d[3].r[0][1]), "+f"(d[3].r[0][2]), "+f"(d[3].r[0][3])
        : "l"(a.bits), "l"(b.bits), "r"(scale_d), "n"(kTransA), "n"(kTransB));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, %35, %36;\n}\n"
        : "+f"(d[0].r[0][0]), "+f"(d[0].r[0][1]), "+f"(d[0].r[0][2]), "+f"(d[0].r[0][3]),
          "+f"(d[1].r[0][0]), "+f"(d[1].r[0][1]), "+f"(d[1].r[0][2]), "+f"(d[1].r[0][3]),
          "+f"(d[2].r[0][0]), "+f"(d[2].r[0][1]), "+f"(d[2].r[0][2]), "+f"(d[2].r[0][3]),
          "+f"(d[3].r[0][0]), "+f"(d[3].r[0][1]), "+f"(d[3].r[0][2]), "+f"(d[3].r[0][3]),
          "+f"(d[4].r[0][0]), "+f"(d[4].r[0][1]), "+f"(d[4].r[0][2]), "+f"(d[4].r[0][3]),
          "+f"(d[5].r[0][0]), "+f"(d[5].r[0][1]), "+f"(d[5].r[0][2]), "+f"(d[5].r[0][3]),
          "+f"(d[6].r[0][0]), "+f"(d[6].r[0][1]), "+f"(d[6].r[0][2]), "+f"(d[6].r[0][3]),
          "+f"(d[7].r[0][0]), "+f"(d[7].r[0][1]), "+f"(d[7].r[0][2]), "+f"(d[7].r[0][3])
        : "l"(a.bits), "l"(b.bits), "r"(scale_d), "n"(kTransA), "n"(kTransB));
  }
#else
  (void)d;
  (void)a;
  (void)b;
  (void)accumulate;
#endif
}

}  // namespace kcv::glr::arch
