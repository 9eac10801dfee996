// File: src/cli/python_env.cpp
// Finding kcv's Python (python_env.hpp).
#include "cli/python_env.hpp"

#include <cstdlib>
#include <filesystem>

namespace kcv::cli {
namespace {

std::string interpreter_from_env() {
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

std::string python_interpreter() { return interpreter_from_env(); }

void use_build_tree_python() {
  const std::string extra = build_tree_pythonpath();
  if (extra.empty()) return;
  const char* old = std::getenv("PYTHONPATH");
  const std::string value = (old != nullptr && *old != '\0') ? extra + ":" + old : extra;
  ::setenv("PYTHONPATH", value.c_str(), 1);
}

}  // namespace kcv::cli
