// File: glr/arch/lanes.cuh
// The execution model the tensor-core code of the GLR kernels is written against, on the device
// and in the host emulation. On the device a thread is one lane and a register fragment holds that
// lane's registers (kLanes = 1). In the host emulation (KCV_GLR_HOST_EMULATION, set by
// glr/check/emulator/cuda_shim.hpp) one host thread plays a whole warp: threadIdx.x is the warp's
// first thread, a fragment holds the registers of all 32 lanes (kLanes = 32), and every
// warp-collective atom (ldmatrix, mma) computes all lanes at once with the lane mapping of the PTX
// ISA. Kernel code is the same text in both: per-lane work goes through for_each_lane, per-thread
// work of a CTA through cta_for (same element → thread ownership as on the device), warp-level work
// through the atoms. The only place that needs the distinction is this directory.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(KCV_GLR_HOST_EMULATION)
#include <cstdlib>
#include <cstring>
#endif

namespace kcv::glr::arch {

inline constexpr int kWarpSize = 32;

#if defined(KCV_GLR_HOST_EMULATION)
inline constexpr int kLanes = 32;  ///< lanes a fragment holds: all of the warp
/// The dynamic shared memory of the emulated CTA (defined by the host runner).
extern std::byte* emulated_shared_memory;
#else
inline constexpr int kLanes = 1;  ///< lanes a fragment holds: this thread's own
#endif

/// Unrolls the loop that follows on the device, so that the register arrays it indexes are indexed
/// by constants and stay in registers (a rolled loop over a fragment array puts the array in
/// local memory: a stack frame in ptxas's report). The host emulation's compiler has no such
/// pragma and needs none.
#if defined(KCV_GLR_HOST_EMULATION)
#define KCV_GLR_UNROLL
#else
#define KCV_GLR_UNROLL _Pragma("unroll")
#endif

/// Keeps the loop that follows rolled on the device: for an outer loop around an unrolled pass
/// over a warp's fragments, whose body would otherwise be copied once per trip (instruction-cache
/// pressure, not registers, is what that costs).
#if defined(KCV_GLR_HOST_EMULATION)
#define KCV_GLR_ROLLED
#else
#define KCV_GLR_ROLLED _Pragma("unroll 1")
#endif

/// Registers of one fragment: N values of type T per lane, for the lanes this thread holds.
template <typename T, int N>
struct Frag {
  T r[kLanes][N];
};

/// The Frag::r index of lane `lane`'s registers in the calling thread's fragments: the lane itself
/// in the host emulation; on the device 0, the thread's own (valid for the calling lane only).
__device__ __forceinline__ constexpr int lane_slot(int lane) { return kLanes == 1 ? 0 : lane; }

/// Index of the calling thread's warp in the CTA.
__device__ __forceinline__ int warp_id() { return static_cast<int>(threadIdx.x) / kWarpSize; }

/// f(lane, slot) for every lane the calling thread plays; `slot` indexes Frag::r. Device: once,
/// (lane id, 0). Host: 32 times, (l, l).
template <typename F>
__device__ __forceinline__ void for_each_lane(F&& f) {
#if defined(KCV_GLR_HOST_EMULATION)
  for (int l = 0; l < kWarpSize; ++l) f(l, l);
#else
  f(static_cast<int>(threadIdx.x) % kWarpSize, 0);
#endif
}

/// f(i) for i in [0, n), element i owned by thread i mod blockDim.x (on the host by the lane of the
/// warp that thread belongs to). No barrier inside.
template <typename F>
__device__ __forceinline__ void cta_for(int n, F&& f) {
  const int step = static_cast<int>(blockDim.x);
  for_each_lane([&](int lane, int) {
    for (int i = warp_id() * kWarpSize + lane; i < n; i += step) f(i);
  });
}

/// Named barrier `id` (1..15; 0 is __syncthreads()'s) among `threads` threads of the CTA (a
/// multiple of the warp size, the same at every call of one round): the warps of a kernel that
/// synchronise without the rest (PTX bar.sync id, threads). Orders shared-memory accesses as
/// __syncthreads() does among the warps that arrive.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
#if defined(KCV_GLR_HOST_EMULATION)
  namespace emu = check::emulator;
  if (emu::cta_barrier == nullptr) return;  // one host thread plays the whole CTA
  emu::named_barriers[id].arrive_and_wait(threads / emu::lanes_per_host_thread);
#else
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}

/// Orders the calling warp's memory accesses before it against those after it, among the warp's
/// lanes (its reads of a shared tile before the copies that refill it): __syncwarp() on the
/// device; nothing in the host emulation, where one host thread plays the warp in program order.
__device__ __forceinline__ void warp_sync() {
#if !defined(KCV_GLR_HOST_EMULATION)
  __syncwarp();
#endif
}

/// Whether f(lane) holds for every lane of the calling warp: a vote on the device; every lane's f
/// in turn in the host emulation.
template <typename F>
__device__ __forceinline__ bool warp_all(F&& f) {
#if defined(KCV_GLR_HOST_EMULATION)
  bool all = true;
  for (int l = 0; l < kWarpSize; ++l) all = f(l) && all;
  return all;
#else
  return __all_sync(0xffffffffu, f(static_cast<int>(threadIdx.x) % kWarpSize));
#endif
}

/// The CTA's dynamic shared memory viewed as its shared-storage struct.
template <typename Storage>
__device__ __forceinline__ Storage& shared_storage() {
#if defined(KCV_GLR_HOST_EMULATION)
  return *reinterpret_cast<Storage*>(emulated_shared_memory);
#else
  // 1024: the start of a 128-byte swizzled tile (glr/arch/wgmma.cuh) in the shared window
  extern __shared__ __align__(1024) unsigned char dynamic_smem[];
  return *reinterpret_cast<Storage*>(dynamic_smem);
#endif
}

/// A 32-bit store (two packed bf16) to shared or global memory.
__device__ __forceinline__ void store_u32(void* p, std::uint32_t v) {
#if defined(KCV_GLR_HOST_EMULATION)
  std::memcpy(p, &v, sizeof v);
#else
  *static_cast<std::uint32_t*>(p) = v;
#endif
}

/// Four 32-bit words (eight packed bf16) from 16-byte aligned global or shared memory, one
/// 16-byte load on the device.
__device__ __forceinline__ void load_u32x4(const void* p, std::uint32_t (&w)[4]) {
#if defined(KCV_GLR_HOST_EMULATION)
  // The device's 16-byte load faults on a misaligned address; the emulation must not pass it.
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) std::abort();
  std::memcpy(w, p, sizeof w);
#else
  const uint4 v = *static_cast<const uint4*>(p);
  w[0] = v.x;
  w[1] = v.y;
  w[2] = v.z;
  w[3] = v.w;
#endif
}

/// Four 32-bit words (eight packed bf16) to 16-byte aligned global or shared memory, one 16-byte
/// store on the device.
__device__ __forceinline__ void store_u32x4(void* p, const std::uint32_t (&w)[4]) {
#if defined(KCV_GLR_HOST_EMULATION)
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) std::abort();  // as load_u32x4
  std::memcpy(p, w, sizeof w);
#else
  *static_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
#endif
}

/// Two floats from 8-byte aligned global or shared memory, one 8-byte load on the device.
__device__ __forceinline__ void load_f32x2(const float* p, float& v0, float& v1) {
#if defined(KCV_GLR_HOST_EMULATION)
  if (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) std::abort();  // as load_u32x4
  v0 = p[0];
  v1 = p[1];
#else
  const float2 x = *reinterpret_cast<const float2*>(p);
  v0 = x.x;
  v1 = x.y;
#endif
}

/// Two floats to 8-byte aligned global or shared memory, one 8-byte store on the device: their
/// bits as one 64-bit word (v0 the low half). A float2 store compiles to two 4-byte stores in the
/// backward's kernels (st.global.f32 at +0 and +4 in the PTX), where the 64-bit word stays one
/// 8-byte store.
__device__ __forceinline__ void store_f32x2(float* p, float v0, float v1) {
#if defined(KCV_GLR_HOST_EMULATION)
  if (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) std::abort();  // as load_u32x4
  p[0] = v0;
  p[1] = v1;
#else
  *reinterpret_cast<unsigned long long*>(p) =
      (static_cast<unsigned long long>(__float_as_uint(v1)) << 32) | __float_as_uint(v0);
#endif
}

/// Four floats from 16-byte aligned global or shared memory, one 16-byte load on the device (a
/// broadcast when every lane reads the same shared address).
__device__ __forceinline__ void load_f32x4(const float* p, float* v) {
#if defined(KCV_GLR_HOST_EMULATION)
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) std::abort();  // as load_u32x4
  std::memcpy(v, p, 4 * sizeof(float));
#else
  const float4 x = *reinterpret_cast<const float4*>(p);
  v[0] = x.x;
  v[1] = x.y;
  v[2] = x.z;
  v[3] = x.w;
#endif
}

/// Four floats to 16-byte aligned global or shared memory, one 16-byte store on the device.
__device__ __forceinline__ void store_f32x4(float* p, const float* v) {
#if defined(KCV_GLR_HOST_EMULATION)
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) std::abort();  // as load_u32x4
  std::memcpy(p, v, 4 * sizeof(float));
#else
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
#endif
}

}  // namespace kcv::glr::arch
