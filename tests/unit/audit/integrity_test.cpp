// File: tests/unit/audit/integrity_test.cpp
// The store's tamper evidence (docs/07_audit_store.md, "Integrity"), each attack done as an
// attacker without the key would do it: with sqlite3 on the file. A trigger, a view or any other
// foreign schema object makes an open for writing fail, stops a write before its commit, and
// fails verify(); a rewritten, deleted, moved or swapped verdict, a kernel turned back to
// pending, deleted or stripped of its MAC, and a wrong key all fail verify() naming what; the
// store's own writes (record, reset, mark_stale, merge) keep it verified. A missing key leaves a
// store unverifiable, not failed; an older store migrated for writing keeps its rows unsigned.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <fstream>

#include "audit/store_impl.hpp"
#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::kid;
using testing::ScratchDir;
using testing::toy_kernel;
using testing::toy_outcome;

void exec_raw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db) << " in " << sql;
  sqlite3_close(db);
}

std::string raw_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr), SQLITE_OK);
  std::string out;
  if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0) != nullptr)
    out = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
  sqlite3_finalize(q);
  sqlite3_close(db);
  return out;
}

// A store with three final kernels (the second one failing CMP-01) and one pending.
void make_store(const std::string& path) {
  Store store = Store::open(path).value();
  const int64_t run = store.begin_run({}).value();
  ASSERT_TRUE(
      store
          .enqueue({toy_kernel(kid(1)), toy_kernel(kid(2)), toy_kernel(kid(3)), toy_kernel(kid(4))})
          .ok());
  for (int i = 1; i <= 3; ++i) {
    KernelOutcome o = toy_outcome(kid(i), /*fail=*/i == 2);
    o.row_hash = std::string(64, static_cast<char>('0' + i));
    const Status s = store.record(o, run);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
  }
}

Integrity verify_read_only(const std::string& path) {
  StoreOptions ro;
  ro.read_only = true;
  Expected<Store> store = Store::open(path, ro);
  EXPECT_TRUE(store.has_value()) << store.error().to_string();
  Expected<Integrity> in = store->verify();
  EXPECT_TRUE(in.has_value()) << in.error().to_string();
  return *in;
}

std::string all_problems(const Integrity& in) {
  std::string out;
  for (const std::string& p : in.problems) out += p + "\n";
  return out;
}

bool mentions(const Integrity& in, const std::string& text) {
  return all_problems(in).find(text) != std::string::npos;
}

TEST(Integrity, AFreshStoreVerifiesAndItsKeyIsPrivateAndOutsideIt) {
  ScratchDir dir;
  make_store(dir.file("a.db"));
  const Integrity in = verify_read_only(dir.file("a.db"));
  EXPECT_EQ(in.state, Integrity::State::kVerified) << all_problems(in);
  EXPECT_EQ(in.signed_kernels, 3);
  EXPECT_EQ(in.unsigned_kernels, 0);
  EXPECT_EQ(in.store_id.size(), 32u);
  struct stat st {};
  ASSERT_EQ(::stat(in.key_file.c_str(), &st), 0) << in.key_file;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(in.key_file.find(dir.file("")), std::string::npos);  // not beside the store
  // The key itself is nowhere in the store.
  std::ifstream key(in.key_file);
  std::string key_hex;
  std::getline(key, key_hex);
  EXPECT_EQ(raw_text(dir.file("a.db"),
                     "SELECT count(*) FROM store_meta WHERE instr(value, '" + key_hex + "') > 0"),
            "0");
}

TEST(Integrity, ATriggerIsRefusedAtOpenAndFailsVerification) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  exec_raw(path,
           "CREATE TRIGGER all_pass AFTER UPDATE ON kernels BEGIN "
           "UPDATE verdicts SET verdict='pass' WHERE kernel_id=NEW.kernel_id; END");
  Expected<Store> w = Store::open(path);
  ASSERT_FALSE(w.has_value());
  EXPECT_NE(w.error().message.find("trigger 'all_pass' is not kcv's"), std::string::npos)
      << w.error().message;
  const Integrity in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kFailed);
  EXPECT_TRUE(mentions(in, "trigger 'all_pass' is not kcv's")) << all_problems(in);
}

TEST(Integrity, ATriggerAddedDuringARunNeitherFiresNorLetsTheWriteCommit) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  Store store = Store::open(path).value();
  // What a candidate that found the store would add while its kernel runs.
  exec_raw(path,
           "CREATE TRIGGER all_pass AFTER UPDATE ON kernels BEGIN "
           "UPDATE verdicts SET verdict='pass', reason='pwned' WHERE kernel_id=NEW.kernel_id; "
           "END");
  const Status s = store.record(toy_outcome(kid(4), /*fail=*/true), 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("trigger 'all_pass'"), std::string::npos) << s.error().message;
  EXPECT_EQ(store.kernel(kid(4)).value()->status, KernelStatus::kPending);  // rolled back
  EXPECT_EQ(raw_text(path, "SELECT count(*) FROM verdicts WHERE kernel_id='" + kid(4) + "'"), "0");
  // On kcv's connections triggers never run, whatever the check before commit does.
  Expected<sql::Db> hardened = sql::Db::open(path, StoreOptions{});
  ASSERT_TRUE(hardened.has_value());
  ASSERT_TRUE(
      hardened->exec("UPDATE kernels SET message=message WHERE kernel_id='" + kid(2) + "'").ok());
  EXPECT_EQ(raw_text(path, "SELECT count(*) FROM verdicts WHERE reason='pwned'"), "0");
  EXPECT_EQ(raw_text(path, "SELECT verdict FROM verdicts WHERE kernel_id='" + kid(2) +
                               "' AND gate='CMP-01'"),
            "fail");
  // Once the trigger is gone the store is whole again: nothing it held was written.
  exec_raw(path, "DROP TRIGGER all_pass");
  EXPECT_EQ(store.schema_problems().value(), std::vector<std::string>{});
  EXPECT_EQ(verify_read_only(path).state, Integrity::State::kVerified);
}

TEST(Integrity, AViewOrAnUnknownTableOrIndexIsRefused) {
  for (const std::string sql :
       {"CREATE VIEW all_pass AS SELECT * FROM verdicts", "CREATE TABLE extra(x)",
        "CREATE INDEX by_verdict ON verdicts(verdict)"}) {
    ScratchDir dir;
    const std::string path = dir.file("a.db");
    make_store(path);
    exec_raw(path, sql);
    EXPECT_FALSE(Store::open(path).has_value()) << sql;
    const Integrity in = verify_read_only(path);
    EXPECT_EQ(in.state, Integrity::State::kFailed) << sql;
    EXPECT_TRUE(mentions(in, "is not kcv's")) << all_problems(in);
  }
}

TEST(Integrity, ARewrittenVerdictFailsVerificationNamingIt) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  exec_raw(path, "UPDATE verdicts SET verdict='pass', finding='none' WHERE kernel_id='" + kid(2) +
                     "' AND gate='CMP-01'");
  const Integrity in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kFailed);
  EXPECT_TRUE(mentions(in, "verdict (" + kid(2) + ", CMP-01, strict): MAC mismatch"))
      << all_problems(in);
  EXPECT_TRUE(mentions(in, "kernel " + kid(2) + ": MAC mismatch"));
  // A store that fails is not resumed.
  Expected<Store> w = Store::open(path);
  ASSERT_FALSE(w.has_value());
  EXPECT_NE(w.error().message.find("MAC mismatch"), std::string::npos);
}

TEST(Integrity, AKernelRowChangeFailsVerification) {
  const std::vector<std::string> changes = {"replica_verdict='rejected'", "status='crash'",
                                            "message='fine'",
                                            "row_hash='" + std::string(64, '9') + "'"};
  for (const std::string& set : changes) {
    ScratchDir dir;
    const std::string path = dir.file("a.db");
    make_store(path);
    exec_raw(path, "UPDATE kernels SET " + set + " WHERE kernel_id='" + kid(2) + "'");
    const Integrity in = verify_read_only(path);
    EXPECT_EQ(in.state, Integrity::State::kFailed) << set;
    EXPECT_TRUE(mentions(in, "kernel " + kid(2) + ": MAC mismatch")) << set << all_problems(in);
  }
}

TEST(Integrity, SwappedRowsFailVerification) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  // kid(2)'s failing CMP-01 verdict and kid(1)'s passing one change places, MACs and all.
  exec_raw(path, "UPDATE verdicts SET kernel_id='swap' WHERE kernel_id='" + kid(1) +
                     "' AND gate='CMP-01'; "
                     "UPDATE verdicts SET kernel_id='" +
                     kid(1) + "' WHERE kernel_id='" + kid(2) +
                     "' AND gate='CMP-01'; "
                     "UPDATE verdicts SET kernel_id='" +
                     kid(2) + "' WHERE kernel_id='swap'");
  Integrity in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kFailed);
  EXPECT_TRUE(mentions(in, "verdict (" + kid(1) + ", CMP-01, strict): MAC mismatch"));
  EXPECT_TRUE(mentions(in, "verdict (" + kid(2) + ", CMP-01, strict): MAC mismatch"));

  // Two gates of one kernel swapped.
  ScratchDir dir2;
  const std::string path2 = dir2.file("b.db");
  make_store(path2);
  const std::string k2 = "kernel_id='" + kid(2) + "'";
  exec_raw(path2, "UPDATE verdicts SET gate='tmp' WHERE " + k2 + " AND gate='CMP-01'; " +
                      "UPDATE verdicts SET gate='CMP-01' WHERE " + k2 + " AND gate='EXC-01'; " +
                      "UPDATE verdicts SET gate='EXC-01' WHERE " + k2 + " AND gate='tmp'");
  in = verify_read_only(path2);
  EXPECT_EQ(in.state, Integrity::State::kFailed);
  EXPECT_TRUE(mentions(in, "MAC mismatch"));
}

TEST(Integrity, DeletedOrReopenedOrUnsignedKernelsFailTheManifest) {
  const std::vector<std::string> attacks = {
      // a failing kernel deleted outright (foreign keys are the attacker's to turn off)
      "PRAGMA foreign_keys=OFF; DELETE FROM verdicts WHERE kernel_id='" + kid(2) +
          "'; DELETE FROM failing_probes WHERE kernel_id='" + kid(2) +
          "'; DELETE FROM kernels WHERE kernel_id='" + kid(2) + "'",
      // turned back to pending (so it is counted nowhere)
      "DELETE FROM verdicts WHERE kernel_id='" + kid(2) +
          "'; UPDATE kernels SET status='pending' "
          "WHERE kernel_id='" +
          kid(2) + "'",
      // stripped of its MAC, to pass as a row recorded before schema 3
      "UPDATE verdicts SET mac='' WHERE kernel_id='" + kid(2) +
          "'; UPDATE kernels SET mac='' "
          "WHERE kernel_id='" +
          kid(2) + "'",
  };
  for (const std::string& sql : attacks) {
    ScratchDir dir;
    const std::string path = dir.file("a.db");
    make_store(path);
    exec_raw(path, sql);
    const Integrity in = verify_read_only(path);
    EXPECT_EQ(in.state, Integrity::State::kFailed) << sql;
    EXPECT_TRUE(mentions(in, "manifest")) << sql << "\n" << all_problems(in);
  }
}

TEST(Integrity, ADeletedVerdictFailsItsKernel) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  exec_raw(path, "DELETE FROM verdicts WHERE kernel_id='" + kid(2) + "' AND gate='CMP-01'");
  const Integrity in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kFailed);
  EXPECT_TRUE(mentions(in, "kernel " + kid(2) + ": MAC mismatch"));
}

TEST(Integrity, AForgedManifestFails) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  exec_raw(path, "UPDATE store_meta SET value='2 0 " + std::string(64, '0') + " " +
                     std::string(64, '0') + "' WHERE name='manifest'");
  const Integrity in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kFailed);
  EXPECT_TRUE(mentions(in, "manifest: MAC mismatch")) << all_problems(in);
}

TEST(Integrity, AnotherKeyFailsAndNoKeyIsUnverifiable) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  const std::string key_file = verify_read_only(path).key_file;
  std::filesystem::rename(key_file, key_file + ".moved");
  Integrity in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kUnsigned);  // nothing wrong found, nothing checked
  EXPECT_NE(in.unverified_reason.find("only the key's holder can check"), std::string::npos)
      << in.unverified_reason;
  Expected<Store> w = Store::open(path);  // no row may be added without the key
  ASSERT_FALSE(w.has_value());
  EXPECT_NE(w.error().message.find("without it no row can be added"), std::string::npos);

  {  // a key of the right form, not this store's
    std::ofstream other(key_file);
    other << std::string(64, 'a') << "\n";
  }
  ::chmod(key_file.c_str(), 0600);
  in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kFailed);
  EXPECT_TRUE(mentions(in, "is not this store's")) << all_problems(in);

  std::filesystem::rename(key_file + ".moved", key_file);
  ::chmod(key_file.c_str(), 0644);  // readable by others: refused, not used
  in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kUnsigned);
  EXPECT_NE(in.unverified_reason.find("lets others read"), std::string::npos);
  ::chmod(key_file.c_str(), 0600);
  EXPECT_EQ(verify_read_only(path).state, Integrity::State::kVerified);
}

TEST(Integrity, TheStoresOwnWritesKeepItVerified) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  {
    Store store = Store::open(path).value();
    ASSERT_TRUE(store.mark_stale(kid(1), std::string(64, 'f')).ok());
    EXPECT_TRUE(store.kernel(kid(1)).value()->stale());
    ASSERT_TRUE(store.reset(kid(2), std::string(64, 'e')).ok());
    EXPECT_EQ(store.kernel(kid(2)).value()->status, KernelStatus::kPending);
    EXPECT_TRUE(store.verdicts(kid(2)).value().empty());
    EXPECT_EQ(verify_read_only(path).state, Integrity::State::kVerified);
    KernelOutcome again = toy_outcome(kid(2));
    again.row_hash = std::string(64, 'e');
    ASSERT_TRUE(store.record(again, 1).ok());
    ASSERT_TRUE(store.record(toy_outcome(kid(4)), 1).ok());
    ASSERT_TRUE(store.mark_stale(kid(1), "").ok());
    EXPECT_FALSE(store.kernel(kid(1)).value()->stale());
  }
  const Integrity in = verify_read_only(path);
  EXPECT_EQ(in.state, Integrity::State::kVerified) << all_problems(in);
  EXPECT_EQ(in.signed_kernels, 4);
}

TEST(Integrity, MarkStaleRefusesToSignATamperedRowAgain) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  make_store(path);
  Store store = Store::open(path).value();
  exec_raw(path, "UPDATE verdicts SET verdict='pass' WHERE kernel_id='" + kid(2) + "'");
  const Status s = store.mark_stale(kid(2), std::string(64, 'f'));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("MAC mismatch"), std::string::npos);
  EXPECT_EQ(verify_read_only(path).state, Integrity::State::kFailed);
}

TEST(Integrity, MergedSignedShardsVerifyUnderTheDestinationsKey) {
  ScratchDir dir;
  make_store(dir.file("s0.db"));
  {
    Store s1 = Store::open(dir.file("s1.db")).value();
    const int64_t run = s1.begin_run({}).value();
    ASSERT_TRUE(s1.enqueue({toy_kernel(kid(7))}).ok());
    ASSERT_TRUE(s1.record(toy_outcome(kid(7), true), run).ok());
  }
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("s0.db"), dir.file("s1.db")});
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->unsigned_kernels, 0);
  const Integrity in = verify_read_only(dir.file("all.db"));
  EXPECT_EQ(in.state, Integrity::State::kVerified) << all_problems(in);
  EXPECT_EQ(in.signed_kernels, 4);
  EXPECT_NE(in.store_id, verify_read_only(dir.file("s0.db")).store_id);

  // A tampered source stops the merge; the destination is left as it was.
  exec_raw(dir.file("s1.db"),
           "UPDATE verdicts SET verdict='pass' WHERE kernel_id='" + kid(7) + "'");
  Expected<MergeSummary> refused = merge(dir.file("all2.db"), {dir.file("s1.db")});
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("fails verification"), std::string::npos);
}

}  // namespace
}  // namespace kcv::audit
