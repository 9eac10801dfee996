// File: tests/unit/audit/kill_test.cpp
// kill -9 mid-audit. A forked child opens the store and records kernels in a loop, telling the
// parent over a pipe after each commit returns; the parent SIGKILLs it after a random number of
// reports plus a random delay (both seeded), so it lands anywhere inside the next kernel. Then:
// integrity_check is ok, every reported kernel is final and complete (no finished verdict lost),
// no kernel is half-written, and resuming completes the rest.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <set>

#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::kid;
using testing::ScratchDir;
using testing::toy_kernel;
using testing::toy_outcome;

constexpr int kKernels = 60;
// Many verdict rows per kernel widen the window in which a kill lands inside record().
const std::vector<std::string> kProfiles = {"strict", "cuda-default", "fast-math", "triton-default",
                                            "pytorch-eager"};

std::vector<KernelInfo> all_kernels() {
  std::vector<KernelInfo> out;
  for (int i = 0; i < kKernels; ++i) out.push_back(toy_kernel(kid(i)));
  return out;
}

[[noreturn]] void child_audit(const std::string& path, int report_fd) {
  Expected<Store> store = Store::open(path);
  if (!store || !store->enqueue(all_kernels())) _exit(2);
  const int64_t run = store->begin_run({}).value();
  const std::vector<std::string> todo = store->todo().value();
  for (const std::string& id : todo) {
    if (!store->mark_running(id, run) ||
        !store->record(toy_outcome(id, id.back() == '7', kProfiles), run))
      _exit(3);
    const int32_t index = std::stoi(id.substr(id.size() - 3));
    if (write(report_fd, &index, sizeof index) != sizeof index) _exit(4);
  }
  _exit(0);
}

std::set<std::string> kill_after(const std::string& path, int reports, int delay_us) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child_audit(path, fds[1]);
  }
  close(fds[1]);
  std::set<std::string> committed;
  int32_t index = 0;
  while (static_cast<int>(committed.size()) < reports &&
         read(fds[0], &index, sizeof index) == sizeof index) {
    committed.insert(kid(index));
  }
  usleep(static_cast<useconds_t>(delay_us));  // land anywhere inside the next kernel's writes
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  return committed;
}

TEST(StoreKill, SigkillMidAuditLosesNothingFinished) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 8; ++trial) {
    ScratchDir dir;
    const std::string path = dir.file("audit.db");
    const int reports = std::uniform_int_distribution<int>(1, kKernels - 10)(rng);
    const int delay_us = std::uniform_int_distribution<int>(0, 3000)(rng);
    SCOPED_TRACE(::testing::Message()
                 << "killed " << delay_us << " us after " << reports << " commits");
    const std::set<std::string> committed = kill_after(path, reports, delay_us);
    ASSERT_EQ(static_cast<int>(committed.size()), reports);

    Expected<Store> store = Store::open(path);
    ASSERT_TRUE(store.has_value()) << store.error().to_string();
    ASSERT_EQ(store->integrity_check().value(), "ok");
    const std::vector<KernelRow> rows = store->kernels().value();
    for (const KernelRow& row : rows) {
      const size_t n = store->verdicts(row.info.kernel_id).value().size();
      EXPECT_EQ(n, is_final(row.status) ? testing::toy_gates().size() * kProfiles.size() : 0u)
          << row.info.kernel_id;
      if (committed.count(row.info.kernel_id) != 0) {
        EXPECT_TRUE(is_final(row.status)) << row.info.kernel_id;
      }
    }
    const std::vector<std::string> todo = store->todo().value();
    EXPECT_LE(todo.size(), static_cast<size_t>(kKernels - reports));
    const int64_t run = store->begin_run({}).value();
    for (const std::string& id : todo) ASSERT_TRUE(store->record(toy_outcome(id), run).ok());
    EXPECT_TRUE(store->todo().value().empty());
    EXPECT_EQ(store->kernels().value().size(), static_cast<size_t>(kKernels));
  }
}

}  // namespace
}  // namespace kcv::audit
