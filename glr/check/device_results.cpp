// File: glr/check/device_results.cpp
// Widening and lookup for device_results.hpp.
#include "check/device_results.hpp"

#include <cstring>

#include "check/bf16.hpp"

namespace kcv::glr::check {

std::vector<double> DeviceTensor::values() const {
  std::vector<double> out;
  if (dtype == gpu::DType::kBFloat16) {
    out.resize(bytes.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      out[i] = bf16_to_float(b);
    }
  } else {
    out.resize(bytes.size() / 4);
    for (std::size_t i = 0; i < out.size(); ++i) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      out[i] = f;
    }
  }
  return out;
}

const DeviceTensor* DeviceResults::find(const std::string& name) const {
  for (const DeviceTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace kcv::glr::check
