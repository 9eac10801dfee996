// File: include/kcv/contract.hpp
// A contract: what a kernel promises (dtypes, accumulator, profile, determinism, aliasing,
// which sizes may vary, resource budgets). Parsed from JSON, documented field by field in
// docs/01_contracts_and_profiles.md. Unknown fields are an error: a typo must not silently
// weaken a contract.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kcv/dtype.hpp"
#include "kcv/expected.hpp"
#include "kcv/profile.hpp"

namespace kcv {

struct LaunchConfig {
  int32_t block = 0;  // 0: the kernel's default
  int32_t threads = 1;
  bool operator==(const LaunchConfig&) const = default;
};

/// Resource budgets a kernel declares (gate RES-02). Unset = only the architecture's limits.
struct Budgets {
  std::optional<int64_t> registers_per_thread;
  std::optional<int64_t> spill_bytes;   // 0: no spills allowed
  std::optional<int64_t> stack_bytes;   // local-memory stack frame per thread; 0: none
  std::optional<int64_t> shared_bytes;  // static + dynamic per block
  std::optional<int64_t> threads_per_block;
  std::optional<int64_t> tmem_columns;  // Blackwell tensor memory per CTA
  std::optional<int64_t> workspace_bytes;
};

struct Contract {
  std::string op;
  std::vector<DType> input_dtypes;   // empty: f32 for every input
  std::vector<DType> output_dtypes;  // empty: the op's default for the input dtype
  DType accumulator = DType::kF32;
  ProfileId profile = ProfileId::kStrict;
  bool deterministic = true;
  bool in_place = false;
  bool layout_invariant = false;         // strided views must give bitwise the contiguous result
  std::map<std::string, double> params;  // op parameters (override the op defaults)
  std::map<std::string, int64_t> reference_sizes;  // e.g. {"M": 64, "N": 1024}
  std::vector<std::string> fixed_dims;             // sizes that may not vary (shape-specific)
  int64_t tile = 256;                              // the kernel's block size, for tile±1 shapes
  std::vector<LaunchConfig> launch_configs;        // ORD-03 sweep; empty: a default sweep
  Budgets budgets;
  std::string arch;  // "sm_90a", "sm_100a"; empty = CPU kernel
};

/// Parses a contract; `op` fills Contract::op when the JSON does not name one.
Expected<Contract> parse_contract(std::string_view json, std::string_view op = {});
std::string contract_to_json(const Contract& c);

}  // namespace kcv
