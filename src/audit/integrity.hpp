// File: src/audit/integrity.hpp
// The store's MACs (docs/07_audit_store.md, "Integrity"). Every final kernel row and each of its
// verdict rows carries an HMAC-SHA256 under the store's key, computed from the row as stored:
//  - a verdict's MAC covers the store id, the kernel id, the kernel's row hash and every column
//    of the verdict but its run (gate, profile, verdict, reason, worst ratio, bits lost, evidence,
//    probe token, finding, scope);
//  - a kernel's MAC covers the store id, every column of the kernel row but its bookkeeping (run,
//    attempts, timestamps) and the list of its verdicts' (gate, profile, MAC), so a verdict
//    cannot be changed, moved to another kernel, gate or profile, added or deleted;
//  - the manifest (store_meta) holds the number of signed and unsigned final kernels and the XOR
//    of one keyed item per signed kernel, under its own MAC, so a kernel cannot be deleted,
//    added, or turned back to pending or to unsigned.
// Signing and checking read the same rows through the same code, so they cannot disagree.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/mac.hpp"
#include "audit/sqlite_db.hpp"
#include "kcv/audit.hpp"

namespace kcv::audit {

struct Signer {
  mac::Key key;
  std::string store_id;
};

/// store_meta rows.
Expected<std::optional<std::string>> meta_value(sql::Db& db, std::string_view name);
Status set_meta(sql::Db& db, std::string_view name, std::string_view value);

/// HMAC of the store id under the key: tells a wrong key from tampered rows.
std::string key_check(const Signer& s);

/// A kernel's state before a write: whether it is final and the MAC it carries ('' none).
struct SignedState {
  bool final_status = false;
  std::string mac;
};
Expected<SignedState> signed_state(sql::Db& db, std::string_view kernel_id);

/// Computes the MACs of the kernel's verdicts and of the kernel row from the rows as stored
/// and writes them; returns the kernel's MAC.
Expected<std::string> sign_kernel(sql::Db& db, const Signer& s, std::string_view kernel_id);
/// Clears the MACs of a kernel and its verdicts (rows merged from an unsigned store).
Status unsign_kernel(sql::Db& db, std::string_view kernel_id);
/// Whether the stored MACs of the kernel and of each verdict are the ones its rows give;
/// a problem per row that does not check (empty: all check).
Expected<std::vector<std::string>> check_kernel(sql::Db& db, const Signer& s,
                                                std::string_view kernel_id);

/// The manifest's bookkeeping around a write: the kernel's old state leaves it, its new MAC
/// (empty: not signed, e.g. back to pending) enters it. The stored manifest's MAC is checked
/// first, so a manifest changed outside kcv is never signed again.
Status manifest_replace(sql::Db& db, const Signer& s, std::string_view kernel_id,
                        const SignedState& old, const std::string& new_mac);
/// Rebuilds the manifest from the store's rows (after a merge, whose rows were all checked).
Status manifest_rebuild(sql::Db& db, const Signer& s);
/// A fresh manifest for a store getting its key: no signed kernel, its final kernels unsigned.
Status manifest_init(sql::Db& db, const Signer& s);

/// Everything verify() checks. `signer` absent: the store has no key (`key_problem` says why
/// when it should have one).
Expected<Integrity> verify_store(sql::Db& db, const std::optional<Signer>& signer,
                                 const std::string& store_id, const std::string& key_file,
                                 const std::string& key_problem);

}  // namespace kcv::audit
