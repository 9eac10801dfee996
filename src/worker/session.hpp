// File: src/worker/session.hpp
// The life of the worker behind a WorkerExecutor: started lazily (spawn, hello, load, all under
// the startup deadline), kept while it behaves, killed on any failure and started afresh by the
// next call. It also words what happened to a worker that failed (its exit, its stderr tail),
// so every record and error explains itself.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kcv/worker.hpp"
#include "worker/process.hpp"

namespace kcv::worker {

class Session {
 public:
  explicit Session(WorkerOptions options);
  ~Session();  // a polite shutdown, then SIGKILL after the grace period

  /// The running worker's info, starting one first when none runs.
  Expected<WorkerKernelInfo> ensure_started();
  /// Replaces the load: sent to the running worker (within the startup timeout), or used by the
  /// next start when none runs.
  Expected<WorkerKernelInfo> reload(const WorkerLoad& load);
  int started() const { return started_; }
  const WorkerOptions& options() const { return options_; }
  WorkerProcess* process() { return proc_.get(); }

  /// Kills the worker (if still alive) and returns "<how it ended>; <stderr tail>" wording.
  std::string kill_and_describe();
  /// After EOF on stdout: reaps the worker (grace period), and words its death.
  std::string reap_and_describe();

 private:
  Expected<WorkerKernelInfo> start();
  Expected<nlohmann::json> request(const std::string& line, std::string_view reply_type,
                                   Clock::time_point deadline);
  std::string with_stderr(std::string text);

  WorkerOptions options_;
  std::unique_ptr<WorkerProcess> proc_;
  WorkerKernelInfo info_;
  int started_ = 0;
};

}  // namespace kcv::worker
