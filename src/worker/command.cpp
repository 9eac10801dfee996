// File: src/worker/command.cpp
// Where the default worker program is: $KCV_WORKER (one path, no arguments), else kcv-worker
// installed beside the running executable (the kcv CLI and kcv-worker install to one bin/),
// else whatever `kcv-worker` PATH finds.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "kcv/worker.hpp"

namespace kcv {

std::vector<std::string> default_worker_command() {
  if (const char* env = std::getenv("KCV_WORKER"); env != nullptr && *env != '\0') return {env};
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path beside = self.parent_path() / "kcv-worker";
    if (access(beside.c_str(), X_OK) == 0) return {beside.string()};
  }
  return {"kcv-worker"};
}

}  // namespace kcv
