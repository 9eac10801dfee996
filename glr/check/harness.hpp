// File: glr/check/harness.hpp
// The run loop shared by glr_check (GPU) and glr_emulate (the kernels on the CPU): one accuracy row
// per (case, member) against the fp64 chunked reference, the NaN-propagation and determinism checks
// per member, a summary line and, with --out, a markdown report. The Runner decides where the
// kernels run. Exit status: 0 all passed, 1 a failure.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "check/check_result.hpp"
#include "check/device_results.hpp"

namespace kcv::glr::check {

enum class CaseList { kTiny, kQuick, kFull };

struct HarnessOptions {
  CaseList cases = CaseList::kFull;
  std::string out;     ///< markdown report path, empty for none
  std::string member;  ///< run only this member ("gdn", ...); empty for all
  int threads = 0;     ///< reference threads; 0 = hardware concurrency
  int runs = 10;       ///< determinism runs
  bool nan_check = true;
  bool determinism = true;
  std::string command;  ///< the command line, for the report
};

/// Parses the common flags: [--tiny|--quick] [--out FILE] [--member NAME] [--threads N] [--runs N]
/// [--accuracy-only] (no NaN-propagation and determinism checks).
/// `extra` may consume a flag it knows (returning true) before it is rejected.
bool parse_options(int argc, char** argv, HarnessOptions& opt,
                   const std::function<bool(const std::string&)>& extra = {});

/// `checks` holds checks already run (the GPU harness's argument validation); they are printed
/// first and count towards the verdict.
int run_harness(const HarnessOptions& opt, const Runner& runner, const std::string& device,
                std::vector<CheckResult> checks);

}  // namespace kcv::glr::check
