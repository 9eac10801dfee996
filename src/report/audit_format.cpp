// File: src/report/audit_format.cpp
// How the audit report writes rates and optional values for people. A rate always shows its
// numerator and denominator next to the percentage: a 50% over 2 kernels and a 50% over 2000
// are different findings, and the report must not let them look alike. A rate the store cannot
// give reads "unavailable", never a number computed some other way.
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

std::string rate_text(const std::optional<audit::Rate>& r) {
  return r ? rate_text(*r) : "unavailable";
}

std::vector<PopulationView> populations(const audit::ProfileHeadline& h) {
  return {{"judged", "judged", &h.judged},
          {"replica-accepted", "replica_accepted", &h.replica_accepted},
          {"original-accepted", "original_accepted", &h.original_accepted}};
}

std::string_view choice_label(audit::ContractChoice c) {
  switch (c) {
    case audit::ContractChoice::kAsJudged:
      return "as judged";
    case audit::ContractChoice::kNoDeterminism:
      return "without determinism";
    case audit::ContractChoice::kNoShape:
      return "and without shape generality";
    case audit::ContractChoice::kNoLayout:
      return "and without layout generality";
  }
  return "as judged";
}

std::string finding_label(const std::optional<Finding>& f) {
  return f ? std::string(finding_name(*f)) : "(no finding)";
}

std::string untyped_text(const audit::ProfileHeadline& h) {
  if (h.judged.tf_floor) return "";
  return fmt::format(
      "the tolerance-free floor of {} is unavailable: {} judged kernel(s) have a fail that names "
      "no finding (a store recorded before findings were typed); it is not recomputed from gates",
      h.profile, h.untyped_kernels);
}

std::string untyped_findings_text() {
  return "(no finding): kernels with a fail recorded without a finding; the rows above count "
         "typed fails only, so each is a lower bound";
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

std::vector<std::string> kernel_notes(const AuditReport& r) {
  std::vector<std::string> out;
  const auto note = [&](int64_t kernels, std::string_view what) {
    if (kernels > 0) out.push_back(fmt::format("{} kernel(s) {}", kernels, what));
  };
  note(r.headline.reduced_shape,
       "judged at a reduced shape (inputs + outputs over kcv audit --reduce-over-gb): replica "
       "and gates alike; every such verdict names the shape in its evidence (battery_shape)");
  note(r.headline.not_run_here,
       "with probes the candidate could not run on this machine (short of memory at a shape "
       "other than the judge shape, run alone): no gate passes on such probes; each verdict "
       "counts them in its evidence (probes_not_run)");
  return out;
}

std::vector<std::string> integrity_lines(const audit::Integrity& in) {
  std::vector<std::string> out;
  switch (in.state) {
    case audit::Integrity::State::kVerified:
      out.push_back(
          fmt::format("integrity: verified ({} final kernel(s), each row under its MAC; "
                      "store id {})",
                      in.signed_kernels, in.store_id));
      return out;
    case audit::Integrity::State::kUnsigned:
      out.push_back("UNVERIFIED STORE: " + in.unverified_reason +
                    "; rows may have been changed and nothing here can tell");
      if (in.signed_kernels > 0)
        out.push_back(fmt::format("  {} other final kernel(s) verified", in.signed_kernels));
      return out;
    case audit::Integrity::State::kFailed:
      out.push_back(
          "UNTRUSTED STORE: it FAILS verification; any number below may be forged (shown only "
          "because of --untrusted)");
      for (const std::string& p : in.problems) out.push_back("  - " + p);
      if (in.more_problems > 0)
        out.push_back(fmt::format("  - and {} more problem(s)", in.more_problems));
      return out;
  }
  return out;
}

std::string stale_text(const AuditReport& r) {
  if (r.headline.stale == 0) return "";
  return fmt::format(
      "{} stale kernel(s): the corpus row changed after it was judged (kcv audit --stale keep); "
      "they are counted with their old verdicts",
      r.headline.stale);
}

audit::Rate rigor_gap(const audit::Differential& d) {
  return {d.kcv_rejects_other_accepts, d.both_accept + d.kcv_rejects_other_accepts};
}

}  // namespace kcv::audit_report
