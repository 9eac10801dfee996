// File: src/worker/process.cpp
// fork+exec of a worker. Between fork and exec the child only calls async-signal-safe
// functions on data prepared before fork. An exec failure is reported through a close-on-exec
// pipe (nothing read: exec succeeded), so "no such program" is an Error, not a dead worker.
// Every descriptor of kcv except stdin/stdout/stderr is marked close-on-exec in the child, and
// SIGPIPE and the signal mask are reset, so the worker starts as a plain process would.
#include "worker/process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace kcv::worker {
namespace {

constexpr std::size_t kMaxLine = std::size_t{16} << 20;  // a reply longer than this is garbage
constexpr int kWatchMs = 200;  // how often a waiting read looks whether the worker is stopped

[[noreturn]] void child_exec(char* const* argv, int io_fd, int err_fd, int report_fd,
                             int64_t memory_limit, pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // kcv died before the line above took effect
  dup2(io_fd, STDIN_FILENO);
  dup2(io_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
  if (memory_limit > 0) {
    const rlimit lim{static_cast<rlim_t>(memory_limit), static_cast<rlim_t>(memory_limit)};
    setrlimit(RLIMIT_AS, &lim);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  execvp(argv[0], argv);
  const int err = errno;
  [[maybe_unused]] ssize_t n = write(report_fd, &err, sizeof err);
  _exit(127);
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

std::string describe_exit(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* abbrev = sigabbrev_np(sig);
    const char* what = strsignal(sig);
    return fmt::format("signal {} (SIG{}: {})", sig, abbrev ? abbrev : "?",
                       what ? what : "unknown");
  }
  if (WIFEXITED(wait_status)) return fmt::format("exit code {}", WEXITSTATUS(wait_status));
  return fmt::format("wait status {}", wait_status);
}

Expected<std::unique_ptr<WorkerProcess>> WorkerProcess::spawn(const std::vector<std::string>& argv,
                                                              int64_t memory_limit_bytes,
                                                              std::size_t stderr_tail_bytes) {
  if (argv.empty() || argv.front().empty())
    return make_error(ErrorCode::kInvalidArgument, "the worker command is empty");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int sv[2], errp[2], report[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return make_error(ErrorCode::kIo, fmt::format("socketpair: {}", std::strerror(errno)));
  if (pipe2(errp, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0)
    return make_error(ErrorCode::kIo, fmt::format("pipe2: {}", std::strerror(errno)));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) child_exec(args.data(), sv[1], errp[1], report[1], memory_limit_bytes, parent);
  close(sv[1]);
  close(errp[1]);
  close(report[1]);
  std::unique_ptr<WorkerProcess> p(new WorkerProcess());
  p->io_fd_ = sv[0];
  p->err_fd_ = errp[0];
  p->err_cap_ = std::max<std::size_t>(stderr_tail_bytes, 1);
  if (pid < 0) {
    close(report[0]);
    p->reaped_ = true;
    return make_error(ErrorCode::kIo, fmt::format("fork: {}", std::strerror(errno)));
  }
  p->pid_ = pid;
  fcntl(p->err_fd_, F_SETFL, O_NONBLOCK);
  fcntl(p->io_fd_, F_SETFL, O_NONBLOCK);
  int err = 0;
  ssize_t n;
  while ((n = read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n > 0) {
    p->kill_and_reap();
    return make_error(ErrorCode::kNotFound, fmt::format("cannot run the worker '{}': {}",
                                                        argv.front(), std::strerror(err)));
  }
  return p;
}

WorkerProcess::~WorkerProcess() {
  if (!reaped_) kill_and_reap();
  close_fd(io_fd_);
  close_fd(err_fd_);
}

bool WorkerProcess::send(const std::string& line) {
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(io_fd_, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{io_fd_, POLLOUT, 0};
      if (poll(&p, 1, 1000) > 0) continue;  // a worker that reads nothing for 1 s: gone
    }
    return false;
  }
  return true;
}

ReadResult WorkerProcess::read_line(Clock::time_point deadline) {
  char buf[65536];
  while (true) {
    const std::size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      ReadResult r{ReadEnd::kLine, pending_.substr(0, nl)};
      pending_.erase(0, nl + 1);
      return r;
    }
    if (pending_.size() > kMaxLine) return {ReadEnd::kTooLong, pending_.substr(0, 200)};
    int wait_ms = kWatchMs;
    if (deadline != Clock::time_point::max()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return {ReadEnd::kTimeout, {}};
      wait_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, kWatchMs));
    }
    pollfd fds[2] = {{io_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    const int r = poll(fds, 2, wait_ms);
    if (r < 0 && errno != EINTR) return {ReadEnd::kEof, {}};
    if (r == 0 && stopped()) return {ReadEnd::kStopped, {}};
    if (r <= 0) continue;
    if (fds[1].revents != 0) drain_stderr();
    if (fds[0].revents == 0) continue;
    const ssize_t n = read(io_fd_, buf, sizeof buf);
    if (n > 0) {
      pending_.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      return {ReadEnd::kEof, {}};
    }
  }
}

bool WorkerProcess::stopped() const {
  if (reaped_ || pid_ <= 0) return false;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid_));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char buf[512];
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');  // the command name may hold spaces
  return close_paren != nullptr && close_paren[1] == ' ' &&
         (close_paren[2] == 'T' || close_paren[2] == 't');
}

bool WorkerProcess::alive() {
  if (reaped_) return false;
  if (waitpid(pid_, &exit_.wait_status, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

Exit WorkerProcess::kill_and_reap() {
  if (!alive()) return exit_;
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  while (waitpid(pid_, &exit_.wait_status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  exit_.killed_by_us = true;
  return exit_;
}

Exit WorkerProcess::reap(std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  while (alive() && Clock::now() < deadline) {
    drain_stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!alive()) {
    kill(-pid_, SIGKILL);  // what the worker left behind in its group
    return exit_;
  }
  return kill_and_reap();
}

void WorkerProcess::drain_stderr() {
  if (err_fd_ < 0) return;
  char buf[8192];
  while (true) {
    const ssize_t n = read(err_fd_, buf, sizeof buf);
    if (n > 0) {
      keep_stderr(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) close_fd(err_fd_);  // every writer is gone
    return;
  }
}

void WorkerProcess::keep_stderr(const char* data, std::size_t n) {
  err_written_ += n;
  err_tail_.append(data, n);
  if (err_tail_.size() > 2 * err_cap_) err_tail_.erase(0, err_tail_.size() - err_cap_);
}

std::string WorkerProcess::stderr_tail(std::size_t since) {
  drain_stderr();
  const std::size_t fresh = since >= err_written_ ? 0 : err_written_ - since;
  const std::size_t n = std::min({err_tail_.size(), err_cap_, fresh});
  return err_tail_.substr(err_tail_.size() - n);
}

std::size_t WorkerProcess::stderr_written() {
  drain_stderr();
  return err_written_;
}

}  // namespace kcv::worker
