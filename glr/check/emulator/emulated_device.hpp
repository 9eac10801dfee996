// File: glr/check/emulator/emulated_device.hpp
// run_emulated: the same forward + backward as run_device (device_run.hpp), but with every GLR
// stage kernel compiled as host C++ and run on the CPU (cuda_shim.hpp), on "device" buffers that
// are host vectors poisoned with 0xFF exactly as on the GPU; shared memory is poisoned before
// every CTA. Two modes:
//   threads_per_cta = 1         one host thread runs each CTA's element loops in order — checks the
//                               kernels' algebra, indexing and masking, fast;
//   threads_per_cta = kThreads  each CTA is kThreads host threads with __syncthreads() as a
//                               barrier — under ThreadSanitizer this finds a missing barrier
//                               (a shared-memory race) in the kernels.
// This is how the kernels are checked without a GPU (CI, this repository's development machine).
#pragma once

#include "check/device_run.hpp"
#include "check/inputs.hpp"
#include "kcv/expected.hpp"

namespace kcv::glr::check {

[[nodiscard]] Expected<DeviceResults> run_emulated(const HostInputs& in, int threads_per_cta);

}  // namespace kcv::glr::check
