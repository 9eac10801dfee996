// File: glr/launch/workspace.hpp
// Layout of the device workspace: the sequence index and the fp32 tensors that carry results
// between stages (params.hpp lists them), each piece 256-byte aligned. The same function sizes the
// workspace (base = nullptr) and hands out the pointers (base = the caller's buffer), so the two
// can never disagree. The backward recomputes the forward intermediates and adds its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "glr/kernels/params.hpp"
#include "kcv/glr/gpu.hpp"

namespace kcv::glr::gpu::detail {

/// The sizes every stage derives from Dims: tokens = B·T, sequences N, chunk_bound ≥ Σ ⌈T_n/64⌉.
struct Extents {
  std::int64_t tokens = 0;
  std::int64_t sequences = 0;
  std::int64_t chunk_bound = 0;
  int gate_width = 0;
  bool delta_rule = false;
};

Extents extents(const Dims& dims, const Config& cfg);

/// Params with sizes, options and the caller's q, k, v, h0 set; workspace and outputs unset.
Params make_params(const Dims& dims, const Config& cfg, const Extents& ext, const Inputs& in);

/// Bytes of the workspace; with base non-null also sets p's workspace pointers into base.
std::size_t carve_workspace(const Dims& dims, const Extents& ext, bool backward, std::byte* base,
                            Params& p);

}  // namespace kcv::glr::gpu::detail
