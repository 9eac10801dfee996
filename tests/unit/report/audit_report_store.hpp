// File: tests/unit/report/audit_report_store.hpp
// A ten-kernel synthetic audit store (our own toy data) whose every report number is worked
// out by hand below, shared by the report unit tests and the e2e helper that writes a store
// for `kcv report`. Corpus A: k1 (CMP-01 fails, value_over_bound: the gap), k2 (CMP-02 fails,
// input_modified, tolerance-free: the gap), k3 (ORD-02 fails, nondeterministic, without declared
// determinism: not in the floor; both reject). Corpus B: k4 clean (original unknown), k5 clean
// but rejected by replica and original (reverse twice), k6 crashed without verdicts, k7 EXC-01
// fails (class_mismatch) and CMP-01 errors (original compile_error), k8 timed out after one
// passing gate (a status: not judged), k9 clean with an id full of markup characters and
// rejected by the original only (reverse), k10 a malformed row.
//
// Strict, judged = k1 k2 k3 k4 k5 k7 k9 (7); any violation 4 (k1 k2 k3 k7); TF floor 2 (k2 k7).
// Replica-accepted judged: k1 k2 k4 k9 (4): any 2, floor 1 (k2), the same in every robustness
// row. Original-accepted judged: k1 k2 (2): any 2, floor 1. Findings: value_over_bound,
// input_modified, nondeterministic, class_mismatch 1/7 each (replica-accepted: 1/4, 1/4, 0/4,
// 0/4). CMP-01 1/6 (+1 error; k8 timed out, so its pass is not counted), CMP-02 1/2, EXC-01
// 1/3, ORD-02 1/2 (+1 n/a). fast-math: k1 passes (1 judged, replica-accepted). vs replica
// (all): both accept 2 (k4 k9), gap 2, reverse 1 (k5), both reject 2, excluded 3 (k6 k8 k10).
// vs original (all): both accept 0, gap 2, reverse 2 (k5 k9), both reject 2, excluded 4 (k4
// k6 k8 k10).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kcv/audit.hpp"
#include "unit/test_key_dir.hpp"

namespace kcv::audit_report::testing {

inline const std::string kMarkupId = "B/z<x>&\"y\"/P9";  // sorts after B/k5

struct SpecVerdict {
  std::string gate, verdict;
  std::optional<double> ratio;
  Finding finding = Finding::kNone;
  ProbeScope scope = ProbeScope::kReference;
};

struct KernelSpec {
  std::string id, corpus, op_class;
  bool deterministic;
  std::optional<std::string> original, replica;
  audit::KernelStatus status;
  std::string message;
  std::vector<SpecVerdict> strict;
};

inline std::vector<KernelSpec> report_specs() {
  using audit::KernelStatus;
  // One kernel per entry: kept as the table it is.
  // clang-format off
  return {
      {"A/k1", "A", "elementwise", true, "accepted", "accepted", KernelStatus::kOk, "",
       {{"CMP-01", "fail", 3.0, Finding::kValueOverBound}, {"CMP-02", "pass", 0.01}, {"EXC-01", "pass", std::nullopt},
        {"ORD-02", "pass", 0.0}}},
      {"A/k2", "A", "reduction", true, "accepted", "accepted", KernelStatus::kOk, "",
       {{"CMP-01", "pass", 0.5}, {"CMP-02", "fail", 100.0, Finding::kInputModified}}},
      {"A/k3", "A", "reduction", false, "rejected", "rejected", KernelStatus::kOk, "",
       {{"CMP-01", "pass", 0.001},
        {"ORD-02", "fail", 2.0, Finding::kNondeterministic, ProbeScope::kRepeat}}},
      {"B/k4", "B", "elementwise", true, std::nullopt, "accepted", KernelStatus::kOk, "",
       {{"CMP-01", "pass", 1.0}, {"EXC-01", "pass", std::nullopt},
        {"ORD-02", "not_applicable", std::nullopt}}},
      {"B/k5", "B", "elementwise", true, "rejected", "rejected", KernelStatus::kOk, "",
       {{"CMP-01", "pass", 0.2}}},
      {"B/k6", "B", "matmul", true, std::nullopt, std::nullopt, KernelStatus::kCrash,
       "worker died: SIGSEGV", {}},
      {"B/k7", "B", "matmul", true, "compile_error", "rejected", KernelStatus::kOk, "",
       {{"EXC-01", "fail", std::nullopt, Finding::kClassMismatch, ProbeScope::kValues},
        {"CMP-01", "error", std::nullopt}}},
      {"B/k8", "B", "matmul", true, "accepted", "accepted", KernelStatus::kTimeout,
       "call timed out after 60000 ms", {{"CMP-01", "pass", 1e-7}}},
      {kMarkupId, "B", "elementwise", true, "rejected", "accepted", KernelStatus::kOk, "",
       {{"CMP-01", "pass", 0.3}}},
  };
  // clang-format on
}

template <typename T>
T need(Expected<T> e) {
  if (!e) throw std::runtime_error(e.error().to_string());
  return std::move(e).value();
}

inline void need(const Status& s) {
  if (!s) throw std::runtime_error(s.error().to_string());
}

/// Writes the store described above to `path` (which must not exist yet).
inline void write_report_store(const std::string& path) {
  audit::Store store = need(audit::Store::open(path));
  const int64_t run = need(store.begin_run({}));
  for (const KernelSpec& s : report_specs()) {
    audit::KernelInfo info;
    info.kernel_id = s.id;
    info.corpus = s.corpus;
    info.level = 1;
    info.problem_id = 1;
    info.problem_name = "1_Toy";
    info.language = "cuda";
    info.op_class = s.op_class;
    info.determinism_declared = s.deterministic;
    info.original_verdict = s.original;
    need(store.enqueue({info}));
    audit::KernelOutcome o{s.id, s.status, s.message, s.replica, {}};
    for (const SpecVerdict& v : s.strict) {
      audit::VerdictRecord rec;
      rec.gate = v.gate;
      rec.profile = "strict";
      rec.verdict = v.verdict;
      rec.reason = v.verdict == "error" ? "judge error" : "";
      rec.worst_ratio = v.ratio;
      rec.finding = v.finding;
      rec.scope = v.scope;
      if (v.gate == "CMP-01") rec.evidence_json = R"({"summary": "tightest element within tau"})";
      o.verdicts.push_back(rec);
    }
    if (s.id == "A/k1") o.verdicts.push_back({"CMP-01", "fast-math", "pass"});
    need(store.record(o, run));
  }
  need(store.record_malformed({"b.jsonl", 10, "B/k10", "level: expected an integer"}, "B", run));
  need(store.finish_run(run));
}

}  // namespace kcv::audit_report::testing
