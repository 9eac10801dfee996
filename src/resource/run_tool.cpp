// File: src/resource/run_tool.cpp
// posix_spawn with both output streams on one pipe, so a tool's diagnostics ("does not contain
// device code") end up in the error message kcv prints.
#include "resource/run_tool.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace kcv::resource {
namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0)
      out.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  return out;
}

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

}  // namespace

Expected<ToolResult> run_tool(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return make_error(ErrorCode::kIo, std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return make_error(ErrorCode::kIo, fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  }
  ToolResult result;
  result.output = read_all(fds[0]);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

ToolSearch find_tool(const std::string& program, const char* override_env) {
  ToolSearch s;
  auto consider = [&](const std::filesystem::path& p) {
    s.tried.push_back(p.string());
    if (!s.found && executable(p)) s.found = p.string();
  };
  if (const char* v = std::getenv(override_env); v != nullptr && *v != '\0') consider(v);
#ifdef KCV_NVCC_PATH
  if (std::string_view(KCV_NVCC_PATH).size() > 0) {
    consider(std::filesystem::path(KCV_NVCC_PATH).parent_path() / program);
  }
#endif
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    consider(std::filesystem::path(home) / "bin" / program);
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) consider(std::filesystem::path(dir) / program);
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  return s;
}

}  // namespace kcv::resource
