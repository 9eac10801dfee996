// File: examples/device/tmem_alloc_544.cu
// Device code of redteam.res02.tmem_544_columns: a Blackwell (sm_100a) kernel whose first warp
// allocates 544 tensor-memory columns with tcgen05.alloc. An SM has 128 lanes x 512 columns and
// allocations must be a power of two from 32 to 512, so this request can never be granted; the
// contract declares tmem_columns 512 (RES-02). Emitted as PTX (nvcc -ptx); kcv reads the alloc
// and dealloc counts from the PTX text. The count goes through a register ("r", which NVVM
// emits as `mov.b32 %r, 544`): nvcc 13 checks its -ptx output with ptxas, which rejects an
// immediate 544 outright, so a PTX with an immediate count cannot be produced by nvcc at all.
#include <cstdint>

constexpr uint32_t kColumns = 544;

__global__ void tmem_alloc_544(uint32_t* out) {
  __shared__ uint32_t tmem_base;
  const uint32_t slot = static_cast<uint32_t>(__cvta_generic_to_shared(&tmem_base));
  if (threadIdx.x < 32) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
                 :: "r"(slot), "r"(kColumns));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  }
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = tmem_base;
  __syncthreads();
  if (threadIdx.x < 32) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(tmem_base), "r"(kColumns));
  }
}
