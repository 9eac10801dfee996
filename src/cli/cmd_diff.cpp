// File: src/cli/cmd_diff.cpp
// `kcv diff A.db B.db [--key-dir DIR] [--untrusted]`: the verdicts of two audits of the same
// rows, compared (audit::diff_verdicts): the kernels final in both, and one table row for each
// status, replica verdict or (gate, profile) verdict that differs. Both stores are opened
// read-only and verified first, as `kcv report` does. Exit 0 when the verdicts of the kernels
// final in both are identical, 1 when some differ, 2 when a store cannot be read or fails
// verification (without --untrusted).
#include <fmt/format.h>

#include <algorithm>

#include "cli/cli_error.hpp"
#include "cli/stores.hpp"
#include "cli/tools.hpp"

namespace kcv::cli {
namespace {

constexpr size_t kListedIds = 20;  // kernels final in one store only, listed by id
constexpr size_t kReasonChars = 160;

std::string integrity_line(const audit::Integrity& i) {
  std::string line = fmt::format("integrity {}", audit::integrity_state_name(i.state));
  if (i.state == audit::Integrity::State::kUnsigned && !i.unverified_reason.empty())
    line += fmt::format(" ({})", i.unverified_reason);
  if (i.state == audit::Integrity::State::kFailed)
    line += fmt::format(" (UNTRUSTED: {} problem(s))", i.problems.size() + i.more_problems);
  return line;
}

std::string clipped(const std::string& text) {
  std::string one_line = text;
  std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  return one_line.size() <= kReasonChars ? one_line : one_line.substr(0, kReasonChars - 3) + "...";
}

void print_ids(const char* side, const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  fmt::print("final in {} only ({}, not compared):", side, ids.size());
  for (size_t i = 0; i < ids.size() && i < kListedIds; ++i) fmt::print(" {}", ids[i]);
  if (ids.size() > kListedIds) fmt::print(" and {} more", ids.size() - kListedIds);
  fmt::print("\n");
}

void print_table(const std::vector<audit::VerdictDifference>& rows) {
  size_t wk = 6, wg = 4, wp = 7, wa = 1;
  for (const auto& r : rows) {
    wk = std::max(wk, r.kernel_id.size());
    wg = std::max(wg, r.gate.size());
    wp = std::max(wp, r.profile.size());
    wa = std::max(wa, r.a.size());
  }
  fmt::print("{:<{}}  {:<7}  {:<{}}  {:<{}}  {:<{}}  {}\n", "kernel", wk, "what", "gate", wg,
             "profile", wp, "A", wa, "B");
  for (const auto& r : rows) {
    fmt::print("{:<{}}  {:<7}  {:<{}}  {:<{}}  {:<{}}  {}\n", r.kernel_id, wk, r.what,
               r.gate.empty() ? "-" : r.gate, wg, r.profile.empty() ? "-" : r.profile, wp, r.a, wa,
               r.b);
    if (!r.reason_a.empty()) fmt::print("    A: {}\n", clipped(r.reason_a));
    if (!r.reason_b.empty()) fmt::print("    B: {}\n", clipped(r.reason_b));
  }
}

}  // namespace

void configure_diff(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("a", o.store_path, "audit store A")->required();
  cmd.add_option("b", o.other_store, "audit store B (the same rows, audited again)")->required();
  cmd.add_option("--key-dir", o.key_dir,
                 "directory of store keys (default: $KCV_KEY_DIR, else ~/.config/kcv/store-keys)");
  cmd.add_flag("--untrusted", o.untrusted,
               "compare stores that fail verification anyway, marked untrusted");
}

ExitStatus run_diff(const CliOptions& o) {
  const audit::Store a = open_store_read_only(o.store_path, o.key_dir, "A");
  const audit::Store b = open_store_read_only(o.other_store, o.key_dir, "B");
  const audit::Integrity ia = checked_integrity(a, o.store_path, "A", o.untrusted, false);
  const audit::Integrity ib = checked_integrity(b, o.other_store, "B", o.untrusted, false);
  const audit::StoreDiff d = unwrap(audit::diff_verdicts(a, b));
  fmt::print("A: {} ({})\nB: {} ({})\n", o.store_path, integrity_line(ia), o.other_store,
             integrity_line(ib));
  fmt::print(
      "kernels final in both: {} ({} gate x profile verdict(s) compared); final in A only: "
      "{}; final in B only: {}\n",
      d.final_in_both, d.verdicts_compared, d.final_in_a_only.size(), d.final_in_b_only.size());
  print_ids("A", d.final_in_a_only);
  print_ids("B", d.final_in_b_only);
  if (d.identical()) {
    fmt::print("differences: 0 (the verdicts of the {} kernel(s) final in both are identical)\n",
               d.final_in_both);
    return ExitStatus::kSuccess;
  }
  std::vector<std::string> kinds;
  for (audit::DifferenceKind k : audit::kAllDifferenceKinds) {
    const auto n = std::count_if(d.differences.begin(), d.differences.end(),
                                 [&](const audit::VerdictDifference& r) { return r.kind == k; });
    if (n > 0) kinds.push_back(fmt::format("{} {}", audit::difference_kind_name(k), n));
  }
  fmt::print("differences: {} ({})\n", d.differences.size(), fmt::join(kinds, ", "));
  print_table(d.differences);
  return ExitStatus::kGateFailed;
}

}  // namespace kcv::cli
