// File: glr/launch/decode_params.hpp
// The decode kernel's parameter block from a validated call: what gpu::decode (decode.cpp)
// launches, and what the CPU emulation of the decode kernel (glr/check/emulator) runs, so both
// go through the same validation and the same DecodeParams. No CUDA call here.
#pragma once

#include "glr/kernels/decode.hpp"
#include "kcv/expected.hpp"
#include "kcv/glr/gpu.hpp"

namespace kcv::glr::gpu::detail {

/// validate_decode, then the parameter block over the caller's pointers.
[[nodiscard]] Expected<DecodeParams> decode_params(const Dims& dims, const Config& cfg,
                                                   const DecodeInputs& in, float* o, float* state);

}  // namespace kcv::glr::gpu::detail
