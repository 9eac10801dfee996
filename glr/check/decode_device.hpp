// File: glr/check/decode_device.hpp
// The decode kernel on the GPU for one DecodeCall (decode_abi.hpp): uploads the fp32 inputs and
// the initial state at the call's device offset, fills o with 0xFF (NaN), runs gpu::decode on one
// stream, synchronises and downloads o and the final state.
#pragma once

#include "check/decode_abi.hpp"

namespace kcv::glr::check {

/// Errors carry the failing CUDA call and file:line.
[[nodiscard]] Expected<DecodeResult> run_decode_device(const DecodeCall& call);

}  // namespace kcv::glr::check
