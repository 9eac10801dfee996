// File: glr/check/report.cpp
// Formatting of report.hpp.
#include "check/report.hpp"

#include <cstdio>
#include <ostream>

namespace kcv::glr::check {
namespace {

std::string ratio_cell(const std::vector<Metric>& ms, const std::string& tensor) {
  for (const Metric& m : ms) {
    if (m.tensor != tensor) continue;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1e%s", m.ratio, m.pass ? "" : "!");
    return buf;
  }
  return "-";
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

bool AccuracyRow::pass() const {
  if (!error.empty() || metrics.empty()) return false;
  for (const Metric& m : metrics)
    if (!m.pass) return false;
  return true;
}

const std::vector<std::string>& metric_columns() {
  static const std::vector<std::string> cols = {"o", "ht", "dq", "dk", "dv", "dh0", "dg", "dbeta"};
  return cols;
}

void print_row_header(std::ostream& os) {
  os << pad("member", 9) << pad("case", 24);
  for (const std::string& c : metric_columns()) os << pad(c, 10);
  os << "verdict\n";
}

void print_row(std::ostream& os, const AccuracyRow& row) {
  os << pad(row.member, 9) << pad(row.label, 24);
  if (!row.error.empty()) {
    os << "ERROR " << row.error << "\n";
    return;
  }
  for (const std::string& c : metric_columns()) os << pad(ratio_cell(row.metrics, c), 10);
  os << (row.pass() ? "PASS" : "FAIL") << "\n";
}

void print_check(std::ostream& os, const CheckResult& c) {
  os << (c.pass ? "PASS " : "FAIL ") << pad(c.name, 36) << c.detail << "\n";
}

void write_markdown(std::ostream& os, const std::string& device, const std::string& command,
                    const std::vector<AccuracyRow>& rows, const std::vector<CheckResult>& checks) {
  std::size_t failed = 0;
  os << "# glr_check: sm_90a GLR kernels against the fp64 chunked reference\n\n";
  os << "Device: " << device << "  \nCommand: `" << command << "`\n\n";
  os << "fla's metric RMS(gpu − ref)/RMS(ref); limits o, ht 0.005; dq, dk, dv, dh0 0.008; "
        "dg, dβ 0.02 (\"!\" marks a failure).\n\n";
  os << "| member | case | shape |";
  for (const std::string& c : metric_columns()) os << " " << c << " |";
  os << " verdict |\n|---|---|---|";
  for (std::size_t i = 0; i < metric_columns().size(); ++i) os << "---|";
  os << "---|\n";
  for (const AccuracyRow& r : rows) {
    os << "| " << r.member << " | " << r.label << " | " << r.shape << " |";
    if (!r.error.empty()) {
      os << " error: " << r.error;
      for (std::size_t i = 0; i < metric_columns().size(); ++i) os << " |";
      os << " FAIL |\n";
      ++failed;
      continue;
    }
    for (const std::string& c : metric_columns()) os << " " << ratio_cell(r.metrics, c) << " |";
    os << " " << (r.pass() ? "PASS" : "FAIL") << " |\n";
    failed += r.pass() ? 0 : 1;
  }
  os << "\n| check | verdict | detail |\n|---|---|---|\n";
  for (const CheckResult& c : checks) {
    os << "| " << c.name << " | " << (c.pass ? "PASS" : "FAIL") << " | " << c.detail << " |\n";
    failed += c.pass ? 0 : 1;
  }
  os << "\n**" << (failed == 0 ? "ALL PASS" : std::to_string(failed) + " FAILED") << "** ("
     << rows.size() << " accuracy rows, " << checks.size() << " checks)\n";
}

}  // namespace kcv::glr::check
