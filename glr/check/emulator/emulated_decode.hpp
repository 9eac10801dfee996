// File: glr/check/emulator/emulated_decode.hpp
// The decode kernel's body (glr/kernels/decode_kernel.cuh) run on the CPU: every CTA of the decode
// grid in turn, each as 32 host threads (one per lane) with __syncwarp() as their barrier, over
// host buffers. The GPU runs the same source (decode.cu); the decode candidate of
// libkcv_glr_emulated.so (decode_abi.hpp) and glr_decode_emulated run it here.
#pragma once

#include "check/decode_abi.hpp"
#include "glr/kernels/decode.hpp"

namespace kcv::glr::check {

/// Runs the decode grid of `p` (host pointers) to completion.
void run_decode_emulated(const gpu::detail::DecodeParams& p);

/// A DecodeBackend: the call's validated parameters (decode_abi.hpp) run by run_decode_emulated.
[[nodiscard]] Expected<DecodeResult> run_decode_on_host(const DecodeCall& call);

}  // namespace kcv::glr::check
