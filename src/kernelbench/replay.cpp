// File: src/kernelbench/replay.cpp
// Replaying an audit failure from the store: the token holds the probe's whole shape (outcome.cpp),
// so the workers load at exactly that shape, the probe is judged once under the recorded profile,
// and the result is compared with the recorded evidence. "Reproduced" means the same finding and,
// where the evidence names an element, the same element holding the same candidate value; a
// pass, or a failure elsewhere, is said plainly.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "kcv/kernelbench.hpp"
#include "kernelbench/outcome.hpp"

namespace kcv::kb {
namespace {

std::string same_element(const GateResult& now, const nlohmann::json& was) {
  if (!was.contains("worst_index")) return {};
  const int64_t index = was["worst_index"].get<int64_t>();
  if (now.evidence.worst_index != index || now.evidence.output != was.value("output", 0)) {
    return fmt::format("the worst element is output{}[{}] now, output{}[{}] when recorded",
                       now.evidence.output, now.evidence.worst_index, was.value("output", 0),
                       index);
  }
  const auto& v = was["candidate_value"];
  const double recorded = v.is_number()
                              ? v.get<double>()
                              : (v == "nan" ? std::nan("") : (v == "inf" ? HUGE_VAL : -HUGE_VAL));
  const double got = now.evidence.candidate_value;
  const bool equal = (std::isnan(got) && std::isnan(recorded)) || got == recorded;
  if (!equal)
    return fmt::format("the candidate gives {} there now, {} when recorded", got, recorded);
  return {};
}

}  // namespace

Expected<ReplayOutcome> replay_verdict(const ModuleRow& row, const audit::VerdictRecord& recorded,
                                       const ModuleRunOptions& options) {
  if (recorded.verdict != "fail" || recorded.probe_token.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{} under {} is '{}', not a failure with a probe token",
                                  recorded.gate, recorded.profile, recorded.verdict),
                      row.id);
  }
  auto probe = probe_from_token(recorded.probe_token);
  if (!probe) return probe.error();
  auto profile_id = parse_profile(recorded.profile);
  if (!profile_id) return profile_id.error();
  WorkerSetup setup = options.workers;
  setup.reference_code = row.reference_code;
  setup.candidate_code = row.candidate_code;
  setup.name = row.id;
  ModuleWorkers workers(setup, {}, options.probe_budget_bytes);
  auto problem = workers.problem(probe->sizes);
  if (!problem) return problem.error();
  ModuleConfig config;
  config.call_timeout_ms = options.call_timeout_ms;
  config.probe_budget_bytes = options.probe_budget_bytes;
  Contract contract = declared_contract(row);
  config.declared_deterministic = contract.deterministic;
  config.declared_precision = declared_precision(contract);
  config.forward_seed = setup.seed;
  ModuleProbes source(**problem, probe->sizes, config);
  ModelOracle oracle(workers, config);
  ModuleRunner runner(workers, config);
  contract.profile = *profile_id;
  ReplayOutcome out;
  out.result = judge_probe(source, oracle, runner, *probe, contract);
  const nlohmann::json was = nlohmann::json::parse(recorded.evidence_json, nullptr, false);
  if (out.result.verdict != Verdict::kFail) {
    out.detail =
        fmt::format("{} {} on this probe now", recorded.gate, verdict_name(out.result.verdict));
  } else if (out.result.finding != recorded.finding) {
    out.detail = fmt::format("it fails with {} now, {} when recorded",
                             finding_name(out.result.finding), finding_name(recorded.finding));
  } else if (was.is_object()) {
    out.detail = same_element(out.result, was);
  }
  out.reproduced = out.result.verdict == Verdict::kFail && out.detail.empty();
  return out;
}

}  // namespace kcv::kb
