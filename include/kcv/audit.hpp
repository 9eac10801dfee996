// File: include/kcv/audit.hpp
// The audit's data layer: a streaming reader of corpus rows (JSONL, schema in
// ../shared/corpora/README.md), deterministic sharding, a resumable SQLite store of per-kernel
// verdicts, shard merging, and the headline queries of the audit report. Nothing here runs a
// kernel: the orchestrator (`kcv audit`) feeds rows to workers and writes what comes back.
//
// The store's one invariant: a kernel's verdict rows and its final status are written in one
// transaction, so after any crash, I/O error or kill -9 a kernel is either complete or
// pending/running (redone on resume). Schema and semantics: docs/07_audit_store.md.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcv/expected.hpp"
#include "kcv/finding.hpp"
#include "kcv/probe.hpp"

namespace kcv::audit {

// ---------------------------------------------------------------------------------------------
// Corpus rows

struct CorpusRow {
  std::string id;  // "<prefix>/<run or gpu>/L<level>/P<problem_id>"
  std::string corpus;
  std::string source_repo;
  std::string source_commit;
  std::string source_path;
  int level = 0;
  int problem_id = 0;
  std::string problem_name;
  std::string reference_version;  // v0 | v0.1 | head
  std::string reference_code;
  std::string candidate_code;
  std::string language;  // cuda | triton | cute | tilelang | torch
  std::optional<std::string> model;
  std::string original_harness;
  std::optional<std::string> original_verdict;  // accepted | rejected | compile_error
  std::optional<double> original_speedup;
  std::optional<std::string> original_hardware;
  std::optional<std::string> contract_json;  // the row's declared contract (docs/01), JSON text
  /// SHA-256 (hex) of what a verdict judges: reference_code, candidate_code and the contract
  /// (row_content_hash). The store keeps it with the verdicts, so an edited row is seen.
  std::string row_hash;
  int64_t line = 0;  // 1-based line in its file (set by read_corpus)
  std::string file;  // the file it was read from (set by read_corpus)
};

/// A line that is not a valid row. `message` names the field ("level: expected an integer").
/// Every text is valid UTF-8 (bytes that are not are shown as U+FFFD).
struct RowError {
  std::string file;
  int64_t line = 0;  // 1-based
  std::string id;    // empty when the line has no readable id
  std::string message;
  std::string corpus;     // the row's own corpus when readable, else the file's stem
  std::string row_hash;   // SHA-256 (hex) of the line's bytes
  std::string duplicate;  // "<file>:<line>" of the row that holds the id first; empty otherwise
};

/// Parses one JSONL line; the error message names the offending field. A line that is not
/// UTF-8 is an error naming the first bad byte and its column.
Expected<CorpusRow> parse_corpus_row(std::string_view line);

/// The content hash of a row: SHA-256 over reference_code, candidate_code and the contract
/// (length-prefixed, so no two field splits collide), as 64 hex digits.
std::string row_content_hash(const CorpusRow& row);

// ---------------------------------------------------------------------------------------------
// Sharding: row -> shard by FNV-1a (64-bit) of the row id, modulo the shard count.

struct Shard {
  int index = 0;  // 0-based
  int count = 1;
  bool contains(std::string_view key) const;
};

uint64_t fnv1a64(std::string_view bytes);
/// "i/n" with 0 <= i < n.
Expected<Shard> parse_shard(std::string_view text);
/// The key a row is sharded by: its id, or "<file name>:<line>" for a malformed row without id.
std::string shard_key(const RowError& e);
/// The kernel id a malformed row is recorded under: its id; "<file name>:<line>" without one;
/// "<id>@<file name>:<line>" for a duplicate (the first row keeps the id).
std::string malformed_kernel_id(const RowError& e);

struct ReadCounts {
  int64_t rows = 0;     // valid rows delivered (in this shard)
  int64_t errors = 0;   // malformed rows delivered (in this shard)
  int64_t skipped = 0;  // rows of other shards
};

struct CorpusVisitor {
  std::function<void(CorpusRow&&)> on_row;
  std::function<void(RowError&&)> on_error;
};

/// Streams a JSONL corpus. Blank lines are skipped; a malformed line goes to on_error and
/// reading continues. Fails only when the file cannot be opened or read.
Expected<ReadCounts> read_corpus(const std::string& path, const CorpusVisitor& visit,
                                 const Shard& shard = {});

/// read_corpus over several files in order, with one rule across them: an id belongs to the
/// first line that carries it (valid or malformed); every later line with that id is a RowError
/// whose `duplicate` names the first ("duplicate id: ..."), never a row. Rows of one id share a
/// shard, so the rule holds shard by shard.
Expected<ReadCounts> read_corpora(const std::vector<std::string>& paths, const CorpusVisitor& visit,
                                  const Shard& shard = {});

// ---------------------------------------------------------------------------------------------
// Store records

enum class KernelStatus {
  kPending,  // queued, not started
  kRunning,  // started by some run; redone on resume
  kOk,       // the candidate ran at the reference shape; verdicts say the rest
  kCrash,    // the candidate's worker died at the reference shape, or later (verdicts so far kept)
  kTimeout,
  kCompileError,
  kImportError,     // the Python module (reference or candidate) failed to import
  kMalformed,       // the corpus row itself is bad
  kError,           // anything else (message says what)
  kRuntimeError,    // the candidate raised at the reference shape, on get_inputs' own draw
  kBadOutput,       // wrong output count, shape or dtype at the reference shape
  kReferenceError,  // the trusted side failed (a harness failure: never a kernel defect)
  kEnvironment,     // this machine lacks a toolchain, package or device the kernel needs
  kPoison,          // the orchestrator died while it ran, --max-attempts times: not run again
  kLoadKilled,      // a worker was killed (SIGKILL) during its load, on the retry too
  kOutOfMemory,     // killed by the out-of-memory killer, on the retry too
};
std::string_view status_name(KernelStatus s);
Expected<KernelStatus> parse_status(std::string_view name);
/// Final statuses are never redone by resume.
bool is_final(KernelStatus s);

/// What the store knows about a kernel before it runs (from the corpus row and the adapter).
struct KernelInfo {
  std::string kernel_id;  // corpus row id
  std::string corpus;
  int level = 0;
  int problem_id = 0;
  std::string problem_name;
  std::string language;
  std::string op_class;                         // e.g. "elementwise", "reduction", "matmul"
  bool determinism_declared = true;             // ORD-02 counts toward the TF floor only if set
  std::optional<std::string> original_verdict;  // from the corpus row
  std::string row_hash;                         // CorpusRow::row_hash of the row to judge
};

KernelInfo kernel_info_from(const CorpusRow& row);

struct VerdictRecord {
  std::string gate;     // "CMP-01"
  std::string profile;  // "strict"
  std::string verdict;  // pass | fail | not_applicable | error
  std::string reason;
  std::optional<double> worst_ratio;  // null when not measured (or not finite)
  std::optional<double> bits_lost;
  std::string evidence_json = "{}";
  std::string probe_token;  // failing probe, replayable; empty otherwise
  Finding finding = Finding::kNone;        // what a fail found (kNone otherwise)
  ProbeScope scope = ProbeScope::kReference;  // what the failing probe exercised (fails only)
};

/// Everything a finished kernel writes, in one transaction.
struct KernelOutcome {
  std::string kernel_id;
  KernelStatus status = KernelStatus::kOk;
  std::string message;
  std::optional<std::string> replica_verdict;  // accepted | rejected (the allclose replica)
  std::vector<VerdictRecord> verdicts;
  // Facts the run learned, written over the kernel row's (empty / nullopt: leave them):
  std::string op_class;                       // from the traced reference, e.g. "reduction"
  std::optional<bool> determinism_declared;   // the contract the verdicts were judged under
  std::string facts_json;                     // the reference's facts (docs/06 §7.2), "{}" if none
  std::string row_hash;  // the judged row's CorpusRow::row_hash (empty: leave the kernel row's)
};

struct KernelRow {
  KernelInfo info;
  KernelStatus status = KernelStatus::kPending;
  std::string message;
  std::optional<std::string> replica_verdict;
  std::optional<int64_t> run_id;
  int attempts = 0;
  std::string facts_json = "{}";  // the reference's facts the last record() wrote (JSON)
  std::string row_hash;           // the row the verdicts judged ('' before schema 3)
  std::string seen_hash;   // the row as a later run read it, when it differs: stale ('' none)
  bool is_signed = false;  // carries a MAC (final kernels of schema 3)
  bool stale() const { return !seen_hash.empty() && seen_hash != row_hash; }
};

struct FailingProbe {
  std::string kernel_id;
  std::string gate;
  std::string profile;
  std::string probe_token;
};

struct RunInfo {
  std::string kcv_version;
  std::string generator_version;
  uint64_t seed = 0;
  std::vector<std::string> profiles;
  std::string command_line;
  std::string shard = "0/1";
};

// ---------------------------------------------------------------------------------------------
// The SQLite seam. Every statement the store runs passes through this hook first; a non-zero
// return is used as the SQLite result code instead of running the statement. Tests use it to
// fail the N-th write or commit (SQLite's own fault-injection loop); production has none.

enum class SqlOp { kWrite, kCommit };
using FaultHook = std::function<int(SqlOp op, std::string_view sql)>;

struct StoreOptions {
  FaultHook fault_hook;  // empty: no faults
  int busy_timeout_ms = 5000;
  bool read_only = false;
  /// Where the store's key is, as <key_dir>/<store id>.key; empty: mac::default_key_dir()
  /// ($KCV_KEY_DIR, else ~/.config/kcv/store-keys). Never inside what a candidate can reach.
  std::string key_dir;
};

/// The directory store keys live in when StoreOptions::key_dir is empty: $KCV_KEY_DIR, else
/// $XDG_CONFIG_HOME/kcv/store-keys, else $HOME/.config/kcv/store-keys. The audit keeps it (and
/// the store's directory) out of every sandbox.
std::string default_key_dir();

inline constexpr int kStoreSchemaVersion = 3;

/// What verify() found. kVerified: every final kernel carries a MAC under the store's key and
/// every MAC, the schema and the manifest (which kernels are signed) check. kUnsigned: nothing
/// is found wrong, but something cannot be checked: final kernels without a MAC (recorded
/// before schema 3), a store without a key (an older store read as it is), or a store whose key
/// is not on this machine (`unverified_reason` says which). kFailed: something does not check;
/// `problems` says what (the first 20). Only kVerified says the rows are the ones kcv wrote.
struct Integrity {
  enum class State { kVerified, kUnsigned, kFailed };
  State state = State::kUnsigned;
  std::string store_id;  // empty: the store has none (schema < 3)
  std::string key_file;  // where its key was looked for
  int64_t signed_kernels = 0;
  int64_t unsigned_kernels = 0;   // final kernels without a MAC
  std::string unverified_reason;  // kUnsigned: why the rows cannot be checked
  std::vector<std::string> problems;
  int64_t more_problems = 0;  // beyond those listed
};
std::string_view integrity_state_name(Integrity::State s);  // verified | unsigned | failed

class Store {
 public:
  /// Opens (creating when absent) and migrates; WAL mode; user_version = kStoreSchemaVersion.
  /// Opened for writing, the store must verify (verify(): kVerified or kUnsigned) and gets a
  /// store id and a fresh key file when it has none; read-only, it opens whatever verify()
  /// would say (the caller asks it). Triggers and views never run on kcv's connections.
  static Expected<Store> open(const std::string& path, StoreOptions options = {});
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  Expected<int64_t> begin_run(const RunInfo& run);
  Status finish_run(int64_t run_id);

  /// Adds kernels as pending; existing kernels (any status) are left as they are.
  Status enqueue(const std::vector<KernelInfo>& kernels);
  /// Records a malformed corpus row as a final kernel with status `malformed`.
  Status record_malformed(const RowError& error, std::string_view corpus, int64_t run_id);
  /// pending -> running. attempts counts the runs that started the kernel: + 1 unless this
  /// run already did. A kernel left running by a run that died is a suspect on resume.
  Status mark_running(std::string_view kernel_id, int64_t run_id);
  /// A final kernel back to pending, its verdicts deleted (its failing probes kept, to run
  /// first), to be judged again as the row with `row_hash` (a row edited under the same id, or
  /// an operator's retry); the manifest follows.
  Status reset(std::string_view kernel_id, std::string_view row_hash);
  /// Keeps a final kernel's verdicts but records that the corpus row now hashes to `seen_hash`
  /// (stale when it differs from the judged row's hash).
  Status mark_stale(std::string_view kernel_id, std::string_view seen_hash);
  /// Kernels still running under `run_id` or a later run (the orchestrator processes a
  /// launcher started) back to pending, their attempt given back: the run is stopped on purpose
  /// (SIGTERM, SIGINT), or failed around one kernel (`kernel_id`: only that one), not killed by
  /// a kernel.
  Status release_running(int64_t run_id, std::string_view kernel_id = {});
  /// Replaces the kernel's verdicts and sets its final status, in one transaction. Failing
  /// probes (verdict fail with a token) are added to failing_probes. Fails when the kernel is
  /// unknown or `outcome.status` is not final.
  Status record(const KernelOutcome& outcome, int64_t run_id);

  /// Kernels still to do (pending or running): those with recorded failing probes first, then
  /// by kernel id.
  Expected<std::vector<std::string>> todo() const;
  Expected<std::optional<KernelRow>> kernel(std::string_view kernel_id) const;
  Expected<std::vector<KernelRow>> kernels() const;
  Expected<std::vector<VerdictRecord>> verdicts(std::string_view kernel_id) const;
  /// Recorded failing probes of a kernel, to re-run first.
  Expected<std::vector<FailingProbe>> failing_probes(std::string_view kernel_id) const;
  /// The distinct generator_version of the runs that recorded a verdict: what judged the
  /// verdicts in the store (a resumed audit must not mix error models in one store).
  Expected<std::vector<std::string>> verdict_generators() const;
  /// "ok" or SQLite's list of problems.
  Expected<std::string> integrity_check() const;
  /// Schema objects that are not kcv's (a trigger, a view, an unknown table or index) or kcv's
  /// with another definition; empty when the schema is exactly kcv's.
  Expected<std::vector<std::string>> schema_problems() const;
  /// Checks the schema, the key, every MAC and the manifest (docs/07_audit_store.md).
  Expected<Integrity> verify() const;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Merge

struct MergeSummary {
  int64_t runs = 0;           // runs copied
  int64_t kernels_added = 0;  // new to dest, or final in a source and unfinished in dest
  int64_t verdicts_added = 0;
  int64_t verdicts_identical = 0;  // same key, same verdict, already in dest
  int64_t evidence_differs = 0;    // same key, same verdict, other fields differ (dest kept)
  int64_t unsigned_kernels = 0;    // kernels of dest left without a MAC (from unsigned sources)
};

/// Unions shard stores into `dest` (created when absent) in one transaction: all sources or
/// nothing. A differing verdict (or differing final status) for the same key is an error naming
/// the key. Each source is recorded in the `merges` table (provenance). Every source must verify
/// under its own key (found in options.key_dir by its store id): a failing one is an error, an
/// unsigned one's kernels stay unsigned in dest; the rest are signed again under dest's key.
Expected<MergeSummary> merge(const std::string& dest, const std::vector<std::string>& sources,
                             const StoreOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Verdict diff (`kcv diff A.db B.db`): two audits of the same rows, compared kernel by kernel.

/// One difference between two stores, on a kernel final in both. `gate` and `profile` are
/// empty for the kernel's own fields (`what` "status" or "replica"); otherwise `what` is
/// "verdict" and the values are "<verdict>" or "fail <finding> <scope>", "-" where that store
/// holds no verdict for the key. The reasons are shown, never compared (they name pids and
/// measured values).
/// What kind of change a difference is: a reader of a repeated audit's diff first wants the
/// pass/fail flips apart from a probe that did not run in one of the runs.
enum class DifferenceKind {
  kStatus,         // the kernel's status
  kReplica,        // KernelBench's check
  kPassFail,       // pass in one store, fail in the other
  kFailChanged,    // fail in both, with another finding or scope
  kError,          // error in one store (a probe not run, the trusted side failed)
  kNotApplicable,  // not_applicable in one store (the reference refused every probe, ...)
  kOneSideOnly,    // a (gate, profile) verdict that one store lacks
};
inline constexpr std::array<DifferenceKind, 7> kAllDifferenceKinds = {
    DifferenceKind::kStatus,      DifferenceKind::kReplica, DifferenceKind::kPassFail,
    DifferenceKind::kFailChanged, DifferenceKind::kError,   DifferenceKind::kNotApplicable,
    DifferenceKind::kOneSideOnly};
std::string_view difference_kind_name(DifferenceKind k);  // "pass/fail flip", ...

struct VerdictDifference {
  std::string kernel_id;
  std::string what;
  std::string gate;
  std::string profile;
  std::string a;
  std::string b;
  std::string reason_a;
  std::string reason_b;
  DifferenceKind kind = DifferenceKind::kStatus;
};

struct StoreDiff {
  int64_t final_in_both = 0;       // kernels compared
  int64_t verdicts_compared = 0;   // (kernel, gate, profile) keys of those kernels, either side
  std::vector<std::string> final_in_a_only;  // final in A, unfinished or absent in B
  std::vector<std::string> final_in_b_only;
  std::vector<VerdictDifference> differences;  // by kernel, then gate and profile
  bool identical() const { return differences.empty(); }
};

/// Compares the kernels final in both stores: status, the replica's verdict, and for every
/// (gate, profile) the verdict, and on a fail its finding and scope. Worst ratios, evidence,
/// reasons and messages are not compared.
Expected<StoreDiff> diff_verdicts(const Store& a, const Store& b);

// ---------------------------------------------------------------------------------------------
// Report queries (docs/07_audit_store.md, docs/09_report.md). A kernel is *judged* under a
// profile when its status is ok and it has at least one pass or fail verdict under that profile;
// every rate below counts judged kernels, not rows. A kernel whose status is not ok is counted
// in the status rows only, never as a gate failure. The reason-based numbers read each fail's
// finding: a kernel is in the tolerance-free floor when a fail's finding is_tolerance_free
// (nondeterministic only where the kernel declared determinism). A fail that names no finding
// (a store recorded before findings were typed) never falls back to which gate failed: a rate
// that depends on one is absent (std::nullopt).

struct Rate {
  int64_t hits = 0;
  int64_t total = 0;
  double value() const { return total == 0 ? 0.0 : static_cast<double>(hits) / total; }
};

/// The two headline rates over one population of judged kernels.
struct ViolationRates {
  Rate any_violation;            // a fail of any finding
  std::optional<Rate> tf_floor;  // a tolerance-free finding; nullopt: a fail names no finding
};

struct ProfileHeadline {
  std::string profile;
  ViolationRates judged;             // every judged kernel
  ViolationRates replica_accepted;   // judged kernels the allclose replica accepted
  ViolationRates original_accepted;  // judged kernels the corpus's original harness accepted
  /// Judged kernels whose floor membership hangs on a fail that names no finding.
  int64_t untyped_kernels = 0;
  /// Kernels with status ok and verdicts under the profile, none of them pass or fail (every
  /// gate errored or did not apply): in no denominator, counted here.
  int64_t unjudged_ok = 0;
};

struct GateRate {
  std::string profile;
  std::string gate;
  Rate fail;                   // among judged kernels where the gate applies (pass or fail)
  Rate fail_replica_accepted;  // the same among those the replica accepted
  int64_t errors = 0;          // judged kernels with verdict error for this gate
  int64_t not_applicable = 0;
};

/// Judged kernels with at least one fail of one finding (a kernel can count under several).
struct FindingCount {
  std::string profile;
  std::optional<Finding> finding;  // nullopt: fails that name no finding (kNone or '')
  Rate judged;                     // over every judged kernel
  Rate replica_accepted;           // over the judged kernels the replica accepted
};

/// The contract choices of the robustness table, cumulative in this order: each leaves out the
/// fails of its own choice and of every one before it.
enum class ContractChoice {
  kAsJudged,       // every fail
  kNoDeterminism,  // without fails whose finding is nondeterministic
  kNoShape,        // and without fails whose probe scope is shape (other sizes)
  kNoLayout,       // and without fails whose probe scope is layout (strided, broadcast views)
};
inline constexpr std::array<ContractChoice, 4> kContractChoices = {
    ContractChoice::kAsJudged, ContractChoice::kNoDeterminism, ContractChoice::kNoShape,
    ContractChoice::kNoLayout};
/// "as_judged", "without_determinism", "without_shape", "without_layout".
std::string_view contract_choice_name(ContractChoice c);

/// One row of the robustness table: the rates among replica-accepted judged kernels under one
/// contract choice (the denominator is the same for every choice of a profile).
struct RobustnessRow {
  std::string profile;
  ContractChoice choice = ContractChoice::kAsJudged;
  std::optional<Rate> any_violation;  // nullopt: the choice needs a finding or scope not stored
  std::optional<Rate> tf_floor;
};

struct ClassRate {
  std::string profile;
  std::string op_class;
  ViolationRates judged;
};

struct StatusCount {
  std::string status;
  int64_t kernels = 0;
  int64_t replica_accepted = 0;   // of them, kernels the replica accepted
  int64_t original_accepted = 0;  // of them, kernels the original harness accepted
};

/// Kernels of one corpus with one status: how far a partial audit has got in each corpus.
struct CorpusStatusCount {
  std::string corpus;
  std::string status;
  int64_t kernels = 0;
};

/// 2x2 of kcv (any violation under `profile`) against another judge ("replica" or
/// "original"), per corpus and overall (corpus ""). Kernels kcv did not judge, or with no
/// accept/reject verdict from the other judge, are `excluded`.
struct Differential {
  std::string against;  // "replica" | "original"
  std::string corpus;   // "" = all corpora
  int64_t both_accept = 0;
  int64_t kcv_rejects_other_accepts = 0;  // the rigor gap
  int64_t kcv_accepts_other_rejects = 0;  // the reverse: every one needs an explanation
  int64_t both_reject = 0;
  int64_t excluded = 0;
};

struct Headline {
  std::vector<StatusCount> statuses;
  std::vector<CorpusStatusCount> corpus_statuses;  // by corpus, then status
  std::vector<ProfileHeadline> profiles;           // by profile
  std::vector<GateRate> gates;                     // by profile, then gate
  std::vector<FindingCount> findings;  // by profile, then kAllFindings order; untyped last
  std::vector<RobustnessRow> robustness;  // by profile, then kContractChoices order
  std::vector<ClassRate> classes;         // by profile, then op class
  /// Kernels judged at a reduced shape (`kcv audit --reduce-over-gb`: a verdict with evidence
  /// "battery_shape"), replica and battery alike.
  int64_t reduced_shape = 0;
  /// Kernels with a gate that could not run the candidate at some probes on this machine (a
  /// verdict with evidence "probes_not_run": the candidate short of memory at another shape on
  /// its last attempt); such a gate passes nothing (an error unless it failed elsewhere).
  int64_t not_run_here = 0;
  /// Final kernels whose corpus row changed after it was judged (KernelRow::stale): kept by
  /// `kcv audit --stale keep`; they are in every number above with their old verdicts.
  int64_t stale = 0;
};

/// Gates whose GateDef::tolerance_free is set (the figure marks them; the floor counts findings).
std::vector<std::string> tolerance_free_gates();

Expected<Headline> headline(const Store& store);
Expected<std::vector<Differential>> differential(const Store& store, std::string_view profile,
                                                 std::string_view against);

struct SampleItem {
  std::string kernel_id;
  std::string stratum;  // "<corpus>/<outcome>", outcome: violation | clean | <status>
};

/// Up to `per_stratum` kernels from each stratum, chosen by a seeded hash of the kernel id
/// (same seed, same store -> same sample). Outcome is judged under `profile`.
Expected<std::vector<SampleItem>> hand_audit_sample(const Store& store, std::string_view profile,
                                                    int per_stratum, uint64_t seed);

}  // namespace kcv::audit
