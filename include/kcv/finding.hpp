// File: include/kcv/finding.hpp
// What a failing verdict found, as a type. The audit's reason-based numbers count findings, never
// the gate that happened to notice them: one defect is one finding, and the tolerance-free floor
// counts only findings that need no bound to be a defect (docs/09_report.md). A judge sets the
// finding of every kFail it returns; pass, not_applicable and error carry kNone.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "kcv/expected.hpp"

namespace kcv {

enum class Finding : uint8_t {
  kNone,
  // Tolerance-free: no choice of threshold excuses these.
  kCallFailed,         // crash, timeout, exception or kernel error on an input the reference takes
  kBadOutput,          // outputs of the wrong count, shape or dtype
  kInputModified,      // an input (or its padding) changed during the call
  kWrittenOutside,     // a write outside the outputs: a guard band or row padding changed
  kOutputUnwritten,    // an output element still holds the call's sentinel
  kReadOutside,        // results changed when only memory outside the inputs changed
  kClassMismatch,      // NaN/+Inf/-Inf (or finite) where every sanctioned result has another class
  kSubnormalFlushed,   // a subnormal result or input read as zero where the profile keeps them
  kNondeterministic,   // bitwise different outputs for identical inputs, determinism declared
  kResourceOverLimit,  // registers, spills, shared memory, threads or TMEM over a limit
  kToolReport,         // compute-sanitizer reported an error (memcheck, initcheck, racecheck)
  // Bound-based: a derived bound (in value or in bits) is exceeded.
  kValueOverBound,     // |y - y*| > tau
  kPrecisionLost,      // bits lost against the declared precision over the threshold
  kScheduleDependent,  // results differ across schedules by more than the bound allows
};

inline constexpr std::array<Finding, 15> kAllFindings = {Finding::kNone,
                                                         Finding::kCallFailed,
                                                         Finding::kBadOutput,
                                                         Finding::kInputModified,
                                                         Finding::kWrittenOutside,
                                                         Finding::kOutputUnwritten,
                                                         Finding::kReadOutside,
                                                         Finding::kClassMismatch,
                                                         Finding::kSubnormalFlushed,
                                                         Finding::kNondeterministic,
                                                         Finding::kResourceOverLimit,
                                                         Finding::kToolReport,
                                                         Finding::kValueOverBound,
                                                         Finding::kPrecisionLost,
                                                         Finding::kScheduleDependent};

/// "class_mismatch"; the store's `finding` column and the report use these names.
std::string_view finding_name(Finding f);
Expected<Finding> parse_finding(std::string_view name);
/// True for the findings no tolerance can excuse (the first group above, kNone excluded).
bool is_tolerance_free(Finding f);

}  // namespace kcv
