// File: tests/unit/test_key_dir.hpp
// Audit stores made by the tests get their keys (docs/07_audit_store.md, "Integrity") in a
// scratch directory removed at exit, never in the user's ~/.config, unless KCV_KEY_DIR already
// names a directory (CTest sets one per build tree).
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kcv::testing_keys {

inline const bool kScratchKeyDir = [] {
  if (const char* set = std::getenv("KCV_KEY_DIR"); set != nullptr && *set != '\0') return true;
  static const std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("kcv_test_keys_{}", ::getpid()))
          .string();
  std::filesystem::create_directories(dir);
  ::setenv("KCV_KEY_DIR", dir.c_str(), 1);
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
  return true;
}();

}  // namespace kcv::testing_keys
