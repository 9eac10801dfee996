// File: src/cli/stores.cpp
// Opening and verifying audit stores for the commands that read them (stores.hpp).
#include "cli/stores.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "cli/cli_error.hpp"

namespace kcv::cli {

audit::Store open_store_read_only(const std::string& path, const std::string& key_dir,
                                  const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    usage_error(fmt::format("{}: no audit store at '{}'", what, path));
  audit::StoreOptions read_only;
  read_only.read_only = true;
  read_only.key_dir = key_dir;
  Expected<audit::Store> store = audit::Store::open(path, read_only);
  if (!store)
    usage_error(fmt::format("{}: cannot open '{}' as an audit store: {}", what, path,
                            store.error().to_string()));
  return std::move(store).value();
}

audit::Integrity checked_integrity(const audit::Store& store, const std::string& path,
                                   const char* what, bool untrusted, bool require_verified) {
  audit::Integrity integrity = unwrap(store.verify());
  if (integrity.state == audit::Integrity::State::kFailed && !untrusted) {
    std::string why;
    for (const std::string& p : integrity.problems) why += "\n  - " + p;
    if (integrity.more_problems > 0)
      why += fmt::format("\n  - and {} more problem(s)", integrity.more_problems);
    usage_error(
        fmt::format("{}: '{}' fails verification, so its numbers cannot be trusted "
                    "(--untrusted reads it anyway, marked):{}",
                    what, path, why));
  }
  if (integrity.state == audit::Integrity::State::kUnsigned && require_verified) {
    usage_error(fmt::format("{}: '{}' is not verified (--require-verified): {}", what, path,
                            integrity.unverified_reason));
  }
  return integrity;
}

}  // namespace kcv::cli
