// File: src/cli/main.cpp
// Entry point of the `kcv` command. The last line of defence: whatever escapes run_cli (it
// should be nothing) is reported as an internal error with its own exit code, never a crash.
#include <cstdio>
#include <exception>

#include "cli/tools.hpp"

int main(int argc, char** argv) {
  try {
    return kcv::cli::run_cli(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kcv: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "kcv: internal error: unknown exception\n");
  }
  return kcv::cli::to_int(kcv::cli::ExitStatus::kInternal);
}
