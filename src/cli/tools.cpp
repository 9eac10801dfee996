// File: src/cli/tools.cpp
// kTools[] and the dispatcher. CLI11 parses; its errors and ours print one line
// "kcv: error: ..." and exit 2; --help exits 0. Errors from kcv (CliFailure) and unexpected
// exceptions are caught here, at the edge, and mapped to an ExitStatus.
#include "cli/tools.hpp"

#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "cli/cli_error.hpp"
#include "kcv/glr/verify.hpp"
#include "kcv/report.hpp"
#include "kcv/verify.hpp"

namespace kcv::cli {
namespace {

constexpr Tool kTools[] = {
    {"verify",
     "verify a kernel from a shared library against the twelve gates (GLR ops: their four)",
     configure_verify, run_verify},
    {"replay", "re-run one failing probe printed by `kcv verify`", configure_replay, run_replay},
    {"calibrate", "run the bundled positive control and red team: the rigor gap in miniature",
     configure_calibrate, run_calibrate},
    {"gates", "list the twelve gates", configure_gates, run_gates},
    {"explain", "explain one gate in detail", configure_explain, run_explain},
    {"ops", "list the operators the oracle knows, with their signatures", configure_ops, run_ops},
    {"merge", "merge audit shard stores into one (all or nothing; conflicts name the key)",
     configure_merge, run_merge},
    {"audit", "audit KernelBench-style corpora into a resumable store (runs python -m kcv.audit)",
     configure_audit, run_audit},
    {"corpus-check", "read JSONL corpora: row counts per language and level, every malformed row",
     configure_corpus_check, run_corpus_check},
    {"report", "audit report from a store: headline, differentials, figures (--json, --html)",
     configure_report, run_report},
    {"diff", "compare the verdicts of two stores of the same rows (exit 1 when any differ)",
     configure_diff, run_diff},
};

std::string failure_message(const CLI::App* /*app*/, const CLI::Error& e) {
  return fmt::format("kcv: error: {}\nRun 'kcv --help' or 'kcv <command> --help' for usage.\n", e.what());
}

}  // namespace

int run_cli(int argc, char** argv) {
  if (Status st = glr::register_ops(); !st) {  // the GLR ops join the op registry
    std::fprintf(stderr, "kcv: internal error: %s\n", st.error().to_string().c_str());
    return to_int(ExitStatus::kInternal);
  }
  CliOptions options;
  options.seed = VerifyOptions{}.seed;
  CLI::App app{"kcv: a contract-grade verifier for kernels", "kcv"};
  app.set_version_flag("--version", std::string(kcv_version()));
  app.require_subcommand(1);
  app.failure_message(failure_message);
  app.footer("Exit codes: 0 all gates passed, 1 a gate failed (replay: reproduced), 2 bad input, "
             "3 replay did not reproduce, 4 internal error. See docs/04_cli.md.");
  const Tool* chosen = nullptr;
  for (const Tool& tool : kTools) {
    CLI::App* cmd = app.add_subcommand(tool.name, tool.summary);
    tool.configure(*cmd, options);
    cmd->callback([&chosen, &tool] { chosen = &tool; });
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? to_int(ExitStatus::kSuccess) : to_int(ExitStatus::kUsage);
  }
  try {
    return to_int(chosen->run(options));
  } catch (const CliFailure& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "kcv: error: %s\n", f.what());
    return to_int(f.status());
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kcv: internal error: %s\n", e.what());
    return to_int(ExitStatus::kInternal);
  }
}

}  // namespace kcv::cli
