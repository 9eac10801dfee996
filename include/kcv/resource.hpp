// File: include/kcv/resource.hpp
// Static resource facts of device code, for RES-02: parsed from `ptxas -v` logs,
// `cuobjdump --dump-resource-usage` output and PTX text (tcgen05.alloc/dealloc for Blackwell
// tensor memory). Parsers are strict about what they recognise and return kParse errors with the
// offending line rather than guessing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kcv/expected.hpp"

namespace kcv {

struct KernelResources {
  std::string name;       // mangled or demangled kernel (entry) name
  std::string arch;       // "sm_90a"
  int64_t registers = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t stack_bytes = 0;
  int64_t shared_bytes = 0;        // static shared memory (cuobjdump's SHARED: includes the
                                   // 1 KiB system reservation it shows on sm_90+ for some kernels)
  int64_t constant_bytes = 0;
  int64_t max_threads = 0;         // .maxntid / __launch_bounds__, 0 if unknown
  std::vector<int64_t> tmem_alloc_columns;  // every tcgen05.alloc request with a static count
  int64_t tmem_deallocs = 0;
  bool tmem_dynamic_alloc = false;  // an alloc whose column count is not a constant
  int64_t tmem_relinquishes = 0;    // tcgen05.relinquish_alloc_permit instructions
};

/// Which tool's output a report came from; it decides which KernelResources fields are known:
///  kPtxasLog:  registers, spills, stack, shared, constant (cmem, when ptxas prints it).
///  kCuobjdump: registers, stack, shared, constant; spill counts are NOT known (left 0).
///  kPtx:       shared (declared), max_threads (.maxntid/.reqntid), TMEM; registers, spills
///              and stack are NOT known (left 0).
enum class ResourceFormat { kPtxasLog, kCuobjdump, kPtx };

struct ResourceReport {
  std::string source;  // file or description
  ResourceFormat format = ResourceFormat::kPtxasLog;
  std::vector<KernelResources> kernels;
};

/// Architecture limits used when a contract declares no budget. sm_90/sm_90a: 227 KiB opt-in
/// shared memory per block, 255 registers, 1024 threads, no TMEM (tmem_columns 0);
/// sm_100/sm_100a (and the other sm_10x): the same plus 512 TMEM columns. An arch kcv does not
/// know gets the defaults below (the largest limits), so it never causes a false failure.
struct ArchLimits {
  int64_t max_registers_per_thread = 255;
  int64_t max_shared_per_block = 232448;  // sm_90 opt-in: 227 KiB
  int64_t max_threads_per_block = 1024;
  int64_t tmem_columns = 512;             // sm_100: 128 lanes x 512 columns
};
ArchLimits arch_limits(std::string_view arch);

Expected<ResourceReport> parse_ptxas_log(std::string_view text);
Expected<ResourceReport> parse_cuobjdump_resource_usage(std::string_view text);
Expected<ResourceReport> parse_ptx(std::string_view text);
/// Picks the parser from the content (PTX, ptxas -v log, cuobjdump output) or the file kind
/// (.cubin/.o: runs cuobjdump --dump-resource-usage when it is on PATH).
Expected<ResourceReport> load_resource_report(const std::string& path);

}  // namespace kcv
