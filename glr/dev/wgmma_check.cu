// File: glr/dev/wgmma_check.cu
// glr_wgmma_check: glr/arch/wgmma.cuh's products on the GPU against an fp64 product on the host,
// the device half of glr/dev/wgmma_layout_test.cpp (which checks the same layout, descriptor and
// fragment map in the host emulation), over the test's cases: N = 16, 32, 64, A and B each read
// K-major or MN-major (transposed), MN-major operands at column offsets inside and across panels
// (among them the state pass's: N = 16 from column 16 of a panel).
// A (64 × 128) and B (128 × N) of random bf16 values, written on the host into the sw128 layout
// (sw128_offset), copied into the shared memory of one warpgroup, D = Σ over eight k-steps of
// wgmma_bf16 (the first without accumulate, over D preset to NaN), each D register written out at
// the (row, column) wg_d_coord names. Every element must be within 2^-20 · Σ_k |a·b| of the fp64
// product (the products are exact in fp32; the hardware's sum of 128 of them is not IEEE, but far
// inside that). Also checks that the dynamic shared memory starts 1024-byte aligned in the shared
// window (the swizzle reads address bits 7–9). Exit status 0 only if every check passes.
//   build/…/glr/dev/glr_wgmma_check
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "glr/arch/wgmma.cuh"

namespace kcv::glr::arch {
namespace {

constexpr int kK = 128;
constexpr int kSteps = kK / kWgmmaK;

constexpr int kBTile = 32768;  // B's tile: after A's ([64][128] or [128][128] bf16)
constexpr int kImageBytes = 2 * kBTile;

/// One case: A read K-major from a [64][128] tile or MN-major from columns a_c0 … of a [128][128]
/// tile; B read K-major from an [N][128] tile or MN-major from columns b_c0 … of a [128][128] one.
struct Case {
  Major a_major = Major::kK;
  Major b_major = Major::kK;
  int a_c0 = 0;
  int b_c0 = 0;
};

template <int N, Major kA, Major kB>
__global__ void __launch_bounds__(128, 1)
    wgmma_product_kernel(const uint4* image, Case c, float* d_out, unsigned* misaligned) {
  extern __shared__ __align__(1024) unsigned char smem[];
  if (threadIdx.x == 0 && (shared_address(smem) % kSw128Align) != 0) *misaligned = 1;
  auto* dst = reinterpret_cast<uint4*>(smem);
  for (int i = static_cast<int>(threadIdx.x); i < kImageBytes / 16;
       i += static_cast<int>(blockDim.x))
    dst[i] = image[i];
  fence_proxy_async_shared();
  __syncthreads();
  FragWg<N> d;
  for (int i = 0; i < N / 2; ++i) d[i / 4].r[0][i % 4] = __int_as_float(0x7fc00000);  // NaN
  wgmma_fence();
  for (int s = 0; s < kSteps; ++s) {
    const WgmmaDesc a =
        kA == Major::kK ? sw128_desc_k(smem, kWgmmaRows, s) : sw128_desc_mn(smem, kK, s, c.a_c0);
    const WgmmaDesc b = kB == Major::kK ? sw128_desc_k(smem + kBTile, N, s)
                                        : sw128_desc_mn(smem + kBTile, kK, s, c.b_c0);
    wgmma_bf16<N, kA, kB>(d, a, b, s > 0);
  }
  wgmma_commit();
  wgmma_wait<0>();
  wgmma_fence_operand<N>(d);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  for (int reg = 0; reg < N / 2; ++reg) {
    const Coord x = wg_d_coord(warp, lane, reg);
    d_out[x.row * N + x.col] = d[reg / 4].r[0][reg % 4];
  }
}

std::uint16_t host_bf16(float x) {
  const __nv_bfloat16 h = __float2bfloat16_rn(x);
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}
double host_float(std::uint16_t bits) {
  const std::uint32_t w = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("%s: %s\n", what, cudaGetErrorString(e));
  return false;
}

const char* name(Major m) { return m == Major::kK ? "K" : "MN"; }

template <int N, Major kA, Major kB>
bool run(std::mt19937& rng, Case c) {
  c.a_major = kA;
  c.b_major = kB;
  std::vector<std::uint16_t> a(kWgmmaRows * kK), b(kK * N);  // a[m][k], b[k][n]
  std::normal_distribution<float> draw(0.0f, 1.0f);
  for (auto& x : a) x = host_bf16(draw(rng));
  for (auto& x : b) x = host_bf16(draw(rng));
  std::vector<unsigned char> image(kImageBytes, 0);
  const auto put = [&](int at, int rows, int r, int col, std::uint16_t v) {
    std::memcpy(&image[static_cast<std::size_t>(at + sw128_offset(rows, r, col))], &v, 2);
  };
  for (int k = 0; k < kK; ++k) {
    for (int m = 0; m < kWgmmaRows; ++m)
      if (kA == Major::kK)
        put(0, kWgmmaRows, m, k, a[m * kK + k]);
      else
        put(0, kK, k, c.a_c0 + m, a[m * kK + k]);
    for (int n = 0; n < N; ++n)
      if (kB == Major::kK)
        put(kBTile, N, n, k, b[k * N + n]);
      else
        put(kBTile, kK, k, c.b_c0 + n, b[k * N + n]);
  }
  uint4* d_image = nullptr;
  float* d_out = nullptr;
  unsigned* d_flag = nullptr;
  bool ok = check(cudaMalloc(&d_image, image.size()), "cudaMalloc") &&
            check(cudaMalloc(&d_out, sizeof(float) * kWgmmaRows * N), "cudaMalloc") &&
            check(cudaMalloc(&d_flag, sizeof(unsigned)), "cudaMalloc") &&
            check(cudaMemcpy(d_image, image.data(), image.size(), cudaMemcpyHostToDevice),
                  "cudaMemcpy") &&
            check(cudaMemset(d_flag, 0, sizeof(unsigned)), "cudaMemset") &&
            check(cudaFuncSetAttribute(wgmma_product_kernel<N, kA, kB>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, kImageBytes),
                  "cudaFuncSetAttribute");
  if (ok) {
    wgmma_product_kernel<N, kA, kB><<<1, 128, kImageBytes>>>(d_image, c, d_out, d_flag);
    ok = check(cudaGetLastError(), "launch") && check(cudaDeviceSynchronize(), "kernel");
  }
  std::vector<float> out(static_cast<std::size_t>(kWgmmaRows * N));
  unsigned misaligned = 0;
  if (ok)
    ok = check(cudaMemcpy(out.data(), d_out, sizeof(float) * out.size(), cudaMemcpyDeviceToHost),
               "cudaMemcpy") &&
         check(cudaMemcpy(&misaligned, d_flag, sizeof misaligned, cudaMemcpyDeviceToHost),
               "cudaMemcpy");
  cudaFree(d_image);
  cudaFree(d_out);
  cudaFree(d_flag);
  if (!ok) return false;
  double worst = 0;
  int bad = 0;
  for (int m = 0; m < kWgmmaRows; ++m)
    for (int n = 0; n < N; ++n) {
      double exact = 0, magnitude = 0;
      for (int k = 0; k < kK; ++k) {
        const double p = host_float(a[m * kK + k]) * host_float(b[k * N + n]);
        exact += p;
        magnitude += std::fabs(p);
      }
      const double err = std::fabs(out[static_cast<std::size_t>(m * N + n)] - exact);
      const double ratio = err / (std::ldexp(magnitude, -20) + 1e-30);
      if (!(ratio <= 1.0)) ++bad;  // NaN counts
      if (ratio > worst || std::isnan(ratio)) worst = ratio;
    }
  const bool pass = bad == 0 && misaligned == 0;
  std::printf(
      "wgmma m64n%dk16 bf16, A %s-major (columns %d..), B %s-major (columns %d..), K = %d: "
      "%s (worst err / (2^-20 sum|ab|) %.3g, %d of %d elements out)%s\n",
      N, name(kA), c.a_c0, name(kB), c.b_c0, kK, pass ? "pass" : "FAIL", worst, bad, kWgmmaRows * N,
      misaligned ? "; dynamic shared memory not 1024-byte aligned" : "");
  return pass;
}

}  // namespace
}  // namespace kcv::glr::arch

int main() {
  using kcv::glr::arch::Major;
  namespace a = kcv::glr::arch;
  std::mt19937 rng(20261208);
  int failed = 0, cases = 0;
  const auto count = [&](bool ok) {
    failed += ok ? 0 : 1;
    ++cases;
  };
  count(a::run<16, Major::kK, Major::kK>(rng, {}));
  count(a::run<32, Major::kK, Major::kK>(rng, {}));
  count(a::run<64, Major::kK, Major::kK>(rng, {}));
  for (const int a_c0 : {0, 64}) {
    count(a::run<32, Major::kMN, Major::kK>(rng, {.a_c0 = a_c0}));
    count(a::run<64, Major::kMN, Major::kMN>(rng, {.a_c0 = a_c0, .b_c0 = 64}));
  }
  for (const int b_c0 : {0, 32, 64, 96}) {
    count(a::run<16, Major::kK, Major::kMN>(rng, {.b_c0 = b_c0}));
    count(a::run<32, Major::kK, Major::kMN>(rng, {.b_c0 = b_c0}));
  }
  count(a::run<64, Major::kK, Major::kMN>(rng, {.b_c0 = 64}));
  // the dH scan's: 8 columns from column 8 (56) of a panel, A either way
  for (const int b_c0 : {8, 56}) {
    count(a::run<8, Major::kK, Major::kMN>(rng, {.b_c0 = b_c0}));
    count(a::run<8, Major::kMN, Major::kMN>(rng, {.a_c0 = 64, .b_c0 = b_c0}));
  }
  // the state pass's: 16 columns from column 16 (48) of a 64-column panel, A either way
  for (const int b_c0 : {16, 48}) {
    count(a::run<16, Major::kK, Major::kMN>(rng, {.b_c0 = b_c0}));
    for (const int a_c0 : {0, 64})
      count(a::run<16, Major::kMN, Major::kMN>(rng, {.a_c0 = a_c0, .b_c0 = b_c0}));
  }
  std::printf("%d of %d cases failed\n", failed, cases);
  return failed == 0 ? 0 : 1;
}
