// File: src/exec/sentinel.hpp
// The fixed pattern of input guard bands and padding (a signalling NaN distinct from every
// output sentinel; see sentinel.cpp). The per-call output sentinel is kcv::sentinel_bits.
#pragma once

#include <cstdint>

#include "kcv/dtype.hpp"

namespace kcv::exec {

uint64_t input_guard_bits(DType t);

}  // namespace kcv::exec
