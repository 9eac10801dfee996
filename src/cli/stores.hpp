// File: src/cli/stores.hpp
// Opening audit stores for reading (`kcv report`, `kcv diff`): read-only, never created, and
// verified before any number is read from them (docs/07_audit_store.md, "Integrity").
#pragma once

#include <string>

#include "kcv/audit.hpp"

namespace kcv::cli {

/// The store at `path`, read-only (an older schema migrated in memory). Exit 2 naming `what`
/// (e.g. "STORE") when it is missing or not a kcv store.
audit::Store open_store_read_only(const std::string& path, const std::string& key_dir,
                                  const char* what);

/// The store's integrity (audit::Store::verify). Exit 2 naming `what` when it fails
/// verification and !untrusted, or when it is unverified and require_verified.
audit::Integrity checked_integrity(const audit::Store& store, const std::string& path,
                                   const char* what, bool untrusted, bool require_verified);

}  // namespace kcv::cli
