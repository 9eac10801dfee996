// File: glr/check/device_run_mma.hpp
// run_mma_device: the GPU Runner of the tensor-core forward and backward of glr/dev
// (chunked_mma_forward.hpp, chunked_mma_backward.hpp) on one GLR op call, adapted by
// mma_adapter.hpp (zero-padded head dims, widened gates, explicit int64 cu_seqlens, bf16 β) and
// sequenced by mma_call.hpp: inputs uploaded HostInputs::device_offset bytes past their
// allocations' starts, every output and the workspace poisoned with 0xFF, mma_forward, the
// workspace poisoned again, mma_backward (which recomputes the forward), one synchronisation,
// the outputs downloaded and sliced back. Both at default_value_tile for this device.
#pragma once

#include "check/device_results.hpp"
#include "check/inputs.hpp"
#include "kcv/expected.hpp"

namespace kcv::glr::check {

/// Forward and backward on the device. Errors carry the failing CUDA call and file:line, or the
/// kernels' refusal (head dims above 128).
[[nodiscard]] Expected<DeviceResults> run_mma_device(const HostInputs& in);

}  // namespace kcv::glr::check
