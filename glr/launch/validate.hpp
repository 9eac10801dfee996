// File: glr/launch/validate.hpp
// Argument checks of the GPU launcher, run before anything touches the device. Each message names
// the offending field and what was expected, so the Python front can raise it as is.
#pragma once

#include "kcv/expected.hpp"
#include "kcv/glr/gpu.hpp"

namespace kcv::glr::gpu::detail {

/// Sizes, GVA ratio, head dims, batch vs cu_seqlens, grid limits, scale.
[[nodiscard]] Status validate_dims(const Dims& dims, const Config& cfg);

/// validate_dims plus the input pointers (present exactly when the member needs them, aligned)
/// and the host copy of cu_seqlens when given.
[[nodiscard]] Status validate_inputs(const Dims& dims, const Config& cfg, const Inputs& in);

/// Output pointers of the forward.
[[nodiscard]] Status validate_outputs(const Config& cfg, const ForwardOutputs& out);

/// Cotangent and gradient pointers of the backward.
[[nodiscard]] Status validate_grads(const Config& cfg, const Cotangents& cot,
                                    const Gradients& grads);

/// The caller's workspace: present, 256-byte aligned and at least `needed` bytes.
[[nodiscard]] Status validate_workspace(const void* workspace, std::size_t bytes,
                                        std::size_t needed);

}  // namespace kcv::glr::gpu::detail
