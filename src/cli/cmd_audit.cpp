// File: src/cli/cmd_audit.cpp
// `kcv audit ...`: the audit orchestrator is Python (python/kcv/audit, docs/08_audit.md), because
// KernelBench candidates are Python modules run by Python workers; this command only execs
// `<python> -m kcv.audit` with the same arguments, so `kcv audit --help` is the orchestrator's own.
// <python> is $KCV_PYTHON, else the interpreter the build was configured with
// (KCV_PYTHON_EXECUTABLE, when CMake defines it), else `python3` on PATH. When the build tree's
// extension modules sit beside this executable (<dir>/python/kcv/_core*.so) that directory, and
// the source tree's python/ (KCV_PYTHON_SOURCE_DIR, or found above the build directory), are put
// in front of PYTHONPATH, so a build-tree `kcv audit` works without `pip install`.
// The Python entry (python/kcv/audit/__main__.py) sets malloc's huge-page tunable
// (GLIBC_TUNABLES), for `kcv audit` and `python -m kcv.audit` alike.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli_error.hpp"
#include "cli/python_env.hpp"
#include "cli/tools.hpp"

namespace kcv::cli {
namespace {

CLI::App* g_audit_command = nullptr;  // the subcommand, to read its pass-through arguments

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
  use_build_tree_python();
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
