// File: src/report/audit_text.cpp
// The terminal summary of `kcv report`: the headline (any violation, tolerance-free floor),
// kernel statuses, per-gate and per-class rates, the two differentials and the reverse cases,
// in plain aligned text. Long lists (bad kernels, the sample) are cut to a few lines with a
// count of the rest: the JSON and the HTML page carry them whole.
#include <fmt/format.h>

#include <algorithm>

#include "report/audit_report_internal.hpp"

namespace kcv::audit_report {
namespace {

constexpr size_t kListLines = 10;

void headline_text(std::string& out, const AuditReport& r) {
  out += fmt::format("kcv audit report: {} ({} kernels, profile {})\n", r.store_path, r.kernels,
                     r.options.profile);
  out += "statuses:";
  for (const audit::StatusCount& s : r.headline.statuses)
    out += fmt::format(" {} {}", s.status, s.kernels);
  out += "\n";
  for (const CorpusCoverage& c : corpus_coverage(r)) {
    out += fmt::format("  {}: {} of {} final ({}){}\n", c.corpus, c.final_kernels, c.kernels,
                       c.final_text.empty() ? "none" : c.final_text,
                       c.open_text.empty() ? "" : "; not final: " + c.open_text);
  }
  if (const std::string reduced = reduced_shape_text(r); !reduced.empty())
    out += "  " + reduced + "\n";
  out += "\n";
  out += fmt::format("{:<12} {:>22} {:>26}\n", "profile", "any violation", "tolerance-free floor");
  for (const audit::ProfileHeadline& p : r.headline.profiles) {
    out += fmt::format("{:<12} {:>22} {:>26}\n", p.profile, rate_text(p.any_violation),
                       rate_text(p.tf_floor));
  }
  if (!r.profile_headline)
    out += fmt::format("(no kernel was evaluated under profile {})\n", r.options.profile);
}

void gates_text(std::string& out, const AuditReport& r) {
  out += fmt::format("\nper gate ({}; among kernels where the gate applies)\n", r.options.profile);
  out += fmt::format("{:<8} {:>22} {:>7} {:>7}\n", "gate", "fail", "errors", "n/a");
  for (const audit::GateRate& g : r.gates) {
    out += fmt::format("{:<8} {:>22} {:>7} {:>7}\n", g.gate, rate_text(g.fail), g.errors,
                       g.not_applicable);
  }
  out += fmt::format("\nper op class ({})\n", r.options.profile);
  out += fmt::format("{:<14} {:>22} {:>26}\n", "op class", "any violation", "tolerance-free floor");
  for (const audit::ClassRate& c : r.classes) {
    out += fmt::format("{:<14} {:>22} {:>26}\n", c.op_class, rate_text(c.any_violation),
                       rate_text(c.tf_floor));
  }
}

void differential_text(std::string& out, const char* title,
                       const std::vector<audit::Differential>& ds) {
  out += fmt::format("\nkcv vs {} ({})\n", title, "kcv reject = any gate fails");
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
  headline_text(out, r);
  gates_text(out, r);
  differential_text(out, "the allclose replica", r.vs_replica);
  differential_text(out, "the original verdict", r.vs_original);
  reverse_text(out, r);
  bad_text(out, r);
  return out;
}

}  // namespace kcv::audit_report
