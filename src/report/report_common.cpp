// File: src/report/report_common.cpp
// Shared report helpers (see report_common.hpp). The replay line of a gate is found by its probe
// token, falling back to the order of failing gates, because VerifyReport keeps replay lines as
// a plain list (one per failing gate, in gate order).
#include "report/report_common.hpp"

#include <fmt/format.h>

#include <cmath>

namespace kcv::report {

std::string_view verdict_word(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kNotApplicable:
      return "not_applicable";
    case Verdict::kError:
      return "error";
  }
  return "error";
}

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", x);
}

std::optional<std::string> replay_for(const VerifyReport& r, std::size_t index) {
  const GateResult& g = r.results.at(index);
  if (g.verdict != Verdict::kFail || !g.failing_probe) return std::nullopt;
  const std::string token = probe_to_token(*g.failing_probe);
  for (const std::string& line : r.replay_lines) {
    if (line.find(token) != std::string::npos) return line;
  }
  std::size_t ordinal = 0;  // position among the gates that have a replay line
  for (std::size_t i = 0; i < index; ++i) {
    const GateResult& before = r.results[i];
    if (before.verdict == Verdict::kFail && before.failing_probe) ++ordinal;
  }
  if (ordinal < r.replay_lines.size()) return r.replay_lines[ordinal];
  return std::nullopt;
}

std::string evidence_details(const GateResult& g) {
  const Evidence& e = g.evidence;
  std::string out = evidence_line(g) + "\n";
  if (!e.probe_label.empty()) out += fmt::format("probe: {}\n", e.probe_label);
  if (e.worst_index >= 0) {
    out += fmt::format("worst element: output {} index {}: candidate {} vs oracle {} (ratio {})\n",
                       e.output, e.worst_index, format_number(e.candidate_value),
                       format_number(e.oracle_value), format_number(e.worst_ratio));
  }
  if (e.ratio_quantiles.size() == 4) {
    out += fmt::format("ratio p50 {} p90 {} p99 {} max {}\n", format_number(e.ratio_quantiles[0]),
                       format_number(e.ratio_quantiles[1]), format_number(e.ratio_quantiles[2]),
                       format_number(e.ratio_quantiles[3]));
  }
  if (e.bits_lost != 0) out += fmt::format("bits lost: {}\n", format_number(e.bits_lost));
  if (e.violations != 0) out += fmt::format("violations: {}\n", e.violations);
  out += fmt::format("probes run: {}\n", g.probes_run);
  return out;
}

std::string evidence_line(const GateResult& g) {
  if (g.verdict == Verdict::kNotApplicable || g.verdict == Verdict::kError) {
    return g.reason.empty() ? g.evidence.summary : g.reason;
  }
  return g.evidence.summary;
}

}  // namespace kcv::report
