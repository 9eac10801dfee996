// File: src/cli/calibration.hpp
// What `kcv calibrate` learns about each bundled kernel, and the summaries it prints: the rigor
// gap (how many broken kernels the allclose replica accepts, how many kcv rejects), the per-gate
// table and the positive-control line. Separate from the command so the arithmetic of the
// headline numbers sits in one small place.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kcv/verify.hpp"

namespace kcv::cli {

struct KernelOutcome {
  std::string name;
  std::string op;
  std::optional<GateId> intended;  // the red-team kernel's target gate; nullopt: positive control
  bool replica_accepted = false;
  std::string replica_note;        // why the replica rejected it (or its error)
  std::optional<VerifyReport> report;
  std::string error;               // the kernel could not be loaded or verified
  double seconds = 0;

  bool red_team() const { return intended.has_value(); }
  /// The verdict of the intended gate (red team), if it was run.
  std::optional<Verdict> intended_verdict() const;
  /// Gates that failed or errored, other than the intended one.
  std::vector<GateId> other_failures() const;
  /// Red team: caught by its intended gate. Control: every gate passed or did not apply.
  bool as_expected() const;
};

/// One progress line for a finished kernel; names padded to `name_width`.
std::string outcome_line(const KernelOutcome& k, std::size_t index, std::size_t total,
                         std::size_t name_width);

/// The rigor gap, the per-gate table and the positive-control line.
std::string render_calibration_summary(const std::vector<KernelOutcome>& kernels);

/// The JSON report of every verified kernel (docs/report_schema.md) plus a "calibration" object.
std::string render_calibration_json(const std::vector<KernelOutcome>& kernels);

}  // namespace kcv::cli
