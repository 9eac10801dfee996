// File: src/cli/exit_status.hpp
// The exit codes of `kcv`, documented in docs/04_cli.md. The exit code is the verdict: scripts
// and CI read it, so each value has exactly one meaning.
#pragma once

namespace kcv::cli {

enum class ExitStatus : int {
  kSuccess = 0,        // every gate passed / the command did what was asked
  kGateFailed = 1,     // a gate failed or errored; `kcv replay`: the failure reproduced;
                       // `kcv diff`: verdicts differ
  kUsage = 2,          // bad flags or input: unknown op, malformed contract, missing entry point
  kNotReproduced = 3,  // `kcv replay`: the probe passes now
  kInternal = 4,       // a bug in kcv (an unexpected exception)
};

inline int to_int(ExitStatus s) { return static_cast<int>(s); }

}  // namespace kcv::cli
