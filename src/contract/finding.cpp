// File: src/contract/finding.cpp
// The one table of finding names and their tolerance class.
#include "kcv/finding.hpp"

#include <string>

namespace kcv {
namespace {

struct FindingRow {
  Finding finding;
  std::string_view name;
  bool tolerance_free;
};

constexpr std::array<FindingRow, 15> kRows = {{
    {Finding::kNone, "none", false},
    {Finding::kCallFailed, "call_failed", true},
    {Finding::kBadOutput, "bad_output", true},
    {Finding::kInputModified, "input_modified", true},
    {Finding::kWrittenOutside, "written_outside", true},
    {Finding::kOutputUnwritten, "output_unwritten", true},
    {Finding::kReadOutside, "read_outside", true},
    {Finding::kClassMismatch, "class_mismatch", true},
    {Finding::kSubnormalFlushed, "subnormal_flushed", true},
    {Finding::kNondeterministic, "nondeterministic", true},
    {Finding::kResourceOverLimit, "resource_over_limit", true},
    {Finding::kToolReport, "tool_report", true},
    {Finding::kValueOverBound, "value_over_bound", false},
    {Finding::kPrecisionLost, "precision_lost", false},
    {Finding::kScheduleDependent, "schedule_dependent", false},
}};

const FindingRow& row_of(Finding f) { return kRows[static_cast<std::size_t>(f)]; }

}  // namespace

std::string_view finding_name(Finding f) { return row_of(f).name; }

bool is_tolerance_free(Finding f) { return row_of(f).tolerance_free; }

Expected<Finding> parse_finding(std::string_view name) {
  for (const FindingRow& r : kRows) {
    if (r.name == name) return r.finding;
  }
  std::string known;
  for (const FindingRow& r : kRows) known += (known.empty() ? "" : ", ") + std::string(r.name);
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown finding '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace kcv
