// File: src/cli/cli_error.hpp
// The CLI is the edge where kcv's Expected/Error values become messages and exit codes. Inside a
// command, `unwrap` turns an Error into a CliFailure exception so command bodies read straight
// through; run_cli catches it, prints one line "kcv: error: ..." and exits with the status.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "cli/exit_status.hpp"
#include "kcv/expected.hpp"

namespace kcv::cli {

class CliFailure : public std::runtime_error {
 public:
  CliFailure(ExitStatus status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  explicit CliFailure(const Error& e)
      : CliFailure(e.code == ErrorCode::kInternal ? ExitStatus::kInternal : ExitStatus::kUsage,
                   e.to_string()) {}
  ExitStatus status() const { return status_; }

 private:
  ExitStatus status_;
};

/// A usage error (exit 2) with `message`.
[[noreturn]] inline void usage_error(const std::string& message) {
  throw CliFailure(ExitStatus::kUsage, message);
}

template <typename T>
T unwrap(Expected<T> e) {
  if (!e) throw CliFailure(e.error());
  return std::move(e).value();
}

inline void unwrap(const Status& s) {
  if (!s) throw CliFailure(s.error());
}

}  // namespace kcv::cli
