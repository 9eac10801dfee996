// File: include/kcv/gate.hpp
// Gates = probe plan + pure judge. A judge sees the probe, the oracle's result and the audited
// candidate calls, and returns a verdict with evidence; it does no I/O and runs no kernels, so
// every judge is unit-testable on synthetic outputs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcv/call.hpp"
#include "kcv/contract.hpp"
#include "kcv/finding.hpp"
#include "kcv/gate_id.hpp"
#include "kcv/op.hpp"
#include "kcv/probe.hpp"
#include "kcv/resource.hpp"

namespace kcv {

enum class Verdict { kPass, kFail, kNotApplicable, kError };
std::string_view verdict_name(Verdict v);

struct Evidence {
  std::string summary;            // one line a person reads first
  std::string probe_label;
  int output = 0;
  int64_t worst_index = -1;       // logical row-major index of the worst element
  double candidate_value = 0;
  double oracle_value = 0;
  double worst_ratio = 0;         // error / tau at worst_index (inf for a TF violation)
  std::vector<double> ratio_quantiles;  // p50, p90, p99, max over the probe's elements
  double bits_lost = 0;           // PRC gates
  int64_t violations = 0;         // elements (or calls) that broke the property
};

struct GateResult {
  GateId gate = GateId::kCmp01;
  Verdict verdict = Verdict::kNotApplicable;
  std::string reason;             // why n/a or error; empty otherwise
  Evidence evidence;
  std::optional<Probe> failing_probe;
  int probes_run = 0;
  Finding finding = Finding::kNone;           // set on every kFail
  ProbeScope scope = ProbeScope::kReference;  // of the failing probe (set by the pipeline)
  int probes_refused = 0;  // probes the reference itself refused (a view it does not take)
  int probes_not_run = 0;  // probes the runner could not run here (ProbeOutcome::refused): a
                           // gate with any, and no failure, is an error, never a pass
};

/// Everything a judge may look at for one probe.
struct JudgeInput {
  const Probe& probe;
  const OpSignature& sig;
  const Contract& contract;
  const OracleResult& oracle;
  CallsView calls;  // the probe's calls (a ProbeOutcome converts)
  const std::vector<HostTensor>& inputs;  // the probe's inputs, as generated (pre-call)
};

using PlanFn = std::vector<Probe> (*)(const OpSignature& sig, const Contract& contract, uint64_t seed);
using JudgeFn = GateResult (*)(const JudgeInput& in);

struct GateDef {
  GateId id;
  std::string_view code;         // "CMP-01"
  std::string_view title;        // one line for `kcv gates`
  std::string_view explanation;  // several lines for `kcv explain`
  bool tolerance_free;
  PlanFn plan;                   // empty vector: gate does not apply (reason from applicability)
  JudgeFn judge;                 // null for RES-02 (judged from a ResourceReport)
  /// Empty when the gate applies to this op/contract; otherwise the reason it does not.
  std::string (*not_applicable_reason)(const OpSignature& sig, const Contract& contract);
};

const GateDef& gate_def(GateId id);

/// Whether the gate's judge reads JudgeInput::inputs for this op (PRC-01 of an op that takes exp:
/// the largest input magnitude sets its exp budget). Otherwise the judge sees the inputs' dtypes
/// and ranks through the signature and contract only, so a caller may pass it no inputs (a
/// KernelBench input can be gigabytes).
bool judge_reads_input_values(GateId id, const OpSignature& sig);

/// Whether the gate's judge reads the oracle's bound (tau, and the no-value-claim rule built on
/// its scale). EXC-01 judges the NaN/+Inf/-Inf class of every element and reads no bound, so an
/// oracle may leave out work only the bound needs (ModelOracle's pooled scale) for its probes.
bool judge_reads_bound(GateId id);

/// Folds per-probe results: fail beats error beats pass beats n/a; evidence of the worst probe.
GateResult combine_results(GateId id, const std::vector<GateResult>& per_probe);

/// RES-02: judge a resource report against the contract's budgets and the arch's limits.
GateResult judge_resources(const ResourceReport& report, const Contract& contract);

}  // namespace kcv
