// File: src/report/audit_text.cpp
// The terminal summary of `kcv report`: kernel statuses in rows of their own, the headline (any
// violation, tolerance-free floor) per profile over its three populations, the robustness
// table, the findings, per-gate and per-class rates, the two differentials and the reverse
// cases, in plain aligned text. Long lists (bad kernels, the sample) are cut to a few lines with a
// count of the rest: the JSON and the HTML page carry them whole.
#include <fmt/format.h>

#include <algorithm>

#include "report/audit_report_internal.hpp"

namespace kcv::audit_report {
namespace {

constexpr size_t kListLines = 10;

void statuses_text(std::string& out, const AuditReport& r) {
  out += "kernel statuses (a status is never counted as a gate failure)\n";
  out += fmt::format("  {:<16} {:>8} {:>17} {:>18}\n", "status", "kernels", "replica-accepted",
                     "original-accepted");
  for (const audit::StatusCount& s : r.headline.statuses) {
    out += fmt::format("  {:<16} {:>8} {:>17} {:>18}\n", s.status, s.kernels, s.replica_accepted,
                       s.original_accepted);
  }
  for (const CorpusCoverage& c : corpus_coverage(r)) {
    out += fmt::format("  {}: {} of {} final ({}){}\n", c.corpus, c.final_kernels, c.kernels,
                       c.final_text.empty() ? "none" : c.final_text,
                       c.open_text.empty() ? "" : "; not final: " + c.open_text);
  }
  for (const std::string& note : kernel_notes(r)) out += "  " + note + "\n";
  if (const std::string stale = stale_text(r); !stale.empty()) out += "  " + stale + "\n";
}

void headline_text(std::string& out, const AuditReport& r) {
  out += fmt::format("kcv audit report: {} ({} kernels, profile {})\n", r.store_path, r.kernels,
                     r.options.profile);
  statuses_text(out, r);
  out += "\nheadline (judged = status ok with a pass or fail verdict under the profile)\n";
  out += fmt::format("{:<14} {:<18} {:>22} {:>26}\n", "profile", "kernels", "any violation",
                     "tolerance-free floor");
  for (const audit::ProfileHeadline& p : r.headline.profiles) {
    bool first = true;
    for (const PopulationView& v : populations(p)) {
      out += fmt::format("{:<14} {:<18} {:>22} {:>26}\n", first ? p.profile : "", v.label,
                         rate_text(v.rates->any_violation), rate_text(v.rates->tf_floor));
      first = false;
    }
    if (p.unjudged_ok > 0)
      out += fmt::format("{:<14} ({} ok kernel(s) with no pass or fail: in no denominator)\n", "",
                         p.unjudged_ok);
    if (const std::string why = untyped_text(p); !why.empty()) out += "  " + why + "\n";
  }
  if (!r.profile_headline)
    out += fmt::format("(no kernel was judged under profile {})\n", r.options.profile);
}

void robustness_text(std::string& out, const AuditReport& r) {
  out += fmt::format(
      "\nrobustness ({}; replica-accepted judged kernels; each row leaves out one more contract "
      "choice)\n",
      r.options.profile);
  out += fmt::format("{:<32} {:>22} {:>26}\n", "contract", "any violation", "tolerance-free floor");
  for (const audit::RobustnessRow& row : r.robustness) {
    out += fmt::format("{:<32} {:>22} {:>26}\n", choice_label(row.choice),
                       rate_text(row.any_violation), rate_text(row.tf_floor));
  }
  out += "by profile (as judged; replica-accepted judged kernels)\n";
  for (const audit::RobustnessRow& row : r.by_profile) {
    out += fmt::format("{:<32} {:>22} {:>26}\n", row.profile, rate_text(row.any_violation),
                       rate_text(row.tf_floor));
  }
}

void findings_text(std::string& out, const AuditReport& r) {
  out += fmt::format(
      "\nfindings ({}; judged kernels with at least one fail of the finding; TF = "
      "tolerance-free)\n",
      r.options.profile);
  out += fmt::format("{:<22} {:<3} {:>22} {:>22}\n", "finding", "", "judged", "replica-accepted");
  for (const audit::FindingCount& f : r.findings) {
    const bool tf = f.finding && is_tolerance_free(*f.finding);
    out += fmt::format("{:<22} {:<3} {:>22} {:>22}\n", finding_label(f.finding), tf ? "TF" : "",
                       rate_text(f.judged), rate_text(f.replica_accepted));
  }
  if (!r.findings.empty() && !r.findings.back().finding)
    out += "  " + untyped_findings_text() + "\n";
}

void gates_text(std::string& out, const AuditReport& r) {
  out += fmt::format("\nper gate ({}; among judged kernels where the gate applies)\n",
                     r.options.profile);
  out += fmt::format("{:<8} {:>22} {:>22} {:>7} {:>7}\n", "gate", "fail", "replica-accepted",
                     "errors", "n/a");
  for (const audit::GateRate& g : r.gates) {
    out += fmt::format("{:<8} {:>22} {:>22} {:>7} {:>7}\n", g.gate, rate_text(g.fail),
                       rate_text(g.fail_replica_accepted), g.errors, g.not_applicable);
  }
  out += fmt::format("\nper op class ({}; judged kernels)\n", r.options.profile);
  out += fmt::format("{:<14} {:>22} {:>26}\n", "op class", "any violation", "tolerance-free floor");
  for (const audit::ClassRate& c : r.classes) {
    out += fmt::format("{:<14} {:>22} {:>26}\n", c.op_class, rate_text(c.judged.any_violation),
                       rate_text(c.judged.tf_floor));
  }
}

void differential_text(std::string& out, const char* title,
                       const std::vector<audit::Differential>& ds) {
  out += fmt::format("\nkcv vs {} ({})\n", title, "kcv rejects = a judged kernel has a fail");
  out += fmt::format("{:<16} {:>8} {:>12} {:>12} {:>8} {:>9} {:>20}\n", "corpus", "both ok",
                     "kcv rejects", "kcv accepts", "both rej", "excluded", "rigor gap");
  for (const audit::Differential& d : ds) {
    out += fmt::format("{:<16} {:>8} {:>12} {:>12} {:>8} {:>9} {:>20}\n",
                       d.corpus.empty() ? "(all)" : d.corpus, d.both_accept,
                       d.kcv_rejects_other_accepts, d.kcv_accepts_other_rejects, d.both_reject,
                       d.excluded, rate_text(rigor_gap(d)));
  }
}

std::string one_line(const std::string& text, std::size_t limit) {
  // Cut at a UTF-8 character boundary: compiler messages quote with multi-byte characters.
  while (limit < text.size() && limit > 0 &&
         (static_cast<unsigned char>(text[limit]) & 0xC0u) == 0x80u)
    --limit;
  std::string s = text.substr(0, limit);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.size() < text.size() ? s + "..." : s;
}

void reverse_text(std::string& out, const AuditReport& r) {
  out += fmt::format("\nreverse cases (kcv accepts, another judge rejects): {}\n",
                     r.reverse_cases.size());
  for (size_t i = 0; i < std::min(r.reverse_cases.size(), kListLines); ++i) {
    const ReverseCase& c = r.reverse_cases[i];
    std::string by;
    for (const std::string& j : c.rejected_by) by += (by.empty() ? "" : ",") + j;
    out += fmt::format("  {}  rejected by {}  (original {}, replica {})\n", c.kernel_id, by,
                       opt_text(c.original_verdict), opt_text(c.replica_verdict));
    // What each side saw: the other judge's reason (the kernel message), and kcv's tightest
    // element against its bound, which is where an explanation starts.
    if (!c.message.empty()) out += fmt::format("      message: {}\n", one_line(c.message, 240));
    for (const GateVerdict& g : c.gates) {
      if (g.gate == "CMP-01" && !g.summary.empty())
        out += fmt::format("      kcv CMP-01: {}\n", one_line(g.summary, 240));
    }
  }
  if (r.reverse_cases.size() > kListLines)
    out +=
        fmt::format("  ... {} more (see --json / --html)\n", r.reverse_cases.size() - kListLines);
}

void bad_text(std::string& out, const AuditReport& r) {
  out += fmt::format("\nkernels not ok: {}\n", r.bad_kernels.size());
  for (size_t i = 0; i < std::min(r.bad_kernels.size(), kListLines); ++i) {
    const BadKernel& b = r.bad_kernels[i];
    std::string msg = b.message.substr(0, 80);
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    out += fmt::format("  {:<14} {}  {}\n", b.status, b.kernel_id, msg);
  }
  if (r.bad_kernels.size() > kListLines)
    out += fmt::format("  ... {} more (see --json / --html)\n", r.bad_kernels.size() - kListLines);
  out += fmt::format("\nhand-audit sample: {} kernel(s), seed {}, up to {} per stratum\n",
                     r.sample.size(), r.options.seed, r.options.sample_per_stratum);
}

}  // namespace

std::string render_report_text(const AuditReport& r) {
  std::string out;
  for (const std::string& line : integrity_lines(r.integrity)) out += line + "\n";
  headline_text(out, r);
  robustness_text(out, r);
  findings_text(out, r);
  gates_text(out, r);
  differential_text(out, "the allclose replica", r.vs_replica);
  differential_text(out, "the original verdict", r.vs_original);
  reverse_text(out, r);
  bad_text(out, r);
  return out;
}

}  // namespace kcv::audit_report
