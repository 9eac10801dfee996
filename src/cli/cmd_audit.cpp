// File: src/cli/cmd_audit.cpp
// `kcv audit ...`: the audit orchestrator is Python (python/kcv/audit, docs/08_audit.md), because
// KernelBench candidates are Python modules run by Python workers; this command only execs
// `<python> -m kcv.audit` with the same arguments, so `kcv audit --help` is the orchestrator's own.
// <python> is $KCV_PYTHON, else the interpreter the build was configured with
// (KCV_PYTHON_EXECUTABLE, when CMake defines it), else `python3` on PATH. When the build tree's
// extension modules sit beside this executable (<dir>/python/kcv/_core*.so) that directory, and
// the source tree's python/ (KCV_PYTHON_SOURCE_DIR, or found above the build directory), are put
// in front of PYTHONPATH, so a build-tree `kcv audit` works without `pip install`.
// GLIBC_TUNABLES, when unset, becomes glibc.malloc.hugetlb=1 for the orchestrator and every
// worker (see kHugePageTunable).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli_error.hpp"
#include "cli/tools.hpp"

namespace kcv::cli {
namespace {

CLI::App* g_audit_command = nullptr;  // the subcommand, to read its pass-through arguments

/// malloc's large blocks advised as transparent huge pages (where THP is in `madvise` mode; no
/// effect under `never` or `always`, nor before glibc 2.35). The audit moves gigabytes through
/// fresh arrays per call; on 4 KiB pages each page is a fault. bench/audit/cpu_battery.py
/// --dim 262144 on the 2-core build machine: minor faults 4.92 M -> 1.17 M, system time 22.4 ->
/// 14.3 s (docs/08_audit.md). Read by glibc at process start, so it is set before the exec, and
/// only when the caller has not set GLIBC_TUNABLES (an empty value turns it off).
constexpr const char* kHugePageTunable = "glibc.malloc.hugetlb=1";

std::string python_interpreter() {
  if (const char* env = std::getenv("KCV_PYTHON"); env != nullptr && *env != '\0') return env;
#ifdef KCV_PYTHON_EXECUTABLE
  if (std::filesystem::exists(KCV_PYTHON_EXECUTABLE)) return KCV_PYTHON_EXECUTABLE;
#endif
  return "python3";
}

bool has_core_module(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "kcv", ec)) {
    if (entry.path().filename().string().rfind("_core", 0) == 0) return true;
  }
  return false;
}

/// The source tree's python/ (the one holding kcv/audit): KCV_PYTHON_SOURCE_DIR when CMake
/// defines it, else the nearest ancestor of the build directory that has one.
std::string source_python_dir(const std::filesystem::path& build_dir) {
#ifdef KCV_PYTHON_SOURCE_DIR
  return KCV_PYTHON_SOURCE_DIR;
#endif
  std::filesystem::path dir = build_dir;
  for (int up = 0; up < 4 && dir.has_parent_path() && dir != dir.parent_path(); ++up) {
    dir = dir.parent_path();
    if (std::filesystem::exists(dir / "python" / "kcv" / "audit" / "__main__.py"))
      return (dir / "python").string();
  }
  return {};
}

/// The build tree's python/ directories, to put in front of PYTHONPATH (empty: none).
std::string build_tree_pythonpath() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path modules = exe.parent_path() / "python";
  if (!has_core_module(modules)) return {};
  std::string path = modules.string();
  if (const std::string src = source_python_dir(exe.parent_path()); !src.empty()) path += ":" + src;
  return path;
}

}  // namespace

void configure_audit(CLI::App& cmd, CliOptions& /*o*/) {
  cmd.prefix_command();  // every argument goes to the orchestrator untouched
  cmd.set_help_flag();   // --help too: `python -m kcv.audit --help` answers it
  cmd.footer("Runs `<python> -m kcv.audit ARGS...`; see `kcv audit --help` and docs/08_audit.md.");
  g_audit_command = &cmd;
}

ExitStatus run_audit(const CliOptions& /*o*/) {
  const std::string python = python_interpreter();
  std::vector<std::string> args = {python, "-m", "kcv.audit"};
  if (g_audit_command != nullptr) {
    for (const std::string& a : g_audit_command->remaining()) args.push_back(a);
  }
  if (const std::string extra = build_tree_pythonpath(); !extra.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string value = (old != nullptr && *old != '\0') ? extra + ":" + old : extra;
    ::setenv("PYTHONPATH", value.c_str(), 1);
  }
  ::setenv("GLIBC_TUNABLES", kHugePageTunable, /*overwrite=*/0);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(argv[0], argv.data());
  throw CliFailure(ExitStatus::kUsage,
                   fmt::format("audit: cannot run '{}' ({}); set KCV_PYTHON to a Python with kcv "
                               "installed", python, std::strerror(errno)));
}

}  // namespace kcv::cli
