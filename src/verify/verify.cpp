// File: src/verify/verify.cpp
// The verification pipeline: for each gate, plan probes, run each probe (stopping at the first
// failing one: a gate fails on one counterexample), judge, shrink the failure and print a replay
// line. RES-02 is judged from static device-code facts rather than from probes.
#include "kcv/verify.hpp"

#include <fmt/format.h>

#include "kcv/rng.hpp"
#include "verify/probe_runner.hpp"

namespace kcv {

bool VerifyReport::passed() const {
  for (const GateResult& r : results) {
    if (r.verdict == Verdict::kFail || r.verdict == Verdict::kError) return false;
  }
  return true;
}

Contract effective_contract(const Candidate& candidate, std::optional<ProfileId> profile) {
  Contract c = candidate.contract();
  if (profile) c.profile = *profile;
  return c;
}

GateResult run_probe(Candidate& candidate, Executor& executor, const Probe& probe,
                     const Contract& contract) {
  const Op* op = find_op(candidate.op());
  if (op == nullptr) {
    GateResult r;
    r.gate = probe.gate;
    r.verdict = Verdict::kError;
    r.reason = fmt::format("unknown op '{}'", candidate.op());
    return r;
  }
  detail::ProbeData data = detail::execute_probe(candidate, executor, *op, contract, probe);
  data.oracle.escalated = detail::escalate_borderline(*op, contract, data);
  const GateDef& def = gate_def(probe.gate);
  JudgeInput in{probe, op->signature(), contract, data.oracle, data.outcome, data.inputs};
  GateResult r = def.judge(in);
  r.gate = probe.gate;
  r.probes_run = 1;
  if (r.evidence.probe_label.empty()) r.evidence.probe_label = probe.label;
  if (r.verdict == Verdict::kFail) r.failing_probe = probe;
  return r;
}

namespace {

GateResult not_applicable(GateId id, std::string reason) {
  GateResult r;
  r.gate = id;
  r.verdict = Verdict::kNotApplicable;
  r.reason = std::move(reason);
  return r;
}

GateResult resource_gate(const Candidate& candidate, const Contract& contract,
                         const VerifyOptions& options) {
  if (options.resources) return judge_resources(*options.resources, contract);
  const auto path = candidate.device_code();
  if (!path) return not_applicable(GateId::kRes02, "no device code (a CPU kernel)");
  auto report = load_resource_report(*path);
  if (!report) {
    GateResult r;
    r.gate = GateId::kRes02;
    r.verdict = Verdict::kError;
    r.reason = report.error().to_string();
    return r;
  }
  return judge_resources(*report, contract);
}

GateResult probe_gate(Candidate& candidate, Executor& executor, const OpSignature& sig,
                      const Contract& contract, GateId id, const VerifyOptions& options) {
  const GateDef& def = gate_def(id);
  if (std::string why = def.not_applicable_reason(sig, contract); !why.empty()) {
    return not_applicable(id, why);
  }
  std::vector<Probe> probes = def.plan(sig, contract, options.seed);
  if (!options.include_large) {
    std::erase_if(probes, [](const Probe& p) { return p.label.find("large") != std::string::npos; });
  }
  if (probes.empty()) return not_applicable(id, "no probe applies to this op and contract");
  std::vector<GateResult> results;
  for (const Probe& probe : probes) {
    results.push_back(run_probe(candidate, executor, probe, contract));
    if (results.back().verdict == Verdict::kFail) break;
  }
  return combine_results(id, results);
}

}  // namespace

Expected<VerifyReport> verify(Candidate& candidate, Executor& executor, const VerifyOptions& options) {
  const Op* op = find_op(candidate.op());
  if (op == nullptr) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("unknown op '{}' (see `kcv ops`)", candidate.op()),
                      candidate.name());
  }
  VerifyReport report;
  report.kernel = candidate.name();
  report.op = candidate.op();
  report.contract = effective_contract(candidate, options.profile);
  report.seed = options.seed;
  report.generator_version = kGeneratorVersion;
  report.executor = std::string(executor.name());

  const std::vector<GateId> gates =
      options.gates.empty() ? std::vector<GateId>(kAllGates.begin(), kAllGates.end()) : options.gates;
  for (GateId id : kAllGates) {
    if (std::find(gates.begin(), gates.end(), id) == gates.end()) continue;
    if (options.progress) options.progress(fmt::format("{} {} ...", report.kernel, gate_code(id)));
    GateResult r = id == GateId::kRes02
                       ? resource_gate(candidate, report.contract, options)
                       : probe_gate(candidate, executor, op->signature(), report.contract, id, options);
    if (r.verdict == Verdict::kFail && r.failing_probe) {
      if (options.shrink) {
        Probe shrunk = shrink_probe(candidate, executor, *r.failing_probe, report.contract);
        GateResult again = run_probe(candidate, executor, shrunk, report.contract);
        if (again.verdict == Verdict::kFail) {  // report the evidence of the minimal probe
          r.evidence = again.evidence;
          r.failing_probe = shrunk;
        }
      }
      const std::string ref =
          options.replay_candidate.empty() ? candidate.name() : options.replay_candidate;
      report.replay_lines.push_back(replay_line(ref, *r.failing_probe, options.profile));
    }
    report.results.push_back(std::move(r));
  }
  return report;
}

}  // namespace kcv
