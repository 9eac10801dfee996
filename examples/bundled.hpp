// File: examples/bundled.hpp
// The bundled kernels as a C++ table, for code that links kcv_examples_static (the CLI's
// `kcv calibrate`, the calibration test). It is the very table libkcv_examples.so exports
// through kcv_kernels(): positive control first, then the red team gate by gate. A red-team
// kernel names its intended gate in its name ("redteam.cmp01.missing_tail_mask" -> CMP-01),
// so the name is the single source of that fact.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <kcv/gate_id.hpp>
#include <kcv/kcv_kernel.h>

/// The bundled table and its length (the same array kcv_kernels() returns).
const kcv_kernel* kcv_bundled_kernels(int32_t* count);
/// The same table as a span.
std::span<const kcv_kernel> kcv_bundled_kernels();
/// Directory of the device code that RES-02 kernels point to (absolute paths are used, so a
/// candidate needs no base directory); empty when the build had no nvcc.
std::string_view kcv_bundled_base_dir();

/// "CMP-01" for "redteam.cmp01.*", ...; empty for positive-control kernels and other names.
std::string_view intended_gate(const kcv_kernel& k);
/// The same fact as a gate id: nullopt for positive-control kernels and other names.
std::optional<kcv::GateId> intended_gate(std::string_view kernel_name);

bool is_control_kernel(const kcv_kernel& k);
bool is_redteam_kernel(const kcv_kernel& k);
