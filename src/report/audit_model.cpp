// File: src/report/audit_model.cpp
// Assembles the audit report's model from the store: the headline queries of kcv::audit, then
// one pass over every kernel and its verdicts for what SQL aggregates cannot give — the reverse
// cases (kcv accepts, another judge rejects) one by one, the non-ok kernels, the threshold
// margins, and the detail of each sampled kernel. A reverse case uses the same rule as
// audit::differential (judged = status ok with a pass or fail under the profile; kcv rejects =
// some verdict fails; the other judge accepts only with the word "accepted"), so the list always
// has as many entries as the 2x2's cell.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "report/audit_report_internal.hpp"

namespace kcv::audit_report {
namespace {

struct KernelView {
  const audit::KernelRow* row = nullptr;
  std::vector<GateVerdict> gates;  // under the report's profile
  bool judged = false;
  bool rejected = false;
  std::vector<std::string> failing;
  std::vector<std::string> failing_findings;
};

/// "summary" of a verdict's evidence JSON; empty when it has none or does not parse.
std::string evidence_summary(const std::string& evidence_json) {
  const nlohmann::json doc = nlohmann::json::parse(evidence_json, nullptr, false);
  if (!doc.is_object()) return {};
  auto it = doc.find("summary");
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool other_rejects(const std::optional<std::string>& verdict) {
  return verdict && *verdict != "accepted";
}

void select_profile(AuditReport& r) {
  const std::string& p = r.options.profile;
  for (const audit::ProfileHeadline& h : r.headline.profiles) {
    if (h.profile == p) r.profile_headline = h;
  }
  for (const audit::GateRate& g : r.headline.gates) {
    if (g.profile == p) r.gates.push_back(g);
  }
  for (const audit::FindingCount& f : r.headline.findings) {
    if (f.profile == p) r.findings.push_back(f);
  }
  for (const audit::RobustnessRow& row : r.headline.robustness) {
    if (row.profile == p) r.robustness.push_back(row);
    if (row.choice == audit::ContractChoice::kAsJudged) r.by_profile.push_back(row);
  }
  for (const audit::ClassRate& c : r.headline.classes) {
    if (c.profile == p) r.classes.push_back(c);
  }
}

Expected<KernelView> view_of(const audit::Store& store, const audit::KernelRow& k,
                             const std::string& profile, MarginBuilder& margins) {
  Expected<std::vector<audit::VerdictRecord>> verdicts = store.verdicts(k.info.kernel_id);
  if (!verdicts) return verdicts.error();
  KernelView v;
  v.row = &k;
  for (const audit::VerdictRecord& rec : *verdicts) {
    if (rec.profile != profile) continue;
    margins.add(rec);
    v.gates.push_back(
        {rec.gate, rec.verdict, rec.reason, rec.worst_ratio, evidence_summary(rec.evidence_json)});
    v.judged |= rec.verdict == "pass" || rec.verdict == "fail";
    if (rec.verdict == "fail") {
      v.rejected = true;
      v.failing.push_back(rec.gate);
      v.failing_findings.emplace_back(
          rec.finding == Finding::kNone ? "" : std::string(finding_name(rec.finding)));
    }
  }
  // As in the headline (audit/queries.cpp): only a kernel whose status is ok is judged; the
  // verdicts of an unfinished battery, passes or fails, decide nothing.
  v.judged = v.judged && k.status == audit::KernelStatus::kOk;
  v.rejected = v.rejected && v.judged;
  return v;
}

void add_kernel(AuditReport& r, const KernelView& v) {
  const audit::KernelRow& k = *v.row;
  if (k.status != audit::KernelStatus::kOk) {
    r.bad_kernels.push_back(
        {k.info.kernel_id, k.info.corpus, std::string(audit::status_name(k.status)), k.message});
  }
  if (!v.judged || v.rejected) return;
  ReverseCase c;
  if (other_rejects(k.replica_verdict)) c.rejected_by.push_back("replica");
  if (other_rejects(k.info.original_verdict)) c.rejected_by.push_back("original");
  if (c.rejected_by.empty()) return;
  c.kernel_id = k.info.kernel_id;
  c.corpus = k.info.corpus;
  c.op_class = k.info.op_class;
  c.original_verdict = k.info.original_verdict;
  c.replica_verdict = k.replica_verdict;
  c.status = std::string(audit::status_name(k.status));
  c.message = k.message;
  c.gates = v.gates;
  r.reverse_cases.push_back(std::move(c));
}

Status fill_sample(AuditReport& r, const audit::Store& store,
                   const std::map<std::string, KernelView>& views) {
  Expected<std::vector<audit::SampleItem>> sample = audit::hand_audit_sample(
      store, r.options.profile, r.options.sample_per_stratum, r.options.seed);
  if (!sample) return sample.error();
  for (const audit::SampleItem& item : *sample) {
    SampleEntry e{item.kernel_id, item.stratum};
    if (auto it = views.find(item.kernel_id); it != views.end()) {
      const audit::KernelRow& k = *it->second.row;
      e.status = std::string(audit::status_name(k.status));
      e.op_class = k.info.op_class;
      e.language = k.info.language;
      e.original_verdict = k.info.original_verdict;
      e.replica_verdict = k.replica_verdict;
      e.failing_gates = it->second.failing;
      e.failing_findings = it->second.failing_findings;
    }
    r.sample.push_back(std::move(e));
  }
  return {};
}

// The original harness text is third-party corpus data: read at run time, only for the
// reverse cases, never stored.
Status fill_harness(AuditReport& r) {
  if (r.reverse_cases.empty() || r.options.corpora.empty()) return {};
  std::map<std::string, ReverseCase*> wanted;
  for (ReverseCase& c : r.reverse_cases) wanted[c.kernel_id] = &c;
  for (const std::string& path : r.options.corpora) {
    Expected<audit::ReadCounts> read = audit::read_corpus(
        path, {[&](audit::CorpusRow&& row) {
                 if (auto it = wanted.find(row.id); it != wanted.end())
                   it->second->original_harness = std::move(row.original_harness);
               },
               [](audit::RowError&&) {}});
    if (!read) return make_error(read.error().code, read.error().message, "--corpus " + path);
  }
  return {};
}

}  // namespace

Expected<AuditReport> build_report(const audit::Store& store, std::string store_path,
                                   const Options& options) {
  AuditReport r;
  r.store_path = std::move(store_path);
  r.options = options;
  Expected<audit::Integrity> integrity = store.verify();
  if (!integrity) return integrity.error();
  r.integrity = std::move(integrity).value();
  Expected<audit::Headline> headline = audit::headline(store);
  if (!headline) return headline.error();
  r.headline = std::move(headline).value();
  select_profile(r);
  for (auto [against, out] : {std::pair{"replica", &r.vs_replica}, {"original", &r.vs_original}}) {
    Expected<std::vector<audit::Differential>> d =
        audit::differential(store, options.profile, against);
    if (!d) return d.error();
    *out = std::move(d).value();
  }
  Expected<std::vector<audit::KernelRow>> kernels = store.kernels();
  if (!kernels) return kernels.error();
  r.kernels = static_cast<int64_t>(kernels->size());
  MarginBuilder margins(r.axis);
  std::map<std::string, KernelView> views;
  for (const audit::KernelRow& k : *kernels) {
    Expected<KernelView> v = view_of(store, k, options.profile, margins);
    if (!v) return v.error();
    add_kernel(r, *v);
    views.emplace(k.info.kernel_id, std::move(v).value());
  }
  r.margins = std::move(margins).rows();
  if (Status s = fill_sample(r, store, views); !s) return s.error();
  if (Status s = fill_harness(r); !s) return s.error();
  return r;
}

}  // namespace kcv::audit_report
