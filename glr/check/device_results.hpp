// File: glr/check/device_results.hpp
// The outputs of one forward + backward as raw bytes in their storage dtypes, whoever produced
// them (the GPU, device_run.hpp, or the CPU emulator of the kernels, emulator/): o, ht, dq, dk,
// dv, dg (gated members), dbeta (delta rule), dh0. Raw bytes serve the bitwise determinism check;
// values() widens them for the comparison. A Runner produces them from a HostInputs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "check/inputs.hpp"
#include "kcv/expected.hpp"
#include "kcv/glr/gpu.hpp"

namespace kcv::glr::check {

struct DeviceTensor {
  std::string name;
  gpu::DType dtype = gpu::DType::kFloat32;
  std::vector<std::uint8_t> bytes;

  std::vector<double> values() const;  ///< widened to fp64
};

struct DeviceResults {
  std::vector<DeviceTensor> tensors;
  const DeviceTensor* find(const std::string& name) const;
};

/// Forward and backward of one problem; errors say what failed.
using Runner = std::function<Expected<DeviceResults>(const HostInputs&)>;

}  // namespace kcv::glr::check
