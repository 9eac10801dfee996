// File: examples/device/block_sum_32k.cu
// Device code of redteam.res02.shared_32k_declares_16k: a block sum that stages a whole 8192-
// float tile in static shared memory (32 KiB) while the kernel's contract declares a 16 KiB
// shared-memory budget. Correct as code; only its resource use breaks the contract (RES-02).
// Compiled at build time for sm_90a with `-Xptxas -v`; the ptxas log is what kcv reads.
constexpr int kTile = 8192;
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) block_sum_32k(const float* x, float* out, int n) {
  __shared__ float tile[kTile];
  const int base = blockIdx.x * kTile;
  for (int i = threadIdx.x; i < kTile; i += kThreads) tile[i] = base + i < n ? x[base + i] : 0.0f;
  __syncthreads();
  for (int width = kTile / 2; width >= 1; width /= 2) {
    for (int i = threadIdx.x; i < width; i += kThreads) tile[i] += tile[i + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = tile[0];
}
