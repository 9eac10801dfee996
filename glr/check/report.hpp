// File: glr/check/report.hpp
// What glr_check prints: one accuracy row per (case, member) with fla's ratio per tensor and a
// PASS/FAIL verdict, then the property checks, then a summary; the same as a markdown document for
// --out. Ratios print as 1.2e-03; a failing one is marked with "!".
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "check/check_result.hpp"
#include "check/compare.hpp"

namespace kcv::glr::check {

struct AccuracyRow {
  std::string member;
  std::string label;
  std::string shape;
  std::vector<Metric> metrics;  ///< empty when `error` is set
  std::string error;            ///< a CUDA or reference failure
  double reference_seconds = 0.0;

  bool pass() const;
};

/// The tensors in column order of the table.
const std::vector<std::string>& metric_columns();

void print_row_header(std::ostream& os);
void print_row(std::ostream& os, const AccuracyRow& row);
void print_check(std::ostream& os, const CheckResult& c);

/// The whole report as markdown (device line, accuracy table, checks, verdict).
void write_markdown(std::ostream& os, const std::string& device, const std::string& command,
                    const std::vector<AccuracyRow>& rows, const std::vector<CheckResult>& checks);

}  // namespace kcv::glr::check
