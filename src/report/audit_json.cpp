// File: src/report/audit_json.cpp
// The audit report as JSON (schema "kcv-audit-report", version kAuditReportSchemaVersion;
// fields in docs/09_report.md). Every rate is written as {hits, total, value} so a reader never
// has to guess a denominator; absent values are null, and so is a rate the store cannot give
// (a floor over fails without findings), with floor_available saying so per profile. worst_ratio is
// finite by construction (the store keeps non-finite ratios as null), so no number needs a string
// encoding here.
#include <nlohmann/json.hpp>

#include "report/audit_report_internal.hpp"

namespace kcv::audit_report {
namespace {

using json = nlohmann::ordered_json;

json rate(const audit::Rate& r) {
  return {{"hits", r.hits}, {"total", r.total}, {"value", r.value()}};
}

// An unavailable rate is null: a reader can never mistake it for a zero.
json rate(const std::optional<audit::Rate>& r) { return r ? rate(*r) : json(nullptr); }

json rates(const audit::ViolationRates& v) {
  return {{"any_violation", rate(v.any_violation)}, {"tolerance_free_floor", rate(v.tf_floor)}};
}

json profile_json(const audit::ProfileHeadline& p) {
  json out = {{"profile", p.profile}};
  for (const PopulationView& v : populations(p)) out[v.key] = rates(*v.rates);
  out["floor_available"] = p.judged.tf_floor.has_value();
  out["untyped_kernels"] = p.untyped_kernels;
  out["unjudged_ok"] = p.unjudged_ok;
  return out;
}

json findings_json(const std::vector<audit::FindingCount>& findings) {
  json out = json::array();
  for (const audit::FindingCount& f : findings) {
    out.push_back({{"profile", f.profile},
                   {"finding", f.finding ? json(finding_name(*f.finding)) : json(nullptr)},
                   {"tolerance_free", f.finding && is_tolerance_free(*f.finding)},
                   {"judged", rate(f.judged)},
                   {"replica_accepted", rate(f.replica_accepted)}});
  }
  return out;
}

json robustness_json(const std::vector<audit::RobustnessRow>& rows) {
  json out = json::array();
  for (const audit::RobustnessRow& row : rows) {
    out.push_back({{"profile", row.profile},
                   {"choice", audit::contract_choice_name(row.choice)},
                   {"any_violation", rate(row.any_violation)},
                   {"tolerance_free_floor", rate(row.tf_floor)}});
  }
  return out;
}

json tolerance_free_findings() {
  json out = json::array();
  for (Finding f : kAllFindings) {
    if (is_tolerance_free(f)) out.push_back(finding_name(f));
  }
  return out;
}

template <typename T>
json opt(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

json headline_json(const AuditReport& r) {
  json statuses = json::object();
  json status_rows = json::array();
  for (const audit::StatusCount& s : r.headline.statuses) {
    statuses[s.status] = s.kernels;
    status_rows.push_back({{"status", s.status},
                           {"kernels", s.kernels},
                           {"replica_accepted", s.replica_accepted},
                           {"original_accepted", s.original_accepted}});
  }
  json by_corpus = json::object();
  for (const audit::CorpusStatusCount& s : r.headline.corpus_statuses)
    by_corpus[s.corpus][s.status] = s.kernels;
  json profiles = json::array();
  for (const audit::ProfileHeadline& p : r.headline.profiles) profiles.push_back(profile_json(p));
  json gates = json::array();
  for (const audit::GateRate& g : r.headline.gates) {
    gates.push_back({{"profile", g.profile},
                     {"gate", g.gate},
                     {"fail", rate(g.fail)},
                     {"fail_replica_accepted", rate(g.fail_replica_accepted)},
                     {"errors", g.errors},
                     {"not_applicable", g.not_applicable}});
  }
  json classes = json::array();
  for (const audit::ClassRate& c : r.headline.classes) {
    json row = {{"profile", c.profile}, {"op_class", c.op_class}};
    row.update(rates(c.judged));
    classes.push_back(row);
  }
  return {{"kernels", r.kernels},
          {"statuses", statuses},
          {"status_rows", status_rows},
          {"statuses_by_corpus", by_corpus},
          {"tolerance_free_findings", tolerance_free_findings()},
          {"tolerance_free_gates", audit::tolerance_free_gates()},
          {"profiles", profiles},
          {"robustness", robustness_json(r.headline.robustness)},
          {"findings", findings_json(r.headline.findings)},
          {"gates", gates},
          {"op_classes", classes},
          {"reduced_shape_kernels", r.headline.reduced_shape},
          {"not_run_here_kernels", r.headline.not_run_here},
          {"stale_kernels", r.headline.stale}};
}

json differential_json(const std::vector<audit::Differential>& ds) {
  json out = json::array();
  for (const audit::Differential& d : ds) {
    out.push_back({{"corpus", d.corpus.empty() ? json(nullptr) : json(d.corpus)},
                   {"both_accept", d.both_accept},
                   {"kcv_rejects_other_accepts", d.kcv_rejects_other_accepts},
                   {"kcv_accepts_other_rejects", d.kcv_accepts_other_rejects},
                   {"both_reject", d.both_reject},
                   {"excluded", d.excluded},
                   {"rigor_gap", rate(rigor_gap(d))}});
  }
  return out;
}

json gates_json(const std::vector<GateVerdict>& gates) {
  json out = json::array();
  for (const GateVerdict& g : gates) {
    out.push_back({{"gate", g.gate},
                   {"verdict", g.verdict},
                   {"reason", g.reason},
                   {"worst_ratio", opt(g.worst_ratio)},
                   {"summary", g.summary}});
  }
  return out;
}

json reverse_json(const AuditReport& r) {
  json out = json::array();
  for (const ReverseCase& c : r.reverse_cases) {
    out.push_back({{"kernel_id", c.kernel_id},
                   {"corpus", c.corpus},
                   {"op_class", c.op_class},
                   {"rejected_by", c.rejected_by},
                   {"original_verdict", opt(c.original_verdict)},
                   {"replica_verdict", opt(c.replica_verdict)},
                   {"original_harness", opt(c.original_harness)},
                   {"status", c.status},
                   {"message", c.message},
                   {"gates", gates_json(c.gates)}});
  }
  return out;
}

json sample_json(const AuditReport& r) {
  json out = json::array();
  for (const SampleEntry& e : r.sample) {
    out.push_back({{"kernel_id", e.kernel_id},
                   {"stratum", e.stratum},
                   {"status", e.status},
                   {"op_class", e.op_class},
                   {"language", e.language},
                   {"original_verdict", opt(e.original_verdict)},
                   {"replica_verdict", opt(e.replica_verdict)},
                   {"failing_gates", e.failing_gates},
                   {"failing_findings", e.failing_findings}});
  }
  return out;
}

json margins_json(const AuditReport& r) {
  json rows = json::array();
  for (const MarginRow& m : r.margins) {
    rows.push_back({{"gate", m.gate},
                    {"measured", m.measured},
                    {"unmeasured", m.unmeasured},
                    {"above_threshold", m.above_threshold},
                    {"median", opt(m.median)},
                    {"max", opt(m.max)},
                    {"pass", m.pass},
                    {"fail", m.fail}});
  }
  return {{"log10_lo", r.axis.lo},
          {"log10_hi", r.axis.hi},
          {"bin_width", r.axis.width},
          {"gates", rows}};
}

json bad_json(const AuditReport& r) {
  json out = json::array();
  for (const BadKernel& b : r.bad_kernels) {
    out.push_back({{"kernel_id", b.kernel_id},
                   {"corpus", b.corpus},
                   {"status", b.status},
                   {"message", b.message}});
  }
  return out;
}

}  // namespace

std::string render_report_json(const AuditReport& r) {
  json doc = {{"schema", "kcv-audit-report"},
              {"schema_version", kAuditReportSchemaVersion},
              {"store", r.store_path},
              {"profile", r.options.profile},
              {"seed", r.options.seed},
              {"sample_per_stratum", r.options.sample_per_stratum},
              {"integrity",
               {{"state", audit::integrity_state_name(r.integrity.state)},
                {"store_id", r.integrity.store_id},
                {"key_file", r.integrity.key_file},
                {"signed_kernels", r.integrity.signed_kernels},
                {"unsigned_kernels", r.integrity.unsigned_kernels},
                {"unverified_reason", r.integrity.unverified_reason},
                {"problems", r.integrity.problems},
                {"more_problems", r.integrity.more_problems}}},
              {"headline", headline_json(r)},
              {"differential",
               {{"replica", differential_json(r.vs_replica)},
                {"original", differential_json(r.vs_original)}}},
              {"reverse_cases", reverse_json(r)},
              {"bad_kernels", bad_json(r)},
              {"hand_audit_sample", sample_json(r)},
              {"calibration_margins", margins_json(r)}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace kcv::audit_report
