// File: src/worker/session.cpp
// Starting a worker is hello then load; a failure at either step (no reply in time, the worker
// died, a malformed or error reply) kills the worker and becomes an Error naming the step, the
// worker's end and its stderr tail. A reply whose fields have the wrong JSON types is a
// protocol violation too (nlohmann's type_error is caught here, at the edge).
#include "worker/session.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <utility>

#include "worker/protocol.hpp"

namespace kcv::worker {
namespace {

Clock::time_point deadline_after(int ms) {
  return ms > 0 ? Clock::now() + std::chrono::milliseconds(ms) : Clock::time_point::max();
}

}  // namespace

Session::Session(WorkerOptions options) : options_(std::move(options)) {
  if (options_.command.empty()) options_.command = default_worker_command();
}

Session::~Session() {
  if (!proc_ || !proc_->alive()) return;
  if (proc_->send(shutdown_request())) {
    proc_->read_line(deadline_after(options_.shutdown_grace_ms));  // "bye", or nothing
  }
  proc_->reap(std::chrono::milliseconds(std::max(options_.shutdown_grace_ms, 0)));
}

Expected<WorkerKernelInfo> Session::ensure_started() {
  if (proc_ && proc_->alive() && loaded_) return info_;
  if (proc_ && proc_->alive()) proc_->kill_and_reap();  // alive after a failed load: load again
  note_death();
  proc_.reset();
  return start();
}

void Session::note_death() {
  if (!proc_ || accounted_ || proc_->alive()) return;
  const Exit e = proc_->exit_status();
  if (e.killed_by_us) return;
  // kcv.worker exits with status 3 right after reporting an exception that left the CUDA
  // context unusable (docs/06 §7.3): that call already failed, the restart is the documented one
  if (WIFEXITED(e.wait_status) && WEXITSTATUS(e.wait_status) == 3 &&
      last_status_ == CallStatus::kException)
    return;
  accounted_ = true;
  if (const std::string rise = oom_rise(e); !rise.empty()) {
    ++out_of_memory_;
    death_ = {with_stderr(fmt::format("the worker process (pid {}) was killed by the "
                                      "out-of-memory killer between calls (SIGKILL while the "
                                      "oom_kill count rose {})",
                                      proc_->pid(), rise)),
              true};
    return;
  }
  if (WIFSIGNALED(e.wait_status)) ++struck_;
  death_ = {with_stderr(fmt::format("the worker process (pid {}) ended between calls, with {}, "
                                    "after its last call had returned",
                                    proc_->pid(), describe_exit(e.wait_status))),
            false};
}

Session::Death Session::take_death_between_calls() {
  if (proc_ && !proc_->alive()) note_death();
  return std::exchange(death_, Death{});
}

std::string Session::oom_rise(const Exit& e) const {
  if (e.killed_by_us || !WIFSIGNALED(e.wait_status) || WTERMSIG(e.wait_status) != SIGKILL)
    return {};
  return read_oom_kills(oom_counter_files()).describe_rise_since(oom_at_start_);
}

std::vector<std::string> Session::oom_counter_files() const {
  return options_.oom_counter_files.empty() ? default_oom_counter_files()
                                            : options_.oom_counter_files;
}

Expected<WorkerKernelInfo> Session::reload(const WorkerLoad& load) {
  options_.load = load;
  if (!proc_ || !proc_->alive()) {
    note_death();
    proc_.reset();
    return start();
  }
  loaded_ = false;
  auto fail = [&](const Error& e) {
    // A worker that says it takes another load after this one failed (a shape its problem
    // refuses, say) stays: starting a process costs far more than a load.
    if (!e.worker_reusable) {
      if (proc_->alive()) proc_->kill_and_reap();
      proc_.reset();
    }
    Error out = make_error(
        e.code, fmt::format("worker '{}' load: {}", options_.command.front(), e.message));
    out.worker_class = e.worker_class;
    out.worker_cause = e.worker_cause;
    out.worker_reusable = e.worker_reusable;
    return out;
  };
  mark_stderr();  // an earlier load's words are not this one's
  try {
    auto line = load_request(options_.load);
    if (!line) return fail(line.error());
    auto loaded = request(*line, "loaded", deadline_after(options_.startup_timeout_ms));
    if (!loaded) return fail(loaded.error());
    WorkerKernelInfo info = info_;
    if (Status s = read_loaded(*loaded, info); !s) return fail(s.error());
    info_ = info;
  } catch (const nlohmann::json::exception& e) {
    return fail(
        make_error(ErrorCode::kParse, fmt::format("worker protocol violation: {}", e.what())));
  }
  loaded_ = true;
  return info_;
}

std::string Session::with_stderr(std::string text) {
  const std::string tail = proc_ ? proc_->stderr_tail(stderr_mark_) : std::string();
  if (tail.empty()) return text;
  return fmt::format("{}; the worker's stderr ended with: {}", text, tail);
}

void Session::note_stopped() { ++struck_; }

void Session::mark_stderr() { stderr_mark_ = proc_ ? proc_->stderr_written() : 0; }

std::string Session::kill_and_describe() {
  if (!proc_) return "no worker";
  accounted_ = true;
  last_end_out_of_memory_ = false;
  const Exit e = proc_->kill_and_reap();
  const std::string how =
      e.killed_by_us ? "killed by kcv" : "ended by " + describe_exit(e.wait_status);
  return with_stderr(fmt::format("worker pid {} {}", proc_->pid(), how));
}

std::string Session::reap_and_describe() {
  if (!proc_) return "no worker";
  accounted_ = true;
  // A worker started through kcv.worker.spawn ends a moment after its socket closes; a loaded
  // host can stretch that moment, and a process kcv has to kill is never counted as struck.
  const Exit e = proc_->reap(std::chrono::milliseconds(3000));
  if (e.killed_by_us)
    return with_stderr(
        fmt::format("the worker (pid {}) closed its stdout and was killed", proc_->pid()));
  const std::string rise = oom_rise(e);
  last_end_out_of_memory_ = !rise.empty();
  if (last_end_out_of_memory_) {
    ++out_of_memory_;
    return with_stderr(
        fmt::format("the worker process (pid {}) was killed by the out-of-memory "
                    "killer (SIGKILL while the oom_kill count rose {})",
                    proc_->pid(), rise));
  }
  if (WIFSIGNALED(e.wait_status)) ++struck_;
  const std::string how = WIFSIGNALED(e.wait_status) ? "died of " : "exited with ";
  return with_stderr(fmt::format("the worker process (pid {}) {}{}", proc_->pid(), how,
                                 describe_exit(e.wait_status)));
}

Error Session::died_during_request() {
  Error e = make_error(ErrorCode::kCandidate, reap_and_describe());
  if (last_end_out_of_memory_) e.worker_cause = std::string(kCauseOutOfMemory);
  return e;
}

Expected<nlohmann::json> Session::request(const std::string& line, std::string_view reply_type,
                                          Clock::time_point deadline) {
  if (!proc_->send(line)) return died_during_request();
  const ReadResult r = proc_->read_line(deadline);
  switch (r.end) {
    case ReadEnd::kLine: {
      auto reply = parse_reply(r.line, reply_type);
      if (!reply) {
        Error e = make_error(reply.error().code, with_stderr(reply.error().message));
        e.worker_class = reply.error().worker_class;
        e.worker_cause = reply.error().worker_cause;
        e.worker_reusable = reply.error().worker_reusable;
        return e;
      }
      return reply;
    }
    case ReadEnd::kEof:
      return died_during_request();
    case ReadEnd::kTimeout:
      return make_error(ErrorCode::kCandidate, "no reply in time; " + kill_and_describe());
    case ReadEnd::kStopped:
      ++struck_;
      return make_error(ErrorCode::kCandidate,
                        "the worker was stopped by a signal; " + kill_and_describe());
    case ReadEnd::kTooLong:
      break;
  }
  return make_error(ErrorCode::kParse,
                    "worker protocol violation: a reply line longer than "
                    "16 MiB, starting " +
                        quote(r.line));
}

Expected<WorkerKernelInfo> Session::start() {
  oom_at_start_ = read_oom_kills(oom_counter_files());
  last_end_out_of_memory_ = false;
  auto proc = WorkerProcess::spawn(options_.command, options_.memory_limit_bytes,
                                   options_.stderr_tail_bytes);
  if (!proc) return proc.error();
  proc_ = std::move(*proc);
  stderr_mark_ = 0;
  accounted_ = false;
  loaded_ = false;
  last_status_ = CallStatus::kOk;
  ++started_;
  const auto deadline = deadline_after(options_.startup_timeout_ms);
  WorkerKernelInfo info;
  info.pid = proc_->pid();
  auto fail = [&](std::string_view step, const Error& e) {
    if (e.worker_reusable && step == "load") {
      info_ = info;  // hello's: a reload may follow (Session::reload)
    } else if (proc_->alive()) {
      proc_->kill_and_reap();
    }
    Error out = make_error(
        e.code, fmt::format("worker '{}' {}: {}", options_.command.front(), step, e.message));
    out.worker_class = e.worker_class;
    out.worker_cause = e.worker_cause;
    out.worker_reusable = e.worker_reusable && step == "load";
    return out;
  };
  try {
    auto hello = request(hello_request(), "hello", deadline);
    if (!hello) return fail("hello", hello.error());
    if (Status s = read_hello(*hello, info); !s) return fail("hello", s.error());
    mark_stderr();  // a failed load quotes what the worker wrote while loading
    auto load_line = load_request(options_.load);
    if (!load_line) return fail("load", load_line.error());
    auto loaded = request(*load_line, "loaded", deadline);
    if (!loaded) return fail("load", loaded.error());
    if (Status s = read_loaded(*loaded, info); !s) return fail("load", s.error());
  } catch (const nlohmann::json::exception& e) {
    return fail("startup", make_error(ErrorCode::kParse,
                                      fmt::format("worker protocol violation: {}", e.what())));
  }
  info_ = info;
  loaded_ = true;
  return info_;
}

}  // namespace kcv::worker
