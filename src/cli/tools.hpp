// File: src/cli/tools.hpp
// The table of subcommands (ninja's kTools[]): each tool has a name, a one-line summary, a
// function that declares its flags on a CLI11 subcommand, and a function that runs it. `kcv
// --help` is generated from this table, so adding a command is adding a row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/exit_status.hpp"
#include "kcv/glr/verify.hpp"

namespace kcv::cli {

/// Every flag of every command; each tool binds the ones it uses.
struct CliOptions {
  std::string candidate;   // verify: LIB; replay: LIB[:KERNEL]
  std::string kernel;      // a name or a glob (control.*)
  std::string op;
  std::string profile;
  std::string gates;       // comma-separated gate codes
  std::string executor = "forked";
  std::string json_path;
  std::string junit_path;
  std::string resources_path;
  std::string probe;       // replay: the probe token
  std::string gate;        // explain
  std::string output;      // merge: OUT.db
  std::vector<std::string> inputs;  // merge: IN.db...; corpus-check: FILE.jsonl...
  std::string store_path;           // report: STORE.db; diff: A.db
  std::string other_store;          // diff: B.db
  std::string key_dir;              // report, merge: where store keys are (--key-dir)
  bool untrusted = false;           // report: show a store that fails verification, marked
  bool require_verified = false;    // report: refuse any store that is not verified
  std::string html_path;            // report: --html
  std::vector<std::string> corpora;  // report: --corpus
  int sample_per_stratum = 3;       // report
  uint64_t seed = 0;       // set from VerifyOptions' default when the table is built
  bool no_shrink = false;
  bool no_large = false;
  bool list = false;
  bool color = false;
  bool quick = false;
  std::string grades = "fp32";       // verify (GLR ops): precision grades to judge under
  std::string glr_cases = "full";    // verify (GLR ops): case list, small or full
  int64_t max_tokens = 0;            // verify (GLR ops): probe budget in tokens (0: none)
  int runs = 10;                     // verify (GLR ops): ORD-02 repetitions
  int threads = 0;                   // verify, replay (GLR ops): reference threads
  int timeout_s = 600;               // verify, replay (GLR ops): deadline per call
  double call_timeout_s = 10;        // verify: each call's deadline
  double deadline_s = 0;             // verify: the whole run's deadline (0: none)
  std::string device = "auto";       // replay --store: where the workers run
  std::string cache_dir;             // replay --store: compile cache (default beside the store)
};

struct Tool {
  const char* name;
  const char* summary;
  void (*configure)(CLI::App& cmd, CliOptions& o);
  ExitStatus (*run)(const CliOptions& o);
};

void configure_verify(CLI::App& cmd, CliOptions& o);
ExitStatus run_verify(const CliOptions& o);
void configure_replay(CLI::App& cmd, CliOptions& o);
ExitStatus run_replay(const CliOptions& o);
void configure_calibrate(CLI::App& cmd, CliOptions& o);
ExitStatus run_calibrate(const CliOptions& o);
void configure_gates(CLI::App& cmd, CliOptions& o);
ExitStatus run_gates(const CliOptions& o);
void configure_explain(CLI::App& cmd, CliOptions& o);
ExitStatus run_explain(const CliOptions& o);
void configure_ops(CLI::App& cmd, CliOptions& o);
ExitStatus run_ops(const CliOptions& o);
void configure_merge(CLI::App& cmd, CliOptions& o);
ExitStatus run_merge(const CliOptions& o);
void configure_audit(CLI::App& cmd, CliOptions& o);
ExitStatus run_audit(const CliOptions& o);
void configure_corpus_check(CLI::App& cmd, CliOptions& o);
ExitStatus run_corpus_check(const CliOptions& o);
void configure_report(CLI::App& cmd, CliOptions& o);
ExitStatus run_report(const CliOptions& o);
void configure_diff(CLI::App& cmd, CliOptions& o);
ExitStatus run_diff(const CliOptions& o);

/// The GLR options of `verify` and `replay` (kcv/glr/verify.hpp), validated: bad grades or case
/// lists are usage errors naming the flag.
glr::GlrOptions glr_options(const CliOptions& o);
/// --threads and --timeout, shared by `verify` and `replay` for GLR ops.
void add_glr_run_options(CLI::App& cmd, CliOptions& o);

/// Parses argv against kTools and runs the chosen tool; every failure becomes an exit status.
int run_cli(int argc, char** argv);

}  // namespace kcv::cli
