// File: src/report/audit_format.cpp
// How the audit report writes rates and optional values for people. A rate always shows its
// numerator and denominator next to the percentage: a 50% over 2 kernels and a 50% over 2000
// are different findings, and the report must not let them look alike.
#include <fmt/format.h>

#include "report/audit_report_internal.hpp"

namespace kcv::audit_report {

std::string percent_text(const audit::Rate& r) {
  if (r.total == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * r.value());
}

std::string rate_text(const audit::Rate& r) {
  return fmt::format("{}/{} ({})", r.hits, r.total, percent_text(r));
}

std::string opt_text(const std::optional<std::string>& s) { return s ? *s : "-"; }

std::string ratio_text(const std::optional<double>& x) {
  return x ? fmt::format("{:.3g}", *x) : "-";
}

std::vector<CorpusCoverage> corpus_coverage(const AuditReport& r) {
  std::vector<CorpusCoverage> out;
  for (const audit::CorpusStatusCount& s : r.headline.corpus_statuses) {
    if (out.empty() || out.back().corpus != s.corpus) out.push_back({s.corpus});
    CorpusCoverage& c = out.back();
    c.kernels += s.kernels;
    const Expected<audit::KernelStatus> status = audit::parse_status(s.status);
    const bool final = status && audit::is_final(*status);
    if (final) c.final_kernels += s.kernels;
    std::string& text = final ? c.final_text : c.open_text;
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", s.status, s.kernels);
  }
  return out;
}

std::string reduced_shape_text(const AuditReport& r) {
  if (r.headline.reduced_shape == 0) return "";
  return fmt::format(
      "{} kernel(s) judged at a reduced shape (inputs + outputs over kcv audit "
      "--reduce-over-gb): replica and battery alike; every such verdict names the shape in its "
      "evidence (battery_shape)",
      r.headline.reduced_shape);
}

audit::Rate rigor_gap(const audit::Differential& d) {
  return {d.kcv_rejects_other_accepts, d.both_accept + d.kcv_rejects_other_accepts};
}

}  // namespace kcv::audit_report
