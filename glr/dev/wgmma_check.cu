// File: glr/dev/wgmma_check.cu
// glr_wgmma_check: glr/arch/wgmma.cuh's products on the GPU against an fp64 product on the host,
// the device half of glr/dev/wgmma_layout_test.cpp (which checks the same layout, descriptor and
// fragment map in the host emulation). For N = 16, 32 and 64: A (64 × 128) and B (N × 128) of
// random bf16 values, written on the host into the sw128 layout (sw128_offset), copied into the
// shared memory of one warpgroup, D = Σ over eight k-steps of wgmma_bf16 (the first without
// accumulate, over D preset to NaN), each D register written out at the (row, column) wg_d_coord
// names. Every element must be within 2^-20 · Σ_k |a·b| of the fp64 product (the products are
// exact in fp32; the hardware's sum of 128 of them is not IEEE, but far inside that). Also checks
// that the dynamic shared memory starts 1024-byte aligned in the shared window (the swizzle reads
// address bits 7–9). Exit status 0 only if every check passes.
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

template <int N>
__global__ void __launch_bounds__(128, 1)
    wgmma_product_kernel(const uint4* image, int a_bytes, int b_bytes, float* d_out,
                         unsigned* misaligned) {
  extern __shared__ __align__(1024) unsigned char smem[];
  if (threadIdx.x == 0 && (shared_address(smem) % kSw128Align) != 0) *misaligned = 1;
  const int pieces = (a_bytes + b_bytes) / 16;
  auto* dst = reinterpret_cast<uint4*>(smem);
  for (int i = static_cast<int>(threadIdx.x); i < pieces; i += static_cast<int>(blockDim.x))
    dst[i] = image[i];
  fence_proxy_async_shared();
  __syncthreads();
  FragWg<N> d;
  for (int i = 0; i < N / 2; ++i) d.r[0][i] = __int_as_float(0x7fc00000);  // NaN
  wgmma_fence();
  for (int s = 0; s < kSteps; ++s)
    wgmma_bf16<N>(d, sw128_desc_k(smem, kWgmmaRows, s), sw128_desc_k(smem + a_bytes, N, s), s > 0);
  wgmma_commit();
  wgmma_wait<0>();
  wgmma_fence_operand<N>(d);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  for (int reg = 0; reg < N / 2; ++reg) {
    const Coord x = wg_d_coord(warp, lane, reg);
    d_out[x.row * N + x.col] = d.r[0][reg];
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

template <int N>
bool run(std::mt19937& rng) {
  const int a_bytes = kWgmmaRows * kK * 2;
  const int b_bytes = N * kK * 2;
  std::vector<std::uint16_t> a(kWgmmaRows * kK), b(N * kK);
  std::normal_distribution<float> draw(0.0f, 1.0f);
  for (auto& x : a) x = host_bf16(draw(rng));
  for (auto& x : b) x = host_bf16(draw(rng));
  std::vector<unsigned char> image(static_cast<std::size_t>(a_bytes + b_bytes));
  for (int r = 0; r < kWgmmaRows; ++r)
    for (int k = 0; k < kK; ++k)
      std::memcpy(&image[static_cast<std::size_t>(sw128_offset(kWgmmaRows, r, k))], &a[r * kK + k],
                  2);
  for (int c = 0; c < N; ++c)
    for (int k = 0; k < kK; ++k)
      std::memcpy(&image[static_cast<std::size_t>(a_bytes + sw128_offset(N, c, k))], &b[c * kK + k],
                  2);
  uint4* d_image = nullptr;
  float* d_out = nullptr;
  unsigned* d_flag = nullptr;
  bool ok =
      check(cudaMalloc(&d_image, image.size()), "cudaMalloc") &&
      check(cudaMalloc(&d_out, sizeof(float) * kWgmmaRows * N), "cudaMalloc") &&
      check(cudaMalloc(&d_flag, sizeof(unsigned)), "cudaMalloc") &&
      check(cudaMemcpy(d_image, image.data(), image.size(), cudaMemcpyHostToDevice),
            "cudaMemcpy") &&
      check(cudaMemset(d_flag, 0, sizeof(unsigned)), "cudaMemset") &&
      check(cudaFuncSetAttribute(wgmma_product_kernel<N>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, a_bytes + b_bytes),
            "cudaFuncSetAttribute");
  if (ok) {
    wgmma_product_kernel<N><<<1, 128, static_cast<std::size_t>(a_bytes + b_bytes)>>>(
        d_image, a_bytes, b_bytes, d_out, d_flag);
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
  for (int r = 0; r < kWgmmaRows; ++r)
    for (int c = 0; c < N; ++c) {
      double exact = 0, magnitude = 0;
      for (int k = 0; k < kK; ++k) {
        const double p = host_float(a[r * kK + k]) * host_float(b[c * kK + k]);
        exact += p;
        magnitude += std::fabs(p);
      }
      const double err = std::fabs(out[static_cast<std::size_t>(r * N + c)] - exact);
      const double ratio = err / (std::ldexp(magnitude, -20) + 1e-30);
      if (!(ratio <= 1.0)) ++bad;  // NaN counts
      if (ratio > worst || std::isnan(ratio)) worst = ratio;
    }
  std::printf(
      "wgmma m64n%dk16 bf16, K = %d: %s (worst err / (2^-20 Σ|ab|) %.3g, %d of %d "
      "elements out)%s\n",
      N, kK, bad == 0 && misaligned == 0 ? "pass" : "FAIL", worst, bad, kWgmmaRows * N,
      misaligned ? "; dynamic shared memory not 1024-byte aligned" : "");
  return bad == 0 && misaligned == 0;
}

}  // namespace
}  // namespace kcv::glr::arch

int main() {
  std::mt19937 rng(20261208);
  bool ok = kcv::glr::arch::run<16>(rng);
  ok = kcv::glr::arch::run<32>(rng) && ok;
  ok = kcv::glr::arch::run<64>(rng) && ok;
  return ok ? 0 : 1;
}
