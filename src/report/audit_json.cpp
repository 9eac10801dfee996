// File: src/report/audit_json.cpp
// The audit report as JSON (schema "kcv-audit-report", version kAuditReportSchemaVersion;
// fields in docs/09_report.md). Every rate is written as {hits, total, value} so a reader never
// has to guess a denominator; absent values are null. worst_ratio is finite by construction (the
// store keeps non-finite ratios as null), so no number needs a string encoding here.
#include <nlohmann/json.hpp>

#include "report/audit_report_internal.hpp"

namespace kcv::audit_report {
namespace {

using json = nlohmann::ordered_json;

json rate(const audit::Rate& r) {
  return {{"hits", r.hits}, {"total", r.total}, {"value", r.value()}};
}

template <typename T>
json opt(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

json headline_json(const AuditReport& r) {
  json statuses = json::object();
  for (const audit::StatusCount& s : r.headline.statuses) statuses[s.status] = s.kernels;
  json by_corpus = json::object();
  for (const audit::CorpusStatusCount& s : r.headline.corpus_statuses)
    by_corpus[s.corpus][s.status] = s.kernels;
  json profiles = json::array();
  for (const audit::ProfileHeadline& p : r.headline.profiles) {
    profiles.push_back({{"profile", p.profile},
                        {"any_violation", rate(p.any_violation)},
                        {"tolerance_free_floor", rate(p.tf_floor)}});
  }
  json gates = json::array();
  for (const audit::GateRate& g : r.headline.gates) {
    gates.push_back({{"profile", g.profile},
                     {"gate", g.gate},
                     {"fail", rate(g.fail)},
                     {"errors", g.errors},
                     {"not_applicable", g.not_applicable}});
  }
  json classes = json::array();
  for (const audit::ClassRate& c : r.headline.classes) {
    classes.push_back({{"profile", c.profile},
                       {"op_class", c.op_class},
                       {"any_violation", rate(c.any_violation)},
                       {"tolerance_free_floor", rate(c.tf_floor)}});
  }
  return {{"kernels", r.kernels},
          {"statuses", statuses},
          {"statuses_by_corpus", by_corpus},
          {"tolerance_free_gates", audit::tolerance_free_gates()},
          {"profiles", profiles},
          {"gates", gates},
          {"op_classes", classes},
          {"reduced_shape_kernels", r.headline.reduced_shape}};
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
                   {"failing_gates", e.failing_gates}});
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
