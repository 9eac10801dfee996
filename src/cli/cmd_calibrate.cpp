// File: src/cli/cmd_calibrate.cpp
// `kcv calibrate`, the main job: every bundled kernel (examples/) goes through the KernelBench
// allclose replica and through the gates (forked executor), one line per kernel as it finishes,
// then the rigor gap in miniature. Exit 1 when a red-team kernel escapes its intended gate or a
// positive-control kernel fails: the calibration is itself a test. Shrinking is off (the verdict
// does not depend on it and calibration prints no replay lines); --quick runs each red-team
// kernel on its intended gate only and skips the large shapes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "bundled.hpp"
#include "cli/calibration.hpp"
#include "cli/cli_error.hpp"
#include "cli/common.hpp"
#include "cli/tools.hpp"
#include "kcv/replica.hpp"

namespace kcv::cli {
namespace {

struct BundledEntry {
  const kcv_kernel* kernel;
  std::optional<GateId> intended;  // nullopt: positive control
};

/// A RES-02 red-team kernel is only broken through its device code, which exists only when the
/// build found nvcc; without it the kernel cannot be judged and is left out, loudly.
bool lacks_device_code(const kcv_kernel& k, std::optional<GateId> intended) {
  return intended == GateId::kRes02 && k.device_code == nullptr;
}

/// The bundled table of examples/bundled.hpp, in its order.
std::vector<BundledEntry> bundled_entries() {
  std::vector<BundledEntry> entries;
  for (const kcv_kernel& k : kcv_bundled_kernels()) {
    if (!is_redteam_kernel(k) && !is_control_kernel(k)) continue;
    const std::optional<GateId> intended = intended_gate(k.name);
    if (lacks_device_code(k, intended)) {
      fmt::print("skipped {}: no device code (kcv was built without nvcc)\n", k.name);
      continue;
    }
    entries.push_back({&k, intended});
  }
  return entries;
}

std::function<void(std::string_view)> progress_printer(std::size_t index, std::size_t total) {
  if (!is_terminal(STDERR_FILENO)) return {};
  return [index, total](std::string_view line) { fmt::print(stderr, "\r\033[K[{}/{}] {}", index + 1, total, line); };
}

void run_replica(KernelOutcome& k, Candidate& candidate, Executor& executor) {
  auto replica = allclose_replica(candidate, executor);
  if (!replica) {
    k.replica_note = "replica error: " + replica.error().to_string();
    return;
  }
  k.replica_accepted = replica->accepted;
  k.replica_note = replica->reason;
}

KernelOutcome calibrate_one(const BundledEntry& e, Executor& executor, bool quick,
                            std::function<void(std::string_view)> progress) {
  const auto start = std::chrono::steady_clock::now();
  KernelOutcome k{.name = e.kernel->name, .op = e.kernel->op, .intended = e.intended};
  auto candidate = make_candidate(*e.kernel, std::string(kcv_bundled_base_dir()));
  if (candidate) {
    run_replica(k, **candidate, executor);
    VerifyOptions options;
    options.shrink = false;
    if (quick && k.intended) options.gates = {*k.intended};
    options.include_large = !quick;
    options.progress = std::move(progress);
    auto report = verify(**candidate, executor, options);
    if (report) k.report = std::move(*report);
    else k.error = report.error().to_string();
  } else {
    k.error = candidate.error().to_string();
  }
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return k;
}

}  // namespace

void configure_calibrate(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("--json", o.json_path, "write every report plus the calibration summary (JSON) to FILE");
  cmd.add_flag("--quick", o.quick, "red-team kernels on their intended gate only; no large shapes");
}

ExitStatus run_calibrate(const CliOptions& o) {
  const std::vector<BundledEntry> entries = bundled_entries();
  std::unique_ptr<Executor> executor = make_forked_executor();
  fmt::print("kcv calibrate: {} bundled kernels through the allclose replica (KernelBench: 5 trials, "
             "atol = rtol = 1e-2) and through kcv's gates ({} executor)\n\n", entries.size(), executor->name());
  std::fflush(stdout);
  std::size_t name_width = 0;
  for (const BundledEntry& e : entries) name_width = std::max(name_width, std::string_view(e.kernel->name).size());
  std::vector<KernelOutcome> outcomes;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    outcomes.push_back(calibrate_one(entries[i], *executor, o.quick, progress_printer(i, entries.size())));
    if (is_terminal(STDERR_FILENO)) fmt::print(stderr, "\r\033[K");
    fmt::print("{}\n", outcome_line(outcomes.back(), i, entries.size(), name_width));
    std::fflush(stdout);
  }
  fmt::print("{}", render_calibration_summary(outcomes));
  if (!o.json_path.empty()) write_text_file(o.json_path, render_calibration_json(outcomes), "--json");
  for (const KernelOutcome& k : outcomes) {
    if (!k.as_expected()) return ExitStatus::kGateFailed;
  }
  return ExitStatus::kSuccess;
}

}  // namespace kcv::cli
