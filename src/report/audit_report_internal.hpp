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

/// "3/12 (25.0%)"; "0/0 (-)" for an empty denominator.
std::string rate_text(const audit::Rate& r);
/// "25.0%" or "-".
std::string percent_text(const audit::Rate& r);
/// The value, or "-" when absent.
std::string opt_text(const std::optional<std::string>& s);
/// "-", or the number with 3 significant digits.
std::string ratio_text(const std::optional<double>& x);

}  // namespace kcv::audit_report
