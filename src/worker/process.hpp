// File: src/worker/process.hpp
// One worker process as the orchestrator sees it: spawned with fork+exec (RLIMIT_AS set in the
// child before exec, its own process group, killed with its parent), stdin/stdout a Unix socket
// pair (so a write to a dead worker is EPIPE, never SIGPIPE in kcv), stderr a pipe whose tail is
// kept. Reading is line by line against a deadline; stderr is drained while waiting so a chatty
// worker cannot block on a full pipe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kcv/expected.hpp"

namespace kcv::worker {

using Clock = std::chrono::steady_clock;

enum class ReadEnd { kLine, kEof, kTimeout, kTooLong, kStopped };

struct ReadResult {
  ReadEnd end = ReadEnd::kLine;
  std::string line;
};

/// How a worker ended, as waitpid reported it.
struct Exit {
  bool killed_by_us = false;
  int wait_status = 0;
};

class WorkerProcess {
 public:
  /// Spawns argv[0] (PATH lookup). Errors: no such program, fork/socket failures.
  static Expected<std::unique_ptr<WorkerProcess>> spawn(const std::vector<std::string>& argv,
                                                        int64_t memory_limit_bytes,
                                                        std::size_t stderr_tail_bytes);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// Writes `line` and '\n'. False when the worker is gone (EPIPE) or the write fails.
  bool send(const std::string& line);
  /// The next complete line from stdout; a deadline of Clock::time_point::max() waits forever.
  /// While it waits, a watchdog looks at the worker every kWatchMs: a worker stopped by a signal
  /// (SIGSTOP, or a tracer's stop) ends the wait with kStopped instead of the deadline.
  ReadResult read_line(Clock::time_point deadline);
  /// True when the worker is stopped (state T or t in /proc/<pid>/stat).
  bool stopped() const;
  /// True while waitpid has not reaped the worker.
  bool alive();
  /// How the worker ended (meaningful once alive() is false).
  const Exit& exit_status() const { return exit_; }
  /// SIGKILL to the worker's process group, then reap.
  Exit kill_and_reap();
  /// Waits up to `grace` for the worker to exit by itself, then kills it.
  Exit reap(std::chrono::milliseconds grace);
  /// The last bytes (at most the tail's size) the worker wrote to stderr after the first
  /// `since` bytes it wrote there (drained first): a request's own words, not an earlier one's.
  std::string stderr_tail(std::size_t since = 0);
  /// How many bytes the worker has written to stderr so far (drained first): a mark for
  /// stderr_tail.
  std::size_t stderr_written();

 private:
  WorkerProcess() = default;
  void drain_stderr();
  void keep_stderr(const char* data, std::size_t n);

  pid_t pid_ = -1;
  int io_fd_ = -1;   // our end of the stdin/stdout socket pair
  int err_fd_ = -1;  // read end of the stderr pipe
  bool reaped_ = false;
  Exit exit_;
  std::string pending_;  // stdout bytes after the last complete line
  std::string err_tail_;
  std::size_t err_written_ = 0;  // stderr bytes received in all
  std::size_t err_cap_ = 2048;
};

/// "signal 11 (SIGSEGV: Segmentation fault)", "exit code 3".
std::string describe_exit(int wait_status);

}  // namespace kcv::worker
