// File: glr/arch/mma_m16n8k16.cuh
// The warp-level tensor-core atoms of the GLR kernels, sm_80 and later (valid on sm_90a):
//   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32   D = A·B + C, A 16×16, B 16×8 bf16, C fp32
//   ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16   8×8 bf16 matrices into fragments
// with their fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16" and "ldmatrix"), as
// constexpr maps from (lane, register, half) to the element's (row, column). groupID = lane / 4,
// threadID_in_group = lane % 4:
//   A (16×16, row-major): register r, half h → row groupID + 8·(r % 2), col 2·tig + h + 8·(r / 2)
//   B (16×8, "col"):      register r, half h → k 2·tig + h + 8·r,        n groupID
//   C/D (16×8, fp32):     element i          → row groupID + 8·(i / 2), col 2·tig + i % 2
//   ldmatrix, matrix j (rows addressed by lanes 8j … 8j+7): lane l receives row l / 4, columns
//   2·(l % 4) and 2·(l % 4) + 1 of matrix j in register j; with .trans, column l / 4 of rows
//   2·(l % 4) and 2·(l % 4) + 1.
// The host emulation (KCV_GLR_HOST_EMULATION) computes every lane from these maps: ldmatrix
// gathers from the 32 lanes' row addresses, mma gathers A and B from the lanes' registers and
// accumulates each D element in fp32 in k order starting from C. The products of two bf16 values
// are exact in fp32, so the emulation differs from the hardware only in how the 16 products and C
// are summed (the hardware's fp32 accumulation is not IEEE round-to-nearest; both are inside the
// fp32 term of the GLR bound). Kernels therefore accumulate a chunk's product into a zeroed
// fragment and add it to long-lived fp32 values on CUDA cores.
#pragma once

#include <cstdint>

#include "glr/arch/bf16_bits.cuh"
#include "glr/arch/lanes.cuh"

namespace kcv::glr::arch {

using FragA = Frag<std::uint32_t, 4>;  ///< 16×16 bf16 A operand
using FragB = Frag<std::uint32_t, 2>;  ///< 16×8 bf16 B operand
using FragC = Frag<float, 4>;          ///< 16×8 fp32 accumulator

struct Coord {
  int row = 0;
  int col = 0;
};

__host__ __device__ constexpr Coord a_coord(int lane, int reg, int half) {
  return {lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + half + 8 * (reg / 2)};
}
/// (k, n) of a B element.
__host__ __device__ constexpr Coord b_coord(int lane, int reg, int half) {
  return {2 * (lane % 4) + half + 8 * reg, lane / 4};
}
__host__ __device__ constexpr Coord c_coord(int lane, int i) {
  return {lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2};
}

/// The lane whose accumulator registers hold (row, col) of a 16×8 tile: c_coord's inverse.
__host__ __device__ constexpr int c_lane(int row, int col) { return 4 * (row % 8) + (col % 8) / 2; }

/// d = a·b + c (d may alias c).
__device__ __forceinline__ void mma_m16n8k16(FragC& d, const FragA& a, const FragB& b,
                                             const FragC& c) {
#if defined(KCV_GLR_HOST_EMULATION)
  float am[16][16];
  float bm[16][8];
  for (int l = 0; l < kWarpSize; ++l)
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < 4; ++r) {
        const Coord x = a_coord(l, r, h);
        am[x.row][x.col] = unpack_bf16(a.r[l][r], h);
      }
      for (int r = 0; r < 2; ++r) {
        const Coord x = b_coord(l, r, h);
        bm[x.row][x.col] = unpack_bf16(b.r[l][r], h);
      }
    }
  FragC out;
  for (int l = 0; l < kWarpSize; ++l)
    for (int i = 0; i < 4; ++i) {
      const Coord x = c_coord(l, i);
      float acc = c.r[l][i];
      for (int k = 0; k < 16; ++k) acc += am[x.row][k] * bm[k][x.col];
      out.r[l][i] = acc;
    }
  d = out;
#elif defined(__CUDA_ARCH__)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};\n"
      : "=f"(d.r[0][0]), "=f"(d.r[0][1]), "=f"(d.r[0][2]), "=f"(d.r[0][3])
      : "r"(a.r[0][0]), "r"(a.r[0][1]), "r"(a.r[0][2]), "r"(a.r[0][3]), "r"(b.r[0][0]),
        "r"(b.r[0][1]), "f"(c.r[0][0]), "f"(c.r[0][1]), "f"(c.r[0][2]), "f"(c.r[0][3]));
#endif
}

/// ldmatrix of kMatrices (1, 2 or 4) 8×8 bf16 matrices into out.r[.][j]; lane_row(l) is the
/// shared-memory address of the row that lane l supplies (row l % 8 of matrix l / 8; 16-byte
/// aligned). kTrans: the .trans variant.
template <int kMatrices, bool kTrans, typename LaneRow>
__device__ __forceinline__ void ldmatrix(Frag<std::uint32_t, kMatrices>& out, LaneRow&& lane_row) {
  static_assert(kMatrices == 1 || kMatrices == 2 || kMatrices == 4, "ldmatrix: 1, 2 or 4 matrices");
#if defined(KCV_GLR_HOST_EMULATION)
  const bf16* rows[kWarpSize];
  for (int l = 0; l < 8 * kMatrices; ++l) rows[l] = lane_row(l);
  for (int l = 0; l < kWarpSize; ++l)
    for (int j = 0; j < kMatrices; ++j) {
      bf16 lo, hi;
      if constexpr (kTrans) {
        lo = rows[8 * j + 2 * (l % 4)][l / 4];
        hi = rows[8 * j + 2 * (l % 4) + 1][l / 4];
      } else {
        lo = rows[8 * j + l / 4][2 * (l % 4)];
        hi = rows[8 * j + l / 4][2 * (l % 4) + 1];
      }
      out.r[l][j] = static_cast<std::uint32_t>(bf16_bits(lo)) |
                    (static_cast<std::uint32_t>(bf16_bits(hi)) << 16);
    }
#elif defined(__CUDA_ARCH__)
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(lane_row(lane)));
  if constexpr (kMatrices == 4 && kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(out.r[0][0]), "=r"(out.r[0][1]), "=r"(out.r[0][2]), "=r"(out.r[0][3])
                 : "r"(addr));
  else if constexpr (kMatrices == 4)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(out.r[0][0]), "=r"(out.r[0][1]), "=r"(out.r[0][2]), "=r"(out.r[0][3])
                 : "r"(addr));
  else if constexpr (kMatrices == 2 && kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(out.r[0][0]), "=r"(out.r[0][1])
                 : "r"(addr));
  else if constexpr (kMatrices == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(out.r[0][0]), "=r"(out.r[0][1])
                 : "r"(addr));
  else if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(out.r[0][0])
                 : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(out.r[0][0])
                 : "r"(addr));
#else
  (void)out;
  (void)lane_row;
#endif
}

}  // namespace kcv::glr::arch
