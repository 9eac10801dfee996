// File: src/audit/integrity.cpp
// MACs of kernel and verdict rows, the manifest of signed kernels, and the whole-store check
// (integrity.hpp says what each MAC covers). Every MAC is computed from the row as SQLite
// returns it, each column typed (NULL, integer, real, text), so the writer and the checker hash
// the very same bytes.
#include "audit/integrity.hpp"

#include <fmt/format.h>

#include <sstream>

#include "audit/store_impl.hpp"

namespace kcv::audit {
namespace {

// The kernel columns a kernel's MAC covers: all but run_id, attempts, queued_at, started_at,
// finished_at (bookkeeping a merge renumbers or a resume updates) and the MAC itself.
constexpr const char* kKernelMacColumns =
    "kernel_id, corpus, level, problem_id, problem_name, language, op_class, "
    "determinism_declared, original_verdict, status, message, replica_verdict, facts, row_hash, "
    "seen_hash";
constexpr int kKernelMacColumnCount = 15;
constexpr int kRowHashColumn = 13;
// The verdict columns a verdict's MAC covers: all but run_id and the MAC.
constexpr const char* kVerdictMacColumns =
    "gate, profile, verdict, reason, worst_ratio, bits_lost, evidence, probe_token, finding, "
    "scope, mac";
constexpr int kVerdictMacColumnCount = 10;  // the stored MAC follows them
constexpr int kMaxProblems = 20;

void add_column(mac::Message& m, const sql::Stmt& q, int col) {
  switch (sqlite3_column_type(q.raw(), col)) {
    case SQLITE_NULL:
      m.null();
      break;
    case SQLITE_INTEGER:
      m.integer(q.col_int(col));
      break;
    case SQLITE_FLOAT:
      m.real(q.col_double(col));
      break;
    default:
      m.text(q.col_text(col));  // text (and blobs, which kcv never writes)
  }
}

std::string mac_hex(const Signer& s, const mac::Message& m) {
  return mac::hex(mac::hmac(s.key, m.bytes()));
}

struct VerdictMac {
  std::string gate;
  std::string profile;
  std::string computed;
  std::string stored;
};

struct KernelMacs {
  bool found = false;
  std::vector<VerdictMac> verdicts;
  std::string computed;
  std::string stored;
};

Expected<KernelMacs> compute_macs(sql::Db& db, const Signer& s, std::string_view kernel_id) {
  KernelMacs out;
  Expected<sql::Stmt> k =
      db.prepare(fmt::format("SELECT {}, mac FROM kernels WHERE kernel_id=?1", kKernelMacColumns));
  if (!k) return k.error();
  k->bind(1, kernel_id);
  Expected<bool> krow = k->step();
  if (!krow) return krow.error();
  if (!*krow) return out;
  out.found = true;
  const std::string row_hash = k->col_text(kRowHashColumn);
  Expected<sql::Stmt> v = db.prepare(fmt::format(
      "SELECT {} FROM verdicts WHERE kernel_id=?1 ORDER BY gate, profile", kVerdictMacColumns));
  if (!v) return v.error();
  v->bind(1, kernel_id);
  for (;;) {
    Expected<bool> vrow = v->step();
    if (!vrow) return vrow.error();
    if (!*vrow) break;
    mac::Message m("kcv.verdict.1");
    m.text(s.store_id).text(kernel_id).text(row_hash);
    for (int c = 0; c < kVerdictMacColumnCount; ++c) add_column(m, *v, c);
    out.verdicts.push_back(
        {v->col_text(0), v->col_text(1), mac_hex(s, m), v->col_text(kVerdictMacColumnCount)});
  }
  mac::Message m("kcv.kernel.1");
  m.text(s.store_id);
  for (int c = 0; c < kKernelMacColumnCount; ++c) add_column(m, *k, c);
  m.integer(static_cast<int64_t>(out.verdicts.size()));
  for (const VerdictMac& vm : out.verdicts) m.text(vm.gate).text(vm.profile).text(vm.computed);
  out.computed = mac_hex(s, m);
  out.stored = k->col_text(kKernelMacColumnCount);
  return out;
}

mac::Digest manifest_item(const Signer& s, std::string_view kernel_id, std::string_view kmac) {
  mac::Message m("kcv.manifest.item.1");
  m.text(s.store_id).text(kernel_id).text(kmac);
  return mac::hmac(s.key, m.bytes());
}

struct Manifest {
  int64_t signed_count = 0;
  int64_t unsigned_count = 0;
  mac::Digest xor_items{};
};

std::string manifest_mac(const Signer& s, const Manifest& m) {
  mac::Message msg("kcv.manifest.1");
  msg.text(s.store_id)
      .integer(m.signed_count)
      .integer(m.unsigned_count)
      .text(mac::hex(m.xor_items));
  return mac_hex(s, msg);
}

Error tampered(std::string what) {
  return make_error(ErrorCode::kInvalidArgument,
                    what +
                        " (the store was changed outside kcv; `kcv report --untrusted` shows "
                        "what it holds)");
}

// The stored manifest, its MAC checked. nullopt: none stored.
Expected<std::optional<Manifest>> read_manifest(sql::Db& db, const Signer& s) {
  Expected<std::optional<std::string>> text = meta_value(db, "manifest");
  if (!text) return text.error();
  if (!*text) return std::optional<Manifest>{};
  std::istringstream in(**text);
  Manifest m;
  std::string xor_hex, stored_mac;
  if (!(in >> m.signed_count >> m.unsigned_count >> xor_hex >> stored_mac))
    return tampered("manifest: unreadable");
  Expected<mac::Digest> x = mac::parse_hex(xor_hex);
  if (!x) return tampered("manifest: unreadable");
  m.xor_items = *x;
  if (!mac::equal(manifest_mac(s, m), stored_mac)) return tampered("manifest: MAC mismatch");
  return std::optional<Manifest>(m);
}

Status write_manifest(sql::Db& db, const Signer& s, const Manifest& m) {
  return set_meta(db, "manifest",
                  fmt::format("{} {} {} {}", m.signed_count, m.unsigned_count,
                              mac::hex(m.xor_items), manifest_mac(s, m)));
}

// The manifest the rows give: every final kernel, signed (its stored MAC) or not.
Expected<Manifest> manifest_of_rows(sql::Db& db, const Signer& s) {
  Expected<sql::Stmt> q = db.prepare(
      fmt::format("SELECT kernel_id, mac FROM kernels WHERE status IN {}", final_status_list()));
  if (!q) return q.error();
  Manifest m;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return m;
    const std::string kmac = q->col_text(1);
    if (kmac.empty()) {
      ++m.unsigned_count;
      continue;
    }
    ++m.signed_count;
    m.xor_items = mac::xor_of(m.xor_items, manifest_item(s, q->col_text(0), kmac));
  }
}

class Problems {
 public:
  explicit Problems(Integrity& out) : out_(out) {}
  void add(std::string p) {
    if (static_cast<int>(out_.problems.size()) < kMaxProblems)
      out_.problems.push_back(std::move(p));
    else
      ++out_.more_problems;
  }

 private:
  Integrity& out_;
};

Status count_query(sql::Db& db, const std::string& sql, Problems& problems, std::string_view what) {
  Expected<int64_t> n = db.scalar(sql);
  if (!n) return n.error();
  if (*n > 0) problems.add(fmt::format("{} {}", *n, what));
  return {};
}

}  // namespace

Expected<std::optional<std::string>> meta_value(sql::Db& db, std::string_view name) {
  Expected<sql::Stmt> q = db.prepare("SELECT value FROM store_meta WHERE name=?1");
  if (!q) return q.error();
  q->bind(1, name);
  Expected<bool> row = q->step();
  if (!row) return row.error();
  if (!*row) return std::optional<std::string>{};
  return std::optional<std::string>(q->col_text(0));
}

Status set_meta(sql::Db& db, std::string_view name, std::string_view value) {
  Expected<sql::Stmt> q =
      db.prepare("INSERT OR REPLACE INTO store_meta(name, value) VALUES(?1,?2)");
  if (!q) return q.error();
  q->bind(1, name).bind(2, value);
  return q->run();
}

std::string key_check(const Signer& s) {
  mac::Message m("kcv.key-check.1");
  m.text(s.store_id);
  return mac_hex(s, m);
}

Expected<SignedState> signed_state(sql::Db& db, std::string_view kernel_id) {
  Expected<sql::Stmt> q = db.prepare("SELECT status, mac FROM kernels WHERE kernel_id=?1");
  if (!q) return q.error();
  q->bind(1, kernel_id);
  Expected<bool> row = q->step();
  if (!row) return row.error();
  SignedState out;
  if (!*row) return out;
  Expected<KernelStatus> status = parse_status(q->col_text(0));
  out.final_status = status && is_final(*status);
  out.mac = q->col_text(1);
  return out;
}

Expected<std::string> sign_kernel(sql::Db& db, const Signer& s, std::string_view kernel_id) {
  Expected<KernelMacs> macs = compute_macs(db, s, kernel_id);
  if (!macs) return macs.error();
  if (!macs->found)
    return make_error(ErrorCode::kNotFound, "kernel_id: not in the store", std::string(kernel_id));
  Expected<sql::Stmt> v =
      db.prepare("UPDATE verdicts SET mac=?4 WHERE kernel_id=?1 AND gate=?2 AND profile=?3");
  if (!v) return v.error();
  for (const VerdictMac& vm : macs->verdicts) {
    v->reset();
    v->bind(1, kernel_id).bind(2, vm.gate).bind(3, vm.profile).bind(4, vm.computed);
    if (Status st = v->run(); !st) return st.error();
  }
  Expected<sql::Stmt> k = db.prepare("UPDATE kernels SET mac=?2 WHERE kernel_id=?1");
  if (!k) return k.error();
  k->bind(1, kernel_id).bind(2, macs->computed);
  if (Status st = k->run(); !st) return st.error();
  return macs->computed;
}

Status unsign_kernel(sql::Db& db, std::string_view kernel_id) {
  for (const char* sql : {"UPDATE verdicts SET mac='' WHERE kernel_id=?1",
                          "UPDATE kernels SET mac='' WHERE kernel_id=?1"}) {
    Expected<sql::Stmt> q = db.prepare(sql);
    if (!q) return q.error();
    q->bind(1, kernel_id);
    if (Status st = q->run(); !st) return st;
  }
  return {};
}

Expected<std::vector<std::string>> check_kernel(sql::Db& db, const Signer& s,
                                                std::string_view kernel_id) {
  Expected<KernelMacs> macs = compute_macs(db, s, kernel_id);
  if (!macs) return macs.error();
  std::vector<std::string> out;
  for (const VerdictMac& vm : macs->verdicts) {
    if (!mac::equal(vm.computed, vm.stored))
      out.push_back(
          fmt::format("verdict ({}, {}, {}): MAC mismatch", kernel_id, vm.gate, vm.profile));
  }
  if (!mac::equal(macs->computed, macs->stored))
    out.push_back(fmt::format("kernel {}: MAC mismatch", kernel_id));
  return out;
}

Status manifest_replace(sql::Db& db, const Signer& s, std::string_view kernel_id,
                        const SignedState& old, const std::string& new_mac) {
  Expected<std::optional<Manifest>> stored = read_manifest(db, s);
  if (!stored) return stored.error();
  if (!*stored) return tampered("manifest: missing");
  Manifest m = **stored;
  if (old.final_status) {
    if (old.mac.empty()) {
      --m.unsigned_count;
    } else {
      m.xor_items = mac::xor_of(m.xor_items, manifest_item(s, kernel_id, old.mac));
      --m.signed_count;
    }
  }
  if (!new_mac.empty()) {
    m.xor_items = mac::xor_of(m.xor_items, manifest_item(s, kernel_id, new_mac));
    ++m.signed_count;
  }
  return write_manifest(db, s, m);
}

Status manifest_rebuild(sql::Db& db, const Signer& s) {
  Expected<Manifest> m = manifest_of_rows(db, s);
  if (!m) return m.error();
  return write_manifest(db, s, *m);
}

Status manifest_init(sql::Db& db, const Signer& s) {
  Expected<int64_t> n = db.scalar(
      fmt::format("SELECT count(*) FROM kernels WHERE status IN {}", final_status_list()));
  if (!n) return n.error();
  Manifest m;
  m.unsigned_count = *n;
  return write_manifest(db, s, m);
}

Expected<Integrity> verify_store(sql::Db& db, const std::optional<Signer>& signer,
                                 const std::string& store_id, const std::string& key_file,
                                 const std::string& key_problem) {
  Integrity out;
  out.store_id = store_id;
  out.key_file = key_file;
  Problems problems(out);
  Expected<std::vector<std::string>> schema = schema_problems(db);
  if (!schema) return schema.error();
  for (std::string& p : *schema) problems.add("schema: " + p);
  if (Status st = count_query(db,
                              "SELECT count(*) FROM verdicts WHERE kernel_id NOT IN "
                              "(SELECT kernel_id FROM kernels)",
                              problems, "verdict row(s) of no kernel");
      !st)
    return st.error();
  if (Status st = count_query(db,
                              "SELECT count(*) FROM verdicts v JOIN kernels k USING(kernel_id) "
                              "WHERE k.status IN ('pending','running')",
                              problems, "verdict row(s) of unfinished kernels");
      !st)
    return st.error();
  Expected<int64_t> unsigned_rows = db.scalar(fmt::format(
      "SELECT count(*) FROM kernels WHERE status IN {} AND mac=''", final_status_list()));
  if (!unsigned_rows) return unsigned_rows.error();
  out.unsigned_kernels = *unsigned_rows;
  if (!signer) {  // no row can be checked here: unsigned unless something else is wrong
    out.unverified_reason =
        store_id.empty()
            ? "the store has no key (a store of schema < 3, or one made to look like one)"
            : fmt::format("{} (only the key's holder can check the rows)", key_problem);
    out.state = out.problems.empty() ? Integrity::State::kUnsigned : Integrity::State::kFailed;
    return out;
  }
  Expected<std::optional<std::string>> check = meta_value(db, "key_check");
  if (!check) return check.error();
  if (!*check || !mac::equal(**check, key_check(*signer))) {
    problems.add(fmt::format("the key in {} is not this store's", key_file));
    out.state = Integrity::State::kFailed;
    return out;
  }
  Expected<sql::Stmt> q = db.prepare(
      fmt::format("SELECT kernel_id FROM kernels WHERE status IN {} AND mac<>'' ORDER BY kernel_id",
                  final_status_list()));
  if (!q) return q.error();
  std::vector<std::string> ids;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) break;
    ids.push_back(q->col_text(0));
  }
  for (const std::string& id : ids) {
    Expected<std::vector<std::string>> bad = check_kernel(db, *signer, id);
    if (!bad) return bad.error();
    for (std::string& p : *bad) problems.add(std::move(p));
  }
  out.signed_kernels = static_cast<int64_t>(ids.size());
  Expected<std::optional<Manifest>> stored = read_manifest(db, *signer);
  if (!stored) {
    problems.add(stored.error().message);
  } else if (!*stored) {
    problems.add("manifest: missing");
  } else {
    Expected<Manifest> rows = manifest_of_rows(db, *signer);
    if (!rows) return rows.error();
    const Manifest& m = **stored;
    if (m.signed_count != rows->signed_count || m.unsigned_count != rows->unsigned_count) {
      problems.add(fmt::format(
          "manifest: {} signed and {} unsigned final kernels recorded, {} and {} in the store "
          "(kernels deleted, added, reopened or stripped of their MAC)",
          m.signed_count, m.unsigned_count, rows->signed_count, rows->unsigned_count));
    } else if (m.xor_items != rows->xor_items) {
      problems.add("manifest: the signed kernels are not the ones recorded (rows swapped)");
    }
  }
  if (!out.problems.empty()) {
    out.state = Integrity::State::kFailed;
  } else if (out.unsigned_kernels > 0) {
    out.state = Integrity::State::kUnsigned;
    out.unverified_reason = fmt::format(
        "{} final kernel(s) carry no MAC (recorded before store schema 3, or merged from a store "
        "without one)",
        out.unsigned_kernels);
  } else {
    out.state = Integrity::State::kVerified;
  }
  return out;
}

}  // namespace kcv::audit
