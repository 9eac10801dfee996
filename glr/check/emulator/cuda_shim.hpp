// File: glr/check/emulator/cuda_shim.hpp
// Just enough of the CUDA execution model to compile the GLR stage kernels (glr/tiles,
// glr/kernels/stage_*.cuh) as host C++ and run them on the CPU: threadIdx / blockIdx (per host
// thread), blockDim, __syncthreads() as a std::barrier over the emulated CTA's threads, and
// __launch_bounds__ as nothing. The CUDA headers already make __global__, __device__ and
// __shared__ empty for a host compiler and give bf16 host conversions. Include this before any
// kernel header; emulated_device.cpp defines the shared-memory buffer and runs the grids.
#pragma once

#ifdef __CUDACC__
#error "the emulator compiles the kernel sources as host C++; do not build it with nvcc"
#endif

#define __launch_bounds__(...)

#include <cuda_bf16.h>
#include <vector_types.h>

#include <barrier>
#include <cmath>

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline dim3 blockDim;

namespace kcv::glr::check::emulator {
/// The barrier of the CTA being emulated; null when one host thread plays the whole CTA.
inline std::barrier<>* cta_barrier = nullptr;
}  // namespace kcv::glr::check::emulator

inline void __syncthreads() {
  if (kcv::glr::check::emulator::cta_barrier != nullptr)
    kcv::glr::check::emulator::cta_barrier->arrive_and_wait();
}
