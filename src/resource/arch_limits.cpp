// File: src/resource/arch_limits.cpp
// Per-architecture hardware limits for RES-02 when a contract declares no budget (CUDA C++
// Programming Guide, "Technical Specifications per Compute Capability"). Only the data-center
// architectures kcv targets are listed; the family suffixes `a`/`f` do not change these limits.
#include <charconv>
#include <string>

#include "kcv/resource.hpp"

namespace kcv {
namespace {

constexpr int64_t kKiB = 1024;

// "sm_100a" -> 100; -1 when the text is not of the form sm_<digits>[a|f].
int sm_number(std::string_view arch) {
  if (!arch.starts_with("sm_")) return -1;
  arch.remove_prefix(3);
  if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) arch.remove_suffix(1);
  int n = 0;
  auto [ptr, ec] = std::from_chars(arch.data(), arch.data() + arch.size(), n);
  if (arch.empty() || ec != std::errc{} || ptr != arch.data() + arch.size()) return -1;
  return n;
}

}  // namespace

ArchLimits arch_limits(std::string_view arch) {
  ArchLimits limits;  // defaults: the largest limits kcv knows
  const int sm = sm_number(arch);
  if (sm == 90) {
    limits.max_shared_per_block = 227 * kKiB;
    limits.tmem_columns = 0;  // Hopper has no tensor memory
  } else if (sm >= 100 && sm < 110) {
    limits.max_shared_per_block = 227 * kKiB;
    limits.tmem_columns = 512;
  }
  return limits;
}

}  // namespace kcv
