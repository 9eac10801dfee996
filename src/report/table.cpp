// File: src/report/table.cpp
// The terminal table of one verification: a header line naming what was verified, one row per
// gate (gate, verdict, worst ratio, evidence), a one-line result, then the replay lines. Colour
// (ANSI escapes) only when the caller asks for it, so piped output and tests see plain text;
// column widths are computed on the plain text before any colour is applied.
#include <fmt/color.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kcv/report.hpp"
#include "report/report_common.hpp"

namespace kcv {
namespace {

struct Row {
  std::string gate, verdict, ratio, evidence;
  Verdict v = Verdict::kPass;
};

std::string ratio_cell(const GateResult& g) {
  if (g.verdict != Verdict::kPass && g.verdict != Verdict::kFail) return "-";
  return report::format_number(g.evidence.worst_ratio);
}

std::string colored(const std::string& padded, Verdict v, bool color) {
  if (!color) return padded;
  switch (v) {
    case Verdict::kPass:
      return fmt::format(fmt::fg(fmt::terminal_color::green), "{}", padded);
    case Verdict::kFail:
      return fmt::format(fmt::emphasis::bold | fmt::fg(fmt::terminal_color::red), "{}", padded);
    case Verdict::kError:
      return fmt::format(fmt::fg(fmt::terminal_color::magenta), "{}", padded);
    case Verdict::kNotApplicable:
      return fmt::format(fmt::fg(fmt::terminal_color::bright_black), "{}", padded);
  }
  return padded;
}

std::string result_line(const VerifyReport& r) {
  int fails = 0, errors = 0, na = 0;
  for (const GateResult& g : r.results) {
    fails += g.verdict == Verdict::kFail;
    errors += g.verdict == Verdict::kError;
    na += g.verdict == Verdict::kNotApplicable;
  }
  return fmt::format("result: {} ({} gate{}: {} failed, {} errors, {} not applicable)",
                     r.passed() ? "PASS" : "FAIL", r.results.size(),
                     r.results.size() == 1 ? "" : "s", fails, errors, na);
}

}  // namespace

std::string render_table(const VerifyReport& r, bool color) {
  std::vector<Row> rows = {{"gate", "verdict", "worst ratio", "evidence", Verdict::kPass}};
  for (const GateResult& g : r.results) {
    rows.push_back({std::string(gate_code(g.gate)), std::string(report::verdict_word(g.verdict)),
                    ratio_cell(g), report::evidence_line(g), g.verdict});
  }
  std::size_t w_gate = 0, w_verdict = 0, w_ratio = 0;
  for (const Row& row : rows) {
    w_gate = std::max(w_gate, row.gate.size());
    w_verdict = std::max(w_verdict, row.verdict.size());
    w_ratio = std::max(w_ratio, row.ratio.size());
  }
  std::string out =
      fmt::format("kernel: {}  op: {}  profile: {}  seed: {:#x}  executor: {}\n", r.kernel, r.op,
                  profile(r.contract.profile).name, r.seed, r.executor);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    const std::string verdict = fmt::format("{:<{}}", row.verdict, w_verdict);
    out += fmt::format("{:<{}}  {}  {:>{}}  {}\n", row.gate, w_gate,
                       i == 0 ? verdict : colored(verdict, row.v, color), row.ratio, w_ratio,
                       row.evidence);
  }
  out += result_line(r) + "\n";
  if (!r.replay_lines.empty()) {
    out += "\nreplay a failure (minimal probe):\n";
    for (const std::string& line : r.replay_lines) out += "  " + line + "\n";
  }
  return out;
}

}  // namespace kcv
