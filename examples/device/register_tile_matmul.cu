// File: examples/device/register_tile_matmul.cu
// Device code of redteam.res02.spills_declares_none: each thread keeps an 8x8 register tile of
// accumulators (64 floats plus 16 operands live at once). Built with -maxrregcount=32, ptxas
// must spill to local memory, while the contract declares spill_bytes 0 (RES-02).
constexpr int kTileM = 8;
constexpr int kTileN = 8;

__global__ void register_tile_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * kTileM;
  const int col0 = (blockIdx.x * blockDim.x + threadIdx.x) * kTileN;
  if (row0 + kTileM > m || col0 + kTileN > n) return;
  float acc[kTileM][kTileN];
#pragma unroll
  for (int i = 0; i < kTileM; ++i) {
#pragma unroll
    for (int j = 0; j < kTileN; ++j) acc[i][j] = 0.0f;
  }
  for (int p = 0; p < k; ++p) {
    float av[kTileM], bv[kTileN];
#pragma unroll
    for (int i = 0; i < kTileM; ++i) av[i] = a[(row0 + i) * k + p];
#pragma unroll
    for (int j = 0; j < kTileN; ++j) bv[j] = b[p * n + col0 + j];
#pragma unroll
    for (int i = 0; i < kTileM; ++i) {
#pragma unroll
      for (int j = 0; j < kTileN; ++j) acc[i][j] += av[i] * bv[j];
    }
  }
#pragma unroll
  for (int i = 0; i < kTileM; ++i) {
#pragma unroll
    for (int j = 0; j < kTileN; ++j) c[(row0 + i) * n + col0 + j] = acc[i][j];
  }
}
