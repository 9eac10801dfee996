// File: src/report/audit_report_internal.hpp
// Pieces of the audit report shared between its source files but not public: the accumulator
// that turns verdict rows into threshold-margin histograms, and the small formatting helpers
// (percentages, optional verdict words) the terminal, HTML and SVG writers all use, so a rate
// reads the same everywhere.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kcv/audit_report.hpp"

namespace kcv::audit_report {

/// Collects pass/fail verdicts of one profile into per-gate margin histograms.
class MarginBuilder {
 public:
  explicit MarginBuilder(MarginAxis axis) : axis_(axis) {}
  void add(const audit::VerdictRecord& v);
  /// Rows in gate order, with median and max filled.
  std::vector<MarginRow> rows() &&;

 private:
  struct Acc {
    MarginRow row;
    std::vector<double> ratios;
  };
  MarginAxis axis_;
  std::map<std::string, Acc> rows_;
};

/// How far the audit has got in one corpus: kernels, those with a final status, and the
/// statuses as "ok 23, timeout 2" (final ones; the rest, pending and running, apart).
struct CorpusCoverage {
  std::string corpus;
  int64_t kernels = 0;
  int64_t final_kernels = 0;
  std::string final_text;
  std::string open_text;
};
std::vector<CorpusCoverage> corpus_coverage(const AuditReport& r);
/// The sentences on kernels judged apart from the rest, one per kind that has any: batteries
/// run at a reduced shape, probes the candidate could not run on this machine.
std::vector<std::string> kernel_notes(const AuditReport& r);

/// "3/12 (25.0%)"; "0/0 (-)" for an empty denominator.
std::string rate_text(const audit::Rate& r);
/// rate_text, or "unavailable" for a rate the store cannot give (a fail without a finding).
std::string rate_text(const std::optional<audit::Rate>& r);
/// The headline's three populations, in the order every rendering shows them.
struct PopulationView {
  const char* label;  // "judged", "replica-accepted", "original-accepted"
  const char* key;    // the JSON key: "judged", "replica_accepted", "original_accepted"
  const audit::ViolationRates* rates;
};
std::vector<PopulationView> populations(const audit::ProfileHeadline& h);
/// "as judged", "without determinism", "and without shape generality", ...
std::string_view choice_label(audit::ContractChoice c);
/// The finding's name, or "(no finding)" for fails that name none.
std::string finding_label(const std::optional<Finding>& f);
/// The sentence saying why a floor is unavailable; "" when it is available.
std::string untyped_text(const audit::ProfileHeadline& h);
/// The note under a findings table that has a "(no finding)" row.
std::string untyped_findings_text();
/// "25.0%" or "-".
std::string percent_text(const audit::Rate& r);
/// The value, or "-" when absent.
std::string opt_text(const std::optional<std::string>& s);
/// "-", or the number with 3 significant digits.
std::string ratio_text(const std::optional<double>& x);

}  // namespace kcv::audit_report
