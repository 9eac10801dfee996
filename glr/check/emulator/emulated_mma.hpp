// File: glr/check/emulator/emulated_mma.hpp
// run_mma_emulated: the tensor-core forward and backward of glr/dev run on the CPU through their
// host emulation (glr/dev/host_runner.hpp: the same kernel source as host C++, one host thread per
// warp), on one GLR op call adapted by mma_adapter.hpp and sequenced by mma_call.hpp, exactly as
// the GPU Runner (device_run_mma.hpp) does: host buffers poisoned with 0xFF stand in for device
// memory. Value tile 32, as the dev tests' first run. HostInputs::device_offset is ignored, as by
// run_emulated: host addresses say nothing about the GPU's.
#pragma once

#include "check/device_results.hpp"
#include "check/inputs.hpp"
#include "kcv/expected.hpp"

namespace kcv::glr::check {

[[nodiscard]] Expected<DeviceResults> run_mma_emulated(const HostInputs& in);

}  // namespace kcv::glr::check
