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
#include "worker/oom_kills.hpp"
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
  int struck() const { return struck_; }
  /// Workers the out-of-memory killer took (oom_kills.hpp): never counted in struck().
  int out_of_memory() const { return out_of_memory_; }
  /// Whether the worker whose end the last reap_and_describe() worded was taken by the
  /// out-of-memory killer (false after kill_and_describe() and once a new worker starts).
  bool last_end_out_of_memory() const { return last_end_out_of_memory_; }
  const WorkerOptions& options() const { return options_; }
  WorkerProcess* process() { return proc_.get(); }

  /// Kills the worker (if still alive) and returns "<how it ended>; <stderr tail>" wording.
  std::string kill_and_describe();
  /// After EOF on stdout: reaps the worker (grace period), and words its death.
  std::string reap_and_describe();
  /// The status of the last call's result (the documented exit after a CUDA sticky error
  /// follows an exception).
  void note_result(CallStatus status) { last_status_ = status; }
  /// Why the worker that served the previous call is gone although no call was in flight and
  /// kcv did not end it (an empty message if it is not): a worker that dies between calls is a
  /// crash, which the next call records instead of running. Taking it clears it.
  struct Death {
    std::string message;
    bool out_of_memory = false;  // the out-of-memory killer took it
  };
  Death take_death_between_calls();
  /// A worker found stopped (the executor's watchdog) counts as struck.
  void note_stopped();
  /// Marks where the next request or call begins in the worker's stderr: the words of a failure
  /// after it quote what the worker wrote from here on, not an earlier load's traceback.
  void mark_stderr();

 private:
  Expected<WorkerKernelInfo> start();
  Expected<nlohmann::json> request(const std::string& line, std::string_view reply_type,
                                   Clock::time_point deadline);
  std::string with_stderr(std::string text);
  void note_death();
  /// The error of a request whose worker is gone (EOF, or a failed send): its end worded, and
  /// the out-of-memory cause when the OOM killer took it.
  Error died_during_request();
  /// "a -> b" when `e` is a SIGKILL kcv did not send and an oom_kill count rose since the
  /// worker started; "" otherwise.
  std::string oom_rise(const Exit& e) const;
  std::vector<std::string> oom_counter_files() const;

  WorkerOptions options_;
  std::unique_ptr<WorkerProcess> proc_;
  WorkerKernelInfo info_;
  int started_ = 0;
  int struck_ = 0;          // workers that died of a signal not kcv's, or were found stopped
  bool accounted_ = false;  // the current worker's end was already worded into a record or error
  bool loaded_ = false;     // the current worker's last load succeeded
  int out_of_memory_ = 0;   // workers the out-of-memory killer took
  bool last_end_out_of_memory_ = false;
  OomKills oom_at_start_;  // the counts read as the current worker was spawned
  CallStatus last_status_ = CallStatus::kOk;
  Death death_;
  std::size_t stderr_mark_ = 0;  // stderr bytes the worker wrote before the current request
};

}  // namespace kcv::worker
