// File: glr/check/device_run.hpp
// The GPU Runner: runs the launcher on one HostInputs: uploads the inputs, poisons every output and
// the whole workspace with 0xFF bytes (NaN in bf16 and fp32), runs forward then backward on one
// stream, synchronises, checks every CUDA call, and downloads each output as raw bytes. A poisoned
// value that survives (an element no thread wrote, a workspace read before its write) shows up as
// NaN in the comparison; the raw bytes serve the bitwise determinism check.
#pragma once

#include "check/device_results.hpp"
#include "check/inputs.hpp"
#include "kcv/expected.hpp"

namespace kcv::glr::check {

/// Forward and backward on the device. Errors carry the failing CUDA call and file:line.
[[nodiscard]] Expected<DeviceResults> run_device(const HostInputs& in);

}  // namespace kcv::glr::check
