// File: src/cli/cmd_merge.cpp
// `kcv merge OUT.db IN.db...`: the scale-out half of `kcv audit --shard i/n`. Shards run
// anywhere (Slurm arrays, Ray); their stores are merged here in one transaction, so a conflict
// (the same kernel, gate and profile with different verdicts) leaves OUT.db as it was.
#include <fmt/format.h>

#include <cstdio>

#include "cli/cli_error.hpp"
#include "cli/tools.hpp"
#include "kcv/audit.hpp"

namespace kcv::cli {

void configure_merge(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("output", o.output, "destination store (created when absent)")->required();
  cmd.add_option("inputs", o.inputs, "shard stores to merge")->required()->check(CLI::ExistingFile);
  cmd.add_option("--key-dir", o.key_dir,
                 "directory of store keys, the destination's and each source's (default: "
                 "$KCV_KEY_DIR, else ~/.config/kcv/store-keys)");
}

ExitStatus run_merge(const CliOptions& o) {
  audit::StoreOptions options;
  options.key_dir = o.key_dir;
  const audit::MergeSummary m = unwrap(audit::merge(o.output, o.inputs, options));
  fmt::print(
      "merged {} store(s) into {}: {} run(s), {} kernel(s) added, {} verdict(s) added, "
      "{} identical, {} with differing evidence (destination kept)\n",
      o.inputs.size(), o.output, m.runs, m.kernels_added, m.verdicts_added, m.verdicts_identical,
      m.evidence_differs);
  if (m.unsigned_kernels > 0)
    fmt::print(
        "{} kernel(s) of {} carry no MAC (they hold rows of unsigned stores): kcv report "
        "marks the store unverified\n",
        m.unsigned_kernels, o.output);
  return ExitStatus::kSuccess;
}

}  // namespace kcv::cli
