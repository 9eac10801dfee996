// File: glr/arch/cp_async.cuh
// Asynchronous global → shared copies (sm_80 and later, valid on sm_90a):
//   cp.async.cg.shared.global [dst], [src], 16, src_size   16 bytes, zero-filled past src_size
//   cp.async.commit_group / cp.async.wait_group N
// A copy with `valid` false writes 16 zero bytes and reads nothing (src_size 0), which is how the
// GLR kernels fill the padded rows of a ragged chunk. Copies are visible to the issuing thread
// after wait_group, to the rest of the CTA after a barrier that follows it.
// Host emulation: the copy happens at issue and commit/wait do nothing, so the emulation cannot
// see a read of a buffer whose copy has not been waited for; the kernels' order (wait, barrier,
// then read) is checked by reading the code and on the device.
#pragma once

#include <cstdint>

#include "glr/arch/lanes.cuh"

#if defined(KCV_GLR_HOST_EMULATION)
#include <cstring>
#endif

namespace kcv::glr::arch {

/// One thread's 16-byte copy (both addresses 16-byte aligned); zero fill when !valid.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, bool valid) {
#if defined(KCV_GLR_HOST_EMULATION)
  if (valid)
    std::memcpy(smem_dst, gmem_src, 16);
  else
    std::memset(smem_dst, 0, 16);
#elif defined(__CUDA_ARCH__)
  const auto dst = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_dst));
  const int src_size = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src),
               "r"(src_size)
               : "memory");
#else
  (void)smem_dst;
  (void)gmem_src;
  (void)valid;
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && !defined(KCV_GLR_HOST_EMULATION)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && !defined(KCV_GLR_HOST_EMULATION)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace kcv::glr::arch
