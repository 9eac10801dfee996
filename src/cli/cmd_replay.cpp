// File: src/cli/cmd_replay.cpp
// `kcv replay`: rebuild a probe from its token, run exactly that probe once and judge it. A
// failure that reproduces exits 1 and says "reproduced"; one that does not exits 3 and says so
// loudly, because a counterexample that no longer fails means the kernel, kcv or the machine
// changed, and a person must look.
#include <fmt/format.h>

#include "cli/cli_error.hpp"
#include "cli/common.hpp"
#include "cli/tools.hpp"
#include "kcv/report.hpp"
#include "kcv/verify.hpp"

namespace kcv::cli {
namespace {

/// A one-gate report, so the replayed verdict prints in the same table as `kcv verify`.
VerifyReport single_gate_report(const Candidate& candidate, const Contract& contract,
                                const Probe& probe, const Executor& executor, GateResult result) {
  VerifyReport r;
  r.kernel = candidate.name();
  r.op = candidate.op();
  r.contract = contract;
  r.seed = probe.seed;
  r.executor = std::string(executor.name());
  r.results.push_back(std::move(result));
  return r;
}

}  // namespace

void configure_replay(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("--candidate", o.candidate, "LIB[:KERNEL] as printed by `kcv verify`")->required();
  cmd.add_option("--probe", o.probe, "the probe token printed by `kcv verify`")->required();
  cmd.add_option("--profile", o.profile, "the profile override the failure was found under");
  cmd.add_option("--op", o.op, "pick the kernel implementing this op when KERNEL is not given");
  cmd.add_option("--executor", o.executor, "forked or in-process")->capture_default_str();
  cmd.add_flag("--color", o.color, "colour the verdict (ANSI)");
}

ExitStatus run_replay(const CliOptions& o) {
  const CandidateRef ref = parse_candidate_ref(o.candidate);
  const std::string path = loadable_path(ref.path);
  check_op(o.op);
  const Probe probe = unwrap(probe_from_token(o.probe));
  if (probe.gate == GateId::kRes02) usage_error("--probe: RES-02 is judged from device code, not from probes");
  const std::optional<ProfileId> profile = parse_profile_flag(o.profile);
  std::unique_ptr<Candidate> candidate = unwrap(load_shared_library_candidate(path, ref.kernel, o.op));
  std::unique_ptr<Executor> executor = make_executor(o.executor);
  const Contract contract = effective_contract(*candidate, profile);
  fmt::print("replaying {} on {} (probe: {})\n", gate_code(probe.gate), candidate->name(), probe.label);
  GateResult result = run_probe(*candidate, *executor, probe, contract);
  const Verdict verdict = result.verdict;
  fmt::print("{}", render_table(single_gate_report(*candidate, contract, probe, *executor, std::move(result)), o.color));
  if (verdict == Verdict::kFail) {
    fmt::print("reproduced: {} fails again on this probe\n", gate_code(probe.gate));
    return ExitStatus::kGateFailed;
  }
  if (verdict == Verdict::kError) {
    fmt::print("kcv could not decide this probe (error); the failure is neither reproduced nor refuted\n");
    return ExitStatus::kGateFailed;
  }
  const std::string banner(72, '!');
  fmt::print("{0}\n!!! did NOT reproduce: {1} {2} on this probe now\n{0}\n", banner, gate_code(probe.gate),
             verdict == Verdict::kPass ? "passes" : "does not apply");
  fmt::print(stderr, "kcv: warning: the failure did NOT reproduce\n");
  return ExitStatus::kNotReproduced;
}

}  // namespace kcv::cli
