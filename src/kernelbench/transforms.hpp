// File: src/kernelbench/transforms.hpp
// Probe transforms applied to a module's drawn inputs (transforms.cpp says how).
#pragma once

#include <vector>

#include "kcv/probe.hpp"
#include "kcv/tensor.hpp"

namespace kcv::kb {

/// One tensor per drawn tensor input, in order.
std::vector<HostTensor> transform_inputs(const Probe& probe, const std::vector<HostTensor>& drawn);

}  // namespace kcv::kb
