// File: tests/unit/audit/fault_injection_test.cpp
// SQLite's fault-injection loop applied to the store: for N = 1, 2, ... fail the N-th write or
// commit (transient: only that one; persistent: that one and every later one) while an audit of
// a few kernels runs, until a run finishes with no fault fired. After each run, reopened without
// faults: integrity_check is ok, every kernel whose record() succeeded is final with all its
// verdicts ("no finished verdict lost"), every other kernel is absent, or unfinished with no
// verdicts ("no half-written kernel"), and resuming completes the audit.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>

#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::kid;
using testing::ScratchDir;
using testing::toy_kernel;
using testing::toy_outcome;

constexpr int kKernels = 5;

class CountingFaults {
 public:
  CountingFaults(int fail_at, bool persistent) : fail_at_(fail_at), persistent_(persistent) {}
  FaultHook hook() {
    return [this](SqlOp, std::string_view) {
      ++calls_;
      const bool fire = calls_ == fail_at_ || (persistent_ && calls_ > fail_at_);
      fired_ = fired_ || fire;
      return fire ? SQLITE_IOERR_WRITE : 0;
    };
  }
  bool fired() const { return fired_; }

 private:
  int fail_at_;
  bool persistent_;
  int calls_ = 0;
  bool fired_ = false;
};

// The audit loop as `kcv audit` will run it: a failure on one kernel is logged, never fatal.
std::set<std::string> run_audit(const std::string& path, FaultHook hook) {
  std::set<std::string> recorded;
  StoreOptions options;
  options.fault_hook = std::move(hook);
  Expected<Store> store = Store::open(path, options);
  if (!store) return recorded;
  Expected<int64_t> run = store->begin_run({"0.1.0", "gen", 1, {"strict"}, "test", "0/1"});
  if (!run) return recorded;
  std::vector<KernelInfo> kernels;
  for (int i = 0; i < kKernels; ++i) kernels.push_back(toy_kernel(kid(i)));
  if (!store->enqueue(kernels)) return recorded;
  Expected<std::vector<std::string>> todo = store->todo();
  if (!todo) return recorded;
  for (const std::string& id : *todo) {
    if (!store->mark_running(id, *run)) continue;
    if (store->record(toy_outcome(id, id == kid(1)), *run)) recorded.insert(id);
  }
  (void)store->finish_run(*run);
  return recorded;
}

void expect_consistent(const Store& store, const std::set<std::string>& recorded) {
  ASSERT_EQ(store.integrity_check().value(), "ok");
  const std::vector<KernelRow> rows = store.kernels().value();
  for (const std::string& id : recorded) {
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const KernelRow& r) { return r.info.kernel_id == id; });
    ASSERT_NE(it, rows.end()) << "finished kernel lost: " << id;
    EXPECT_TRUE(is_final(it->status)) << id;
  }
  for (const KernelRow& row : rows) {
    const size_t verdicts = store.verdicts(row.info.kernel_id).value().size();
    if (is_final(row.status)) {
      EXPECT_EQ(verdicts, testing::toy_gates().size())
          << "half-written kernel " << row.info.kernel_id;
    } else {
      EXPECT_EQ(verdicts, 0u) << "verdicts of an unfinished kernel " << row.info.kernel_id;
    }
  }
}

void resume_and_complete(Store& store) {
  std::vector<KernelInfo> kernels;
  for (int i = 0; i < kKernels; ++i) kernels.push_back(toy_kernel(kid(i)));
  ASSERT_TRUE(store.enqueue(kernels).ok());
  const int64_t run = store.begin_run({}).value();
  const std::vector<std::string> todo = store.todo().value();
  for (const std::string& id : todo)
    ASSERT_TRUE(store.record(toy_outcome(id, id == kid(1)), run).ok());
  EXPECT_TRUE(store.todo().value().empty());
  EXPECT_EQ(store.kernels().value().size(), static_cast<size_t>(kKernels));
  EXPECT_EQ(store.failing_probes(kid(1)).value().size(), 1u);
}

void fault_loop(bool persistent) {
  int runs_with_fault = 0;
  for (int n = 1;; ++n) {
    ScratchDir dir;
    const std::string path = dir.file("audit.db");
    CountingFaults faults(n, persistent);
    const std::set<std::string> recorded = run_audit(path, faults.hook());
    Expected<Store> store = Store::open(path);
    ASSERT_TRUE(store.has_value()) << "n=" << n << ": " << store.error().to_string();
    SCOPED_TRACE(::testing::Message()
                 << (persistent ? "persistent" : "transient") << " fault at n=" << n);
    expect_consistent(*store, recorded);
    resume_and_complete(*store);
    expect_consistent(*store, recorded);
    if (!faults.fired()) {
      EXPECT_EQ(recorded.size(), static_cast<size_t>(kKernels));  // the fault-free run is whole
      break;
    }
    ++runs_with_fault;
    ASSERT_LT(n, 1000) << "the fault loop does not terminate";
  }
  // Every write of the audit was failed once: schema, run, enqueue, 5 x (running, record).
  EXPECT_GE(runs_with_fault, 2 + 2 * kKernels);
}

TEST(StoreFaults, TransientFaultNeverLosesOrHalfWritesAKernel) { fault_loop(false); }
TEST(StoreFaults, PersistentFaultNeverLosesOrHalfWritesAKernel) { fault_loop(true); }

}  // namespace
}  // namespace kcv::audit
