// File: src/cli/cmd_replay.cpp
// `kcv replay`: rebuild a probe from its token, run exactly that probe once and judge it. Two
// sources: a token printed by `kcv verify` (--candidate LIB --probe TOKEN), or an audit failure
// read from the store (--store DB --kernel ID --gate G [--profile P] --corpus FILE...), whose
// row is run in fresh KernelBench workers. A failure that reproduces exits 1 and says
// "reproduced"; one that does not exits 3 and says so loudly, because a counterexample that no
// longer fails means the kernel, kcv or the machine changed, and a person must look.
#include <fmt/format.h>

#include <filesystem>

#include "cli/cli_error.hpp"
#include "cli/common.hpp"
#include "cli/python_env.hpp"
#include "cli/tools.hpp"
#include "kcv/audit.hpp"
#include "kcv/glr/verify.hpp"
#include "kcv/kernelbench.hpp"
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
  cmd.add_option("--candidate", o.candidate, "LIB[:KERNEL] as printed by `kcv verify`");
  cmd.add_option("--probe", o.probe, "the probe token printed by `kcv verify`");
  cmd.add_option("--store", o.store_path,
                 "an audit store: replay one of its failures (with --kernel, --gate)");
  cmd.add_option("--kernel", o.kernel, "--store: the kernel (corpus row id)");
  cmd.add_option("--gate", o.gate, "--store: the failing gate");
  cmd.add_option("--corpus", o.corpora, "--store: the corpus file(s) holding the row")
      ->expected(1, -1);
  cmd.add_option("--device", o.device, "--store: auto, cpu or cuda")->capture_default_str();
  cmd.add_option("--cache-dir", o.cache_dir,
                 "--store: compile cache (default: kcv-cache beside the store)");
  cmd.add_option("--profile", o.profile,
                 "the profile the failure was found under (--store: default the "
                 "first failing one)");
  cmd.add_option("--op", o.op, "pick the kernel implementing this op when KERNEL is not given");
  cmd.add_option("--executor", o.executor, "forked or in-process")->capture_default_str();
  cmd.add_flag("--color", o.color, "colour the verdict (ANSI)");
  add_glr_run_options(cmd, o);
}

namespace {

ExitStatus verdict_of_replay(bool reproduced, bool error, const std::string& gate,
                             const std::string& detail) {
  if (reproduced) {
    fmt::print("reproduced: {} fails again on this probe\n", gate);
    return ExitStatus::kGateFailed;
  }
  if (error) {
    fmt::print(
        "kcv could not decide this probe (error); the failure is neither reproduced nor refuted\n");
    return ExitStatus::kGateFailed;
  }
  const std::string banner(72, '!');
  fmt::print("{0}\n!!! did NOT reproduce: {1}\n{0}\n", banner, detail);
  fmt::print(stderr, "kcv: warning: the failure did NOT reproduce\n");
  return ExitStatus::kNotReproduced;
}

audit::CorpusRow find_row(const std::vector<std::string>& corpora, const std::string& id) {
  std::optional<audit::CorpusRow> found;
  for (const std::string& path : corpora) {
    audit::CorpusVisitor visit{[&](audit::CorpusRow&& row) {
                                 if (!found && row.id == id) found = std::move(row);
                               },
                               [](audit::RowError&&) {}};
    unwrap(audit::read_corpus(path, visit));
  }
  if (!found) usage_error(fmt::format("--kernel: no row '{}' in {}", id, fmt::join(corpora, ", ")));
  return *found;
}

ExitStatus replay_from_store(const CliOptions& o) {
  if (o.kernel.empty() || o.gate.empty() || o.corpora.empty()) {
    usage_error("--store needs --kernel, --gate and --corpus");
  }
  const std::string gate = std::string(gate_code(unwrap(parse_gate(o.gate))));
  audit::StoreOptions so;
  so.read_only = true;
  audit::Store store = unwrap(audit::Store::open(o.store_path, so));
  std::optional<audit::VerdictRecord> record;
  for (audit::VerdictRecord& v : unwrap(store.verdicts(o.kernel))) {
    if (v.gate == gate && v.verdict == "fail" && (o.profile.empty() || v.profile == o.profile) &&
        !record) {
      record = std::move(v);
    }
  }
  if (!record) {
    usage_error(fmt::format("--store: {} has no failing {}{} to replay", o.kernel, gate,
                            o.profile.empty() ? "" : " under " + o.profile));
  }
  const audit::CorpusRow row = find_row(o.corpora, o.kernel);
  kb::ModuleRow mr;
  mr.id = row.id;
  mr.reference_code = row.reference_code;
  mr.candidate_code = row.candidate_code;
  use_build_tree_python();
  kb::ModuleRunOptions options;
  options.workers.command = {python_interpreter(), "-m", "kcv.worker"};
  options.workers.device = o.device;
  options.workers.cache_dir =
      o.cache_dir.empty()
          ? (std::filesystem::absolute(o.store_path).parent_path() / "kcv-cache").string()
          : o.cache_dir;
  fmt::print("replaying {} of {} under {} (probe: {})\n", gate, row.id, record->profile,
             unwrap(probe_from_token(record->probe_token)).label);
  const kb::ReplayOutcome r = unwrap(kb::replay_verdict(mr, *record, options));
  fmt::print("{} {}: {} ({})\n", gate, record->profile, verdict_name(r.result.verdict),
             r.result.evidence.summary);
  return verdict_of_replay(r.reproduced, r.result.verdict == Verdict::kError, gate, r.detail);
}

}  // namespace

ExitStatus run_replay(const CliOptions& o) {
  if (!o.store_path.empty()) return replay_from_store(o);
  if (o.candidate.empty() || o.probe.empty())
    usage_error("replay needs --candidate and --probe, or --store");
  const CandidateRef ref = parse_candidate_ref(o.candidate);
  const std::string path = loadable_path(ref.path);
  check_op(o.op);
  const Probe probe = unwrap(probe_from_token(o.probe));
  if (probe.gate == GateId::kRes02)
    usage_error("--probe: RES-02 is judged from device code, not from probes");
  const std::optional<ProfileId> profile = parse_profile_flag(o.profile);
  std::unique_ptr<Candidate> candidate =
      unwrap(load_shared_library_candidate(path, ref.kernel, o.op));
  std::unique_ptr<Executor> executor = make_executor(o.executor);
  const Contract contract = effective_contract(*candidate, profile);
  fmt::print("replaying {} on {} (probe: {})\n", gate_code(probe.gate), candidate->name(),
             probe.label);
  GateResult result = glr::member_of_op(candidate->op())
                          ? glr::run_probe(*candidate, *executor, probe, contract, glr_options(o))
                          : run_probe(*candidate, *executor, probe, contract);
  const Verdict verdict = result.verdict;
  fmt::print("{}", render_table(single_gate_report(*candidate, contract, probe, *executor,
                                                   std::move(result)),
                                o.color));
  return verdict_of_replay(verdict == Verdict::kFail, verdict == Verdict::kError,
                           std::string(gate_code(probe.gate)),
                           fmt::format("{} {} on this probe now", gate_code(probe.gate),
                                       verdict == Verdict::kPass ? "passes" : "does not apply"));
}

}  // namespace kcv::cli
