// File: glr/arch/cp_async.cuh
// Asynchronous global → shared copies (sm_80 and later, valid on sm_90a):
//   cp.async.cg.shared.global [dst], [src], 16, src_size   16 bytes, zero-filled past src_size
//   cp.async.commit_group / cp.async.wait_group N
// A copy with `valid` false writes 16 zero bytes and reads nothing (src_size 0), which is how the
// GLR kernels fill the padded rows of a ragged chunk. Copies are visible to the issuing thread
// after wait_group, to the rest of the CTA after a barrier that follows it.
// Host emulation: a copy reads its source at issue, fills its 16 destination bytes with NaN
// (0xff) and holds the source's bytes in the issuing host thread's (the warp's) open group; commit
// closes the group; wait_group N writes the bytes of every closed group but the N newest to shared
// memory. A read of a tile between a copy's issue and the wait that lands it sees NaN, also where
// the tile held the previous step's values, and a write into a tile whose copy is in flight is
// overwritten when it lands: either race is one on the device too.
#pragma once

#include <cstdint>

#include "glr/arch/lanes.cuh"

#if defined(KCV_GLR_HOST_EMULATION)
#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <vector>
#endif

namespace kcv::glr::arch {

#if defined(KCV_GLR_HOST_EMULATION)
namespace emulated_copies {
struct Copy {
  void* dst;
  std::array<std::byte, 16> bytes;
};
/// The calling warp's copies since its last commit, and its committed groups, oldest first.
inline thread_local std::vector<Copy> open_group;
inline thread_local std::deque<std::vector<Copy>> committed;

inline void land(const std::vector<Copy>& group) {
  for (const Copy& c : group) std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
}
/// Forgets the calling warp's copies that never were waited for (the runner, at a CTA's end:
/// they must not land in the next CTA's shared memory).
inline void drop_pending() {
  open_group.clear();
  committed.clear();
}
}  // namespace emulated_copies
#endif

/// One thread's 16-byte copy (both addresses 16-byte aligned); zero fill when !valid.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, bool valid) {
#if defined(KCV_GLR_HOST_EMULATION)
  emulated_copies::Copy copy{smem_dst, {}};
  if (valid) std::memcpy(copy.bytes.data(), gmem_src, copy.bytes.size());
  emulated_copies::open_group.push_back(copy);
  std::memset(smem_dst, 0xff, copy.bytes.size());  // in flight: NaN until its wait lands it
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
#if defined(KCV_GLR_HOST_EMULATION)
  emulated_copies::committed.push_back(std::move(emulated_copies::open_group));
  emulated_copies::open_group.clear();
#elif defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if defined(KCV_GLR_HOST_EMULATION)
  while (emulated_copies::committed.size() > static_cast<std::size_t>(kPending)) {
    emulated_copies::land(emulated_copies::committed.front());
    emulated_copies::committed.pop_front();
  }
#elif defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace kcv::glr::arch
