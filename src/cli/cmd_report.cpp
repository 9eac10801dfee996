// File: src/cli/cmd_report.cpp
// `kcv report STORE.db [--json FILE] [--html FILE] [--profile P] [--sample-per-stratum N]
// [--seed N] [--corpus FILE]...`: reads an audit store (read-only; a missing store is never
// created) and prints the terminal summary; --json and --html write the same model as JSON and
// as one self-contained HTML page with the three figures. --corpus supplies, at run time, the
// original harness text shown for each reverse case. Exit 0, or 2 when the store cannot be
// opened or a file cannot be written. The store's MACs are checked first (audit::Store::verify):
// a store that fails is refused (exit 2, each problem named) unless --untrusted, which prints
// the report under a banner saying it is untrusted; a store that cannot be checked here (rows
// without MACs, or its key not on this machine) is reported under a banner saying it is
// unverified, or refused with --require-verified.
#include <fmt/format.h>

#include "cli/cli_error.hpp"
#include "cli/common.hpp"
#include "cli/stores.hpp"
#include "cli/tools.hpp"
#include "kcv/audit_report.hpp"

namespace kcv::cli {

void configure_report(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("store", o.store_path, "audit store written by `kcv audit` / `kcv merge`")
      ->required();
  cmd.add_option("--json", o.json_path, "write the report as JSON to FILE");
  cmd.add_option("--html", o.html_path, "write one self-contained HTML page to FILE");
  cmd.add_option("--profile", o.profile,
                 "profile of the differentials, sample and figures (default strict)");
  cmd.add_option("--sample-per-stratum", o.sample_per_stratum,
                 "kernels per stratum in the hand-audit sample")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--seed", o.seed, "seed of the hand-audit sample");
  cmd.add_option("--corpus", o.corpora,
                 "corpus JSONL to read the original harness text of reverse cases from")
      ->check(CLI::ExistingFile);
  cmd.add_option("--key-dir", o.key_dir,
                 "directory of store keys (default: $KCV_KEY_DIR, else ~/.config/kcv/store-keys)");
  cmd.add_flag("--untrusted", o.untrusted,
               "report a store that fails verification anyway, marked untrusted throughout");
  cmd.add_flag("--require-verified", o.require_verified,
               "refuse (exit 2) any store that is not verified: unsigned rows, or no key here");
}

ExitStatus run_report(const CliOptions& o) {
  const audit::Store store = open_store_read_only(o.store_path, o.key_dir, "STORE");
  (void)checked_integrity(store, o.store_path, "STORE", o.untrusted, o.require_verified);
  audit_report::Options options;
  if (!o.profile.empty()) options.profile = o.profile;
  options.sample_per_stratum = o.sample_per_stratum;
  options.seed = o.seed;
  options.corpora = o.corpora;
  const audit_report::AuditReport r =
      unwrap(audit_report::build_report(store, o.store_path, options));
  if (!o.json_path.empty()) write_text_file(o.json_path, render_report_json(r), "--json");
  if (!o.html_path.empty()) write_text_file(o.html_path, render_report_html(r), "--html");
  fmt::print("{}", render_report_text(r));
  return ExitStatus::kSuccess;
}

}  // namespace kcv::cli
