// File: src/verify/verify.cpp
// verify(): the pipeline (kcv/pipeline.hpp) with the op parts (kcv/op_pipeline.hpp) for one
// candidate under one profile, plus a replay line for every failing gate. run_probe and
// shrink_probe are the same pipeline's judge_probe and shrink_failing_probe, for `kcv replay`.
#include "kcv/verify.hpp"

#include <fmt/format.h>

#include "kcv/op_pipeline.hpp"
#include "kcv/rng.hpp"

namespace kcv {

namespace {

constexpr int kShrinkRuns = 150;

GateResult unknown_op(const Candidate& candidate, GateId gate) {
  GateResult r;
  r.gate = gate;
  r.verdict = Verdict::kError;
  r.reason = fmt::format("unknown op '{}'", candidate.op());
  return r;
}

}  // namespace

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
  if (op == nullptr) return unknown_op(candidate, probe.gate);
  SignatureProbes source(*op, contract, /*include_large=*/true);
  OpOracle oracle(*op, contract);
  ExecutorRunner runner(candidate, executor, std::nullopt);
  return judge_probe(source, oracle, runner, probe, contract);
}

Probe shrink_probe(Candidate& candidate, Executor& executor, const Probe& failing,
                   const Contract& contract) {
  const Op* op = find_op(candidate.op());
  if (op == nullptr) return failing;
  SignatureProbes source(*op, contract, /*include_large=*/true);
  OpOracle oracle(*op, contract);
  ExecutorRunner runner(candidate, executor, std::nullopt);
  return shrink_failing_probe(source, oracle, runner, failing, contract, kShrinkRuns);
}

void run_verify_pipeline(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                         const VerifyOptions& options, const std::vector<GateId>& default_gates,
                         int shrink_runs, const std::string& candidate_name, VerifyReport& report) {
  PipelineOptions po;
  po.seed = options.seed;
  po.gates = options.gates.empty() ? default_gates : options.gates;
  po.profiles = {report.contract.profile};
  po.shrink = options.shrink;
  po.shrink_runs = shrink_runs;
  if (options.progress) {
    po.progress = [&](std::string_view line) {
      options.progress(fmt::format("{} {}", report.kernel, line));
    };
  }
  PipelineReport pr = run_pipeline(source, oracle, runner, report.contract, po);
  report.results = std::move(pr.profiles.front().results);
  const std::string& ref =
      options.replay_candidate.empty() ? candidate_name : options.replay_candidate;
  for (const GateResult& r : report.results) {
    if (r.verdict == Verdict::kFail && r.failing_probe) {
      report.replay_lines.push_back(replay_line(ref, *r.failing_probe, options.profile));
    }
  }
}

Expected<VerifyReport> verify(Candidate& candidate, Executor& executor,
                              const VerifyOptions& options) {
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

  SignatureProbes source(*op, report.contract, options.include_large);
  OpOracle oracle(*op, report.contract);
  CallPolicy policy;
  policy.timeout_ms = options.call_timeout_ms;
  policy.deadline = options.deadline;
  policy.max_timeouts = options.max_timeouts;
  ExecutorRunner runner(candidate, executor, options.resources, policy);
  run_verify_pipeline(source, oracle, runner, options, {}, kShrinkRuns, candidate.name(), report);
  return report;
}

}  // namespace kcv
