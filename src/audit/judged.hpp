// File: src/audit/judged.hpp
// The judged kernels of a store as the reason-based numbers see them, and the one rule that
// says whether a kernel counts under a measure (any violation, tolerance-free floor) and a
// contract choice (docs/09_report.md). The rule is three-valued: a fail that names no finding, or
// no scope, leaves a kernel's membership unknown wherever the rule needs that field, and an
// unknown kernel makes its rate absent. Nothing here looks at which gate failed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/sqlite_db.hpp"
#include "kcv/audit.hpp"

namespace kcv::audit {

struct JudgedFail {
  std::string gate;
  std::optional<Finding> finding;   // nullopt: '' (recorded before findings), 'none', unknown name
  std::optional<ProbeScope> scope;  // nullopt: '' or an unknown name
};

/// One kernel judged under one profile: status ok, at least one pass or fail verdict.
struct JudgedKernel {
  std::string profile;
  std::string kernel_id;
  std::string op_class;
  bool determinism_declared = false;
  bool replica_accepted = false;
  bool original_accepted = false;
  std::vector<JudgedFail> fails;
};

enum class Measure { kAnyViolation, kFloor };
enum class Membership { kOut, kIn, kUnknown };

/// kIn when some fail counts under `m` and `c`; kUnknown when none does but one might (it lacks
/// a finding or scope the rule needs); kOut otherwise.
Membership membership(const JudgedKernel& k, Measure m, ContractChoice c);

/// Every (profile, kernel) judged, ordered by profile, then kernel id.
Expected<std::vector<JudgedKernel>> judged_kernels(sql::Db& db);

}  // namespace kcv::audit
