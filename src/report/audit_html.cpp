// File: src/report/audit_html.cpp
// The audit report as ONE self-contained HTML page: inline CSS, the three figures as inline
// SVG, tables for every number (the headline over its three populations, statuses, the
// robustness table, findings, gates, classes, differentials), and no script or external
// resource of any kind, so the file can be mailed, archived or opened offline and always shows
// the same thing. All store text (kernel ids, messages, harness text) is escaped; long text
// sits in <details>.
#include <fmt/format.h>

#include <cctype>

#include "report/audit_report_internal.hpp"
#include "report/svg.hpp"

namespace kcv::audit_report {
namespace {

using svg::escape;

constexpr const char* kCss =
    R"(body{font-family:sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}figure{margin:1em 0}
figure svg{max-width:100%;height:auto}figcaption{font-size:.9em;color:#555}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em;max-height:30em;overflow:auto}
.fail{color:#cc3311;font-weight:bold}.muted{color:#777})";

std::string row(std::initializer_list<std::string> cells, bool header = false) {
  std::string out = "<tr>";
  for (const std::string& c : cells) {
    const bool numeric = !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) != 0);
    out += header ? "<th>" + escape(c) + "</th>"
                  : fmt::format("<td{}>{}</td>", numeric ? " class=\"n\"" : "", escape(c));
  }
  return out + "</tr>\n";
}

std::string figure(const char* id, const std::string& svg, const std::string& caption) {
  return fmt::format("<figure id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n", id, svg,
                     escape(caption));
}

std::string statuses_html(const AuditReport& r) {
  std::string out =
      "<h3>Kernel statuses</h3>\n<p>A status is never counted as a gate failure: only kernels "
      "with status ok are judged.</p>\n<table>\n" +
      row({"status", "kernels", "of them replica-accepted", "of them original-accepted"}, true);
  for (const audit::StatusCount& s : r.headline.statuses) {
    out += row({s.status, std::to_string(s.kernels), std::to_string(s.replica_accepted),
                std::to_string(s.original_accepted)});
  }
  out += "</table>\n<h3>Coverage per corpus</h3>\n<table>\n" +
         row({"corpus", "final / kernels", "final statuses", "not final"}, true);
  for (const CorpusCoverage& c : corpus_coverage(r)) {
    out += row({c.corpus, fmt::format("{} / {}", c.final_kernels, c.kernels), c.final_text,
                c.open_text.empty() ? "-" : c.open_text});
  }
  out += "</table>\n";
  for (const std::string& note : kernel_notes(r)) out += "<p>" + escape(note) + ".</p>\n";
  if (const std::string stale = stale_text(r); !stale.empty())
    out += "<p>" + escape(stale) + ".</p>\n";
  return out;
}

std::string profiles_html(const AuditReport& r) {
  std::string out =
      "<h2>Headline</h2>\n<p>Judged = status ok with a pass or fail verdict under the profile. "
      "The floor counts tolerance-free findings only.</p>\n<table>\n" +
      row({"profile", "kernels", "any violation", "tolerance-free floor"}, true);
  std::string notes;
  for (const audit::ProfileHeadline& p : r.headline.profiles) {
    for (const PopulationView& v : populations(p))
      out += row(
          {p.profile, v.label, rate_text(v.rates->any_violation), rate_text(v.rates->tf_floor)});
    if (const std::string why = untyped_text(p); !why.empty())
      notes += "<p>" + escape(why) + ".</p>\n";
    if (p.unjudged_ok > 0)
      notes += fmt::format(
          "<p>{}: {} ok kernel(s) with no pass or fail verdict, in no "
          "denominator.</p>\n",
          escape(p.profile), p.unjudged_ok);
  }
  return out + "</table>\n" + notes;
}

std::string robustness_html(const AuditReport& r) {
  std::string out =
      fmt::format(
          "<h3 id=\"robustness\">Robustness (profile {}; replica-accepted judged "
          "kernels)</h3>\n<p>Each row leaves out the fails of one more contract choice; "
          "the denominator stays the same.</p>\n<table>\n",
          escape(r.options.profile)) +
      row({"contract", "any violation", "tolerance-free floor"}, true);
  for (const audit::RobustnessRow& rr : r.robustness) {
    out += row({std::string(choice_label(rr.choice)), rate_text(rr.any_violation),
                rate_text(rr.tf_floor)});
  }
  out +=
      "</table>\n<h3 id=\"by-profile\">By profile (as judged; replica-accepted judged "
      "kernels)</h3>\n<table>\n" +
      row({"profile", "any violation", "tolerance-free floor"}, true);
  for (const audit::RobustnessRow& rr : r.by_profile)
    out += row({rr.profile, rate_text(rr.any_violation), rate_text(rr.tf_floor)});
  return out + "</table>\n";
}

std::string findings_html(const AuditReport& r) {
  std::string out =
      fmt::format(
          "<h3 id=\"findings\">Findings (profile {}; judged kernels with at least one "
          "fail of the finding)</h3>\n<table>\n",
          escape(r.options.profile)) +
      row({"finding", "tolerance-free", "judged", "replica-accepted"}, true);
  for (const audit::FindingCount& f : r.findings) {
    const bool tf = f.finding && is_tolerance_free(*f.finding);
    out += row({finding_label(f.finding), tf ? "yes" : "no", rate_text(f.judged),
                rate_text(f.replica_accepted)});
  }
  out += "</table>\n";
  if (!r.findings.empty() && !r.findings.back().finding)
    out += "<p>" + escape(untyped_findings_text()) + ".</p>\n";
  return out;
}

std::string headline_html(const AuditReport& r) {
  std::string out = profiles_html(r) + statuses_html(r) + robustness_html(r) + findings_html(r);
  out += fmt::format("<h3>Per gate (profile {})</h3>\n<table>\n", escape(r.options.profile)) +
         row({"gate", "fail (judged kernels where it applies)", "of them replica-accepted",
              "errors", "not applicable"},
             true);
  for (const audit::GateRate& g : r.gates)
    out += row({g.gate, rate_text(g.fail), rate_text(g.fail_replica_accepted),
                std::to_string(g.errors), std::to_string(g.not_applicable)});
  out += fmt::format("</table>\n<h3>Per op class (profile {})</h3>\n<table>\n",
                     escape(r.options.profile)) +
         row({"op class", "any violation", "tolerance-free floor"}, true);
  for (const audit::ClassRate& c : r.classes)
    out += row({c.op_class, rate_text(c.judged.any_violation), rate_text(c.judged.tf_floor)});
  return out + "</table>\n";
}

std::string differential_html(const char* title, const std::vector<audit::Differential>& ds) {
  std::string out = fmt::format("<h3>kcv vs {}</h3>\n<table>\n", title) +
                    row({"corpus", "both accept", "kcv rejects, other accepts",
                         "kcv accepts, other rejects", "both reject", "excluded", "rigor gap"},
                        true);
  for (const audit::Differential& d : ds) {
    out += row({d.corpus.empty() ? "(all corpora)" : d.corpus, std::to_string(d.both_accept),
                std::to_string(d.kcv_rejects_other_accepts),
                std::to_string(d.kcv_accepts_other_rejects), std::to_string(d.both_reject),
                std::to_string(d.excluded), rate_text(rigor_gap(d))});
  }
  return out + "</table>\n";
}

std::string reverse_html(const AuditReport& r) {
  std::string out = fmt::format(
      "<h2 id=\"reverse-cases\">Reverse cases: kcv accepts, another judge rejects ({})</h2>\n"
      "<p>Each needs an explanation (a flaky original run, a replica tolerance too tight for the "
      "op, a gate kcv could not apply).</p>\n",
      r.reverse_cases.size());
  for (const ReverseCase& c : r.reverse_cases) {
    std::string by, gates;
    for (const std::string& j : c.rejected_by) by += (by.empty() ? "" : ", ") + j;
    for (const GateVerdict& g : c.gates)
      gates += row(
          {g.gate, g.verdict, ratio_text(g.worst_ratio), g.reason.empty() ? g.summary : g.reason});
    out += fmt::format(
        "<div class=\"reverse\"><h4>{}</h4>\n<p>corpus {}, op class {}; rejected by {}; original "
        "verdict {}; replica verdict {}; kcv status {}{}</p>\n<table>\n{}{}</table>\n",
        escape(c.kernel_id), escape(c.corpus), escape(c.op_class), escape(by),
        escape(opt_text(c.original_verdict)), escape(opt_text(c.replica_verdict)), escape(c.status),
        c.message.empty() ? "" : " (" + escape(c.message) + ")",
        row({"gate", "verdict", "worst ratio", "reason or evidence"}, true), gates);
    if (c.original_harness)
      out += "<details><summary>original harness text</summary><pre>" +
             escape(*c.original_harness) + "</pre></details>\n";
    out += "</div>\n";
  }
  return out;
}

std::string lists_html(const AuditReport& r) {
  std::string out = fmt::format("<h2 id=\"bad-kernels\">Kernels not ok ({})</h2>\n<table>\n",
                                r.bad_kernels.size()) +
                    row({"kernel", "corpus", "status", "message"}, true);
  for (const BadKernel& b : r.bad_kernels) out += row({b.kernel_id, b.corpus, b.status, b.message});
  out += fmt::format(
             "</table>\n<h2 id=\"sample\">Hand-audit sample ({} kernels; seed {}, up to {} per "
             "stratum)</h2>\n<table>\n",
             r.sample.size(), r.options.seed, r.options.sample_per_stratum) +
         row({"stratum", "kernel", "status", "op class", "language", "original", "replica",
              "failing gates"},
             true);
  for (const SampleEntry& e : r.sample) {
    std::string failing;
    for (size_t i = 0; i < e.failing_gates.size(); ++i) {
      const std::string& f = i < e.failing_findings.size() ? e.failing_findings[i] : "";
      failing += (failing.empty() ? "" : " ") + e.failing_gates[i] + (f.empty() ? "" : ":" + f);
    }
    out += row({e.stratum, e.kernel_id, e.status, e.op_class, e.language,
                opt_text(e.original_verdict), opt_text(e.replica_verdict), failing});
  }
  return out + "</table>\n";
}

}  // namespace

std::string render_report_html(const AuditReport& r) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>kcv audit report: {0}</title>\n<style>{1}</style>\n</head>\n<body>\n"
      "<h1>kcv audit report</h1>\n<p>store <code>{0}</code>: {2} kernels; profile {3}. "
      "Denominators and how to read the figures: docs/09_report.md.</p>\n",
      escape(r.store_path), kCss, r.kernels, escape(r.options.profile));
  const std::vector<std::string> integrity = integrity_lines(r.integrity);
  const bool verified = r.integrity.state == audit::Integrity::State::kVerified;
  out += fmt::format("<div id=\"integrity\" data-state=\"{}\"{}>\n",
                     audit::integrity_state_name(r.integrity.state),
                     verified ? "" : " style=\"border:4px solid #c00;padding:0.5em\"");
  for (const std::string& line : integrity)
    out += (verified ? "<p>" : "<p><strong>") + escape(line) +
           (verified ? "</p>\n" : "</strong></p>\n");
  out += "</div>\n";
  out += figure("fig-rigor-gap", svg_rigor_gap(r),
                "Figure 1. The rigor gap (share of the other judge's accepted kernels that kcv "
                "rejects), the headline rates, and each gate's failure rate among kernels where "
                "it applies.");
  out += headline_html(r);
  out += "<h2>Threshold calibration</h2>\n";
  out += figure("fig-calibration", svg_calibration(r),
                "Figure 2. Distribution of each gate's worst ratio (measured error over allowed "
                "error) on a log scale; the dashed line is the threshold.");
  out += "<h2>Differential</h2>\n";
  out += figure("fig-differential", svg_differential(r),
                "Figure 3. 2x2 of kcv against the allclose replica (top) and the original verdict "
                "(bottom); orange = kcv rejects what the other accepted, purple = the reverse.");
  out += differential_html("the allclose replica", r.vs_replica);
  out += differential_html("the original verdict", r.vs_original);
  out += reverse_html(r);
  out += lists_html(r);
  return out + "</body>\n</html>\n";
}

}  // namespace kcv::audit_report
