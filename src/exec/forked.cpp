// File: src/exec/forked.cpp
// The forked executor: every run (one call, or all the calls of run_concurrently on threads)
// happens in a child process forked from kcv, on the buffers it inherits copy-on-write. The
// child reports through a MAP_SHARED region created before fork (status, message, and the raw
// bytes of every buffer as the kernel left them) and leaves with _exit(0), running no atexit
// handlers or destructors of kcv's state. The parent polls waitpid against a deadline: past it
// the child is SIGKILLed (kTimeout; timeout_ms <= 0 means no deadline); death by a signal is
// kCrash with the signal's name; a child that exits before its calls returned (the kernel
// called exit) is kCrash too. Crash signals are reset to their default action in the child, so
// a sanitizer runtime's handler cannot turn a segfault into an ordinary exit. Calls that
// returned before a crash or timeout of another concurrent call keep their results.
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>

#include "exec/byte_passes.hpp"
#include "exec/invoke.hpp"
#include "exec/shared_region.hpp"

namespace kcv {
namespace {

using Clock = std::chrono::steady_clock;

struct ChildEnd {
  bool timed_out = false;
  int wait_status = 0;
};

void reset_crash_signals() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) signal(sig, SIG_DFL);
}

void run_slot(Candidate& candidate, exec::CallBuffers& b, const CallOptions& o,
              exec::SharedRegion& region, std::size_t slot) {
  region.publish(slot, exec::SlotState::kRunning);
  const exec::KernelOutcome outcome = exec::invoke_kernel(candidate, b, o);
  const std::vector<std::span<std::byte>> raws = exec::raw_buffers(b);
  for (std::size_t k = 0; k < raws.size(); ++k)  // memcpy: no threads in a forked child
    std::memcpy(region.buffer(slot, k).data(), raws[k].data(), raws[k].size());
  region.header(slot).status = static_cast<int32_t>(outcome.status);
  region.set_message(slot, outcome.message);
  region.publish(slot, exec::SlotState::kReturned);
}

[[noreturn]] void child_main(Candidate& candidate, std::vector<exec::CallBuffers>& buffers,
                             const std::vector<CallOptions>& options, exec::SharedRegion& region) {
  reset_crash_signals();
  if (buffers.size() == 1) {
    run_slot(candidate, buffers[0], options[0], region, 0);
    _exit(0);
  }
  std::vector<std::thread> threads;
  try {
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      threads.emplace_back([&, i] { run_slot(candidate, buffers[i], options[i], region, i); });
    }
  } catch (const std::system_error&) {  // no more threads: the rest run here, one by one
    for (std::size_t i = threads.size(); i < buffers.size(); ++i)
      run_slot(candidate, buffers[i], options[i], region, i);
  }
  for (std::thread& t : threads) t.join();
  _exit(0);
}

ChildEnd wait_with_deadline(pid_t pid, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto pause = std::chrono::microseconds(100);
  ChildEnd end;
  while (true) {
    const pid_t r = waitpid(pid, &end.wait_status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return end;
    if (timeout_ms > 0 && Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &end.wait_status, 0) < 0 && errno == EINTR) {
      }
      end.timed_out = true;
      return end;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* what = strsignal(sig);
  return fmt::format("signal {} (SIG{}: {})", sig, abbrev ? abbrev : "?", what ? what : "unknown");
}

exec::KernelOutcome unfinished_outcome(const ChildEnd& end, int timeout_ms, std::size_t calls) {
  const std::string others =
      calls > 1 ? fmt::format(" (one process ran all {} concurrent calls)", calls) : "";
  if (end.timed_out) {
    return {
        CallStatus::kTimeout,
        fmt::format("no result within {} ms; the kernel process was killed{}", timeout_ms, others)};
  }
  if (WIFSIGNALED(end.wait_status)) {
    return {CallStatus::kCrash, fmt::format("the kernel process died of {}{}",
                                            signal_text(WTERMSIG(end.wait_status)), others)};
  }
  return {CallStatus::kCrash,
          fmt::format("the kernel process exited with code {} before the call returned{}",
                      WIFEXITED(end.wait_status) ? WEXITSTATUS(end.wait_status) : -1, others)};
}

class ForkedExecutor final : public Executor {
 public:
  std::string_view name() const override { return "forked"; }

  CallRecord run(Candidate& candidate, const std::vector<HostTensor>& inputs,
                 const std::vector<OutputSpec>& outputs, const CallOptions& options) override {
    return std::move(run_all(candidate, inputs, outputs, {options}).front());
  }

  std::vector<CallRecord> run_concurrently(Candidate& candidate,
                                           const std::vector<HostTensor>& inputs,
                                           const std::vector<OutputSpec>& outputs,
                                           const std::vector<CallOptions>& options) override {
    return run_all(candidate, inputs, outputs, options);
  }

 private:
  static std::vector<CallRecord> run_all(Candidate& candidate,
                                         const std::vector<HostTensor>& inputs,
                                         const std::vector<OutputSpec>& outputs,
                                         const std::vector<CallOptions>& options) {
    std::vector<exec::CallBuffers> buffers;
    for (const CallOptions& o : options)
      buffers.push_back(exec::prepare_buffers(inputs, outputs, o));
    std::vector<CallRecord> records;
    if (auto bad = exec::check_declared_outputs(candidate.contract(), outputs)) {
      for (std::size_t i = 0; i < options.size(); ++i) {
        records.push_back(exec::finish_record(std::move(buffers[i]), options[i],
                                              {CallStatus::kBadOutput, *bad}, false));
      }
      return records;
    }
    if (options.empty()) return records;
    std::vector<std::vector<std::size_t>> sizes;
    for (exec::CallBuffers& b : buffers) {
      sizes.emplace_back();
      for (std::span<std::byte> raw : exec::raw_buffers(b)) sizes.back().push_back(raw.size());
    }
    int timeout_ms = 0;  // the calls run together, so the longest allowance applies to all
    for (const CallOptions& o : options) timeout_ms = std::max(timeout_ms, o.timeout_ms);
    exec::SharedRegion region(sizes);
    const ChildEnd end = fork_and_wait(candidate, buffers, options, region, timeout_ms);
    for (std::size_t i = 0; i < options.size(); ++i) {
      exec::KernelOutcome unfinished = unfinished_outcome(end, timeout_ms, options.size());
      records.push_back(collect(region, i, buffers[i], options[i], std::move(unfinished)));
    }
    return records;
  }

  static ChildEnd fork_and_wait(Candidate& candidate, std::vector<exec::CallBuffers>& buffers,
                                const std::vector<CallOptions>& options, exec::SharedRegion& region,
                                int timeout_ms) {
    std::fflush(nullptr);  // or buffered output would be written twice, once by the child
    const pid_t pid = fork();
    if (pid < 0)
      throw std::system_error(errno, std::generic_category(), "fork for the kernel process");
    if (pid == 0) child_main(candidate, buffers, options, region);
    return wait_with_deadline(pid, timeout_ms);
  }

  // The call's record: from the region when it returned, else `unfinished` (no audit).
  static CallRecord collect(exec::SharedRegion& region, std::size_t slot, exec::CallBuffers& b,
                            const CallOptions& o, exec::KernelOutcome unfinished) {
    if (region.state(slot) != exec::SlotState::kReturned) {
      return exec::finish_record(std::move(b), o, std::move(unfinished), false);
    }
    const std::vector<std::span<std::byte>> raws = exec::raw_buffers(b);
    for (std::size_t k = 0; k < raws.size(); ++k)
      exec::copy_bytes(raws[k], region.buffer(slot, k));
    const auto& h = region.header(slot);
    exec::KernelOutcome outcome{static_cast<CallStatus>(h.status), std::string(h.message)};
    return exec::finish_record(std::move(b), o, std::move(outcome), true);
  }
};

}  // namespace

std::unique_ptr<Executor> make_forked_executor() { return std::make_unique<ForkedExecutor>(); }

}  // namespace kcv
