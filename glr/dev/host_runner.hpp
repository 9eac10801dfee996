// File: glr/dev/host_runner.hpp
// The tensor-core forward and backward (chunked_mma_forward.hpp, chunked_mma_backward.hpp) run on
// the CPU: the same kernel source, compiled as host C++ with glr/check/emulator/cuda_shim.hpp, one
// host thread per warp (__syncthreads() a barrier among a CTA's), CTAs one after another,
// the warp-collective atoms of glr/arch computed for all 32 lanes with the PTX ISA's fragment
// layouts. Shared memory is
// poisoned (0xFF) before every CTA. Pointers in p are host pointers. Not to be linked with the
// CUDA launcher (its host stubs carry the kernels' names).
#pragma once

#include "glr/dev/chunked_mma_backward.hpp"

namespace kcv::glr::dev {

/// Both kernels of `member` over their grids on the CPU. value_tile: 32 or 64.
[[nodiscard]] Status emulate_mma_forward(Member member, const MmaForwardParams& p, int value_tile);

/// The dH scan's value tile: the device's (scan_value_tile: 16 at value tile 32 without the delta
/// rule), or the forward's value tile itself (the same dh and dh0 bits; for tests).
enum class ScanTile { kDefault, kValueTile };

/// The backward's launches of `member` on the CPU (p's pointers host pointers).
[[nodiscard]] Status emulate_mma_backward(Member member, const MmaBackwardParams& p, int value_tile,
                                          ScanTile scan_tile = ScanTile::kDefault);

}  // namespace kcv::glr::dev
