// File: glr/launch/errors.hpp
// The argument errors of the GPU launcher: ErrorCode::kInvalidArgument in the "glr::gpu" context.
// Host-only (no CUDA runtime call), so the CPU emulator of the kernels links it too.
#pragma once

#include <string>

#include "kcv/expected.hpp"

namespace kcv::glr::gpu::detail {

[[nodiscard]] Error invalid_argument(const std::string& message);

}  // namespace kcv::glr::gpu::detail
