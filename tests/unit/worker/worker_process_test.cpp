// File: tests/unit/worker/worker_process_test.cpp
// The worker as a process that can fail: a segfault is kCrash naming the signal and the next
// call runs on a restarted worker; a hang is kTimeout after the call's 300 ms; a huge
// allocation under the worker's memory limit fails inside the kernel (std::bad_alloc) and the
// worker lives on; a worker that writes garbage, dies at start or does not exist gives a clean
// record, never a crash of kcv. Fake workers are small shell scripts written per test.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "worker_test_util.hpp"

namespace kcv {
namespace {

using namespace kcv::testing;
using Clock = std::chrono::steady_clock;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fake worker: a /bin/sh script with `body`, in a temporary directory removed afterwards.
struct FakeWorker {
  explicit FakeWorker(const std::string& body) {
    char d[] = "/tmp/kcv-fake-worker-XXXXXX";
    EXPECT_NE(mkdtemp(d), nullptr);
    dir = d;
    path = dir + "/worker.sh";
    std::ofstream(path) << "#!/bin/sh\n" << body;
    chmod(path.c_str(), 0700);
  }
  ~FakeWorker() { std::filesystem::remove_all(dir); }
  std::string dir, path;
};

// hello and load answered correctly, so the failure is in the call.
const std::string kHandshake =
    "read line; echo '{\"type\":\"hello\",\"protocol\":1}'\n"
    "read line; echo '{\"type\":\"loaded\",\"name\":\"good_add\",\"op\":\"add\"}'\n"
    "read line\n";

// The executor of a good_add load whose worker is `fake`.
std::unique_ptr<WorkerExecutor> fake_executor(const FakeWorker& fake) {
  WorkerOptions o = worker_options("good_add");
  o.command = {fake.path};
  return make_worker_executor(o);
}

CallRecord run_with(WorkerExecutor& w, const std::string& kernel, const CallOptions& o) {
  auto c = load_here(kernel);
  if (!c) return {};
  return w.run(*c, add_inputs(), kOut, o);
}

TEST(WorkerProcess, ASegfaultIsACrashAndTheNextCallRunsOnARestartedWorker) {
  auto w = make_worker_executor(worker_options("add_moody"));
  const CallRecord crash = run_with(*w, "add_moody", call_options(1));
  EXPECT_EQ(crash.status, CallStatus::kCrash);
  EXPECT_TRUE(contains(crash.message, "SIGSEGV")) << crash.message;
  EXPECT_EQ(w->workers_started(), 1);
  const CallRecord next = run_with(*w, "add_moody", call_options());
  EXPECT_EQ(next.status, CallStatus::kOk) << next.message;
  expect_sums(next);
  EXPECT_EQ(w->workers_started(), 2);
}

TEST(WorkerProcess, CallCostsSumTheWorkersReportBesideKcvsOwnShare) {
  FakeWorker fake(kHandshake +
                  "echo '{\"type\":\"result\",\"id\":1,\"status\":\"ok\",\"task_s\":0.25,"
                  "\"forward_s\":0.125}'\n"
                  "read line; sleep 0.2; "
                  "echo '{\"type\":\"result\",\"id\":2,\"status\":\"ok\",\"task_s\":\"x\"}'\n"
                  "read line\n");
  auto w = fake_executor(fake);
  EXPECT_EQ(w->call_costs().calls, 0);
  EXPECT_EQ(run_with(*w, "good_add", call_options()).status, CallStatus::kOk);
  EXPECT_EQ(run_with(*w, "good_add", call_options()).status, CallStatus::kOk);
  const WorkerCallCosts c = w->call_costs();
  EXPECT_EQ(c.calls, 2);
  EXPECT_DOUBLE_EQ(c.task_s, 0.25);  // the second's task_s is no number: nothing counted
  EXPECT_DOUBLE_EQ(c.forward_s, 0.125);
  EXPECT_GE(c.round_trip_s, 0.2);  // the second call's wait
  EXPECT_GT(c.prepare_s, 0.0);
  EXPECT_GT(c.finish_s, 0.0);
}

TEST(WorkerProcess, KcvWorkerReportsItsTaskSeconds) {
  auto w = make_worker_executor(worker_options("good_add"));
  const CallRecord r = run_with(*w, "good_add", call_options());
  ASSERT_EQ(r.status, CallStatus::kOk) << r.message;
  const WorkerCallCosts c = w->call_costs();
  EXPECT_EQ(c.calls, 1);
  EXPECT_GT(c.task_s, 0.0);
  EXPECT_LE(c.task_s, c.round_trip_s);
  EXPECT_EQ(c.forward_s, 0.0);  // kcv-worker runs a kernel, no model
}

TEST(WorkerProcess, ExitingInsideTheKernelIsACrash) {
  auto w = make_worker_executor(worker_options("add_exit"));
  const CallRecord r = run_with(*w, "add_exit", call_options());
  EXPECT_EQ(r.status, CallStatus::kCrash);
  EXPECT_TRUE(contains(r.message, "exit code 3")) << r.message;
}

TEST(WorkerProcess, AHangIsATimeoutAndTheWorkerIsReplaced) {
  auto w = make_worker_executor(worker_options("add_moody"));
  ASSERT_TRUE(w->start().has_value());  // startup is not part of the call's allowance
  CallOptions o = call_options(2);
  o.timeout_ms = 300;
  const auto t0 = Clock::now();
  const CallRecord r = run_with(*w, "add_moody", o);
  const auto waited = Clock::now() - t0;
  EXPECT_EQ(r.status, CallStatus::kTimeout);
  EXPECT_TRUE(contains(r.message, "no result within 300 ms")) << r.message;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_EQ(run_with(*w, "add_moody", call_options()).status, CallStatus::kOk);
  EXPECT_EQ(w->workers_started(), 2);
}

TEST(WorkerProcess, AHugeAllocationFailsUnderTheMemoryLimitAndTheWorkerLivesOn) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of shadow address space: no sanitized process starts "
                  "under a 512 MiB RLIMIT_AS";
#endif
  WorkerOptions opt = worker_options("add_moody");
  opt.memory_limit_bytes = int64_t{512} << 20;  // the kernel asks for 1 GiB
  auto w = make_worker_executor(opt);
  const CallRecord r = run_with(*w, "add_moody", call_options(3));
  EXPECT_EQ(r.status, CallStatus::kException);
  EXPECT_TRUE(contains(r.message, "bad_alloc")) << r.message;
  EXPECT_EQ(run_with(*w, "add_moody", call_options()).status, CallStatus::kOk);
  EXPECT_EQ(w->workers_started(), 1);
}

TEST(WorkerProcess, AKernelPrintingToStdoutDoesNotBreakTheProtocol) {
  auto w = make_worker_executor(worker_options("add_moody"));
  const CallRecord r = run_with(*w, "add_moody", call_options(4));
  EXPECT_EQ(r.status, CallStatus::kOk) << r.message;
  expect_sums(r);
}

TEST(WorkerProcess, GarbageOnStdoutIsABadOutputWithAClearMessage) {
  const FakeWorker fake(kHandshake + "echo 'this is not json'\nsleep 30\n");
  auto w = fake_executor(fake);
  const CallRecord r = run_with(*w, "good_add", call_options());
  EXPECT_EQ(r.status, CallStatus::kBadOutput);
  EXPECT_TRUE(contains(r.message,
                       "worker protocol violation: a reply line is not JSON: "
                       "'this is not json'"))
      << r.message;
  EXPECT_TRUE(contains(r.message, "killed by kcv")) << r.message;
}

TEST(WorkerProcess, AResultForAnotherCallIsAProtocolViolation) {
  const FakeWorker fake(kHandshake + "echo '{\"type\":\"result\",\"id\":999,\"status\":\"ok\"}'\n");
  const CallRecord r = run_with(*fake_executor(fake), "good_add", call_options());
  EXPECT_EQ(r.status, CallStatus::kBadOutput);
  EXPECT_TRUE(contains(r.message, "a result for no call in flight")) << r.message;
}

TEST(WorkerProcess, AWorkerDyingAtStartupQuotesItsStderr) {
  const FakeWorker fake("echo 'cannot import torch' >&2\nexit 4\n");
  auto w = fake_executor(fake);
  auto started = w->start();
  ASSERT_FALSE(started.has_value());
  EXPECT_TRUE(contains(started.error().message, "hello")) << started.error().message;
  EXPECT_TRUE(contains(started.error().message, "exit code 4")) << started.error().message;
  EXPECT_TRUE(contains(started.error().message, "cannot import torch")) << started.error().message;
  const CallRecord r = run_with(*w, "good_add", call_options());
  EXPECT_EQ(r.status, CallStatus::kCrash);
  EXPECT_TRUE(contains(r.message, "the worker could not be started")) << r.message;
}

TEST(WorkerProcess, AMissingWorkerProgramIsAClearError) {
  WorkerOptions opt = worker_options("good_add");
  opt.command = {"/nonexistent/kcv-worker"};
  auto started = make_worker_executor(opt)->start();
  ASSERT_FALSE(started.has_value());
  EXPECT_TRUE(contains(started.error().message, "cannot run the worker '/nonexistent/kcv-worker'"))
      << started.error().message;
}

TEST(WorkerProcess, StartNamesTheKernelTheWorkerLoaded) {
  auto info = make_worker_executor(worker_options("good_add"))->start();
  ASSERT_TRUE(info.has_value()) << info.error().to_string();
  EXPECT_EQ(info->name, "good_add");
  EXPECT_EQ(info->op, "add");
  EXPECT_TRUE(info->concurrent_calls);
  ASSERT_TRUE(info->device_code.has_value());
  EXPECT_TRUE(contains(*info->device_code, "static_smem_sm_90a.ptxas.log"));
}

TEST(WorkerProcess, ALoadErrorIsReportedWithTheWorkersMessage) {
  WorkerOptions opt = worker_options("good_add");
  opt.load.kernel = "no_such_kernel";
  auto started = make_worker_executor(opt)->start();
  ASSERT_FALSE(started.has_value());
  EXPECT_TRUE(contains(started.error().message, "has no kernel named 'no_such_kernel'"))
      << started.error().message;
}

// A load the worker refuses but survives (a shape the problem rejects) keeps the process when
// the reply says "reusable": the next load goes to it, and its calls run there.
TEST(WorkerProcess, AReusableLoadErrorKeepsTheWorkerForTheNextLoad) {
  const FakeWorker fake(
      "read line; echo '{\"type\":\"hello\",\"protocol\":1}'\n"
      "read line; echo '{\"type\":\"error\",\"class\":\"problem_error\","
      "\"message\":\"problem_error: not this shape\",\"reusable\":true}'\n"
      "read line; echo '{\"type\":\"loaded\",\"name\":\"good_add\",\"op\":\"add\"}'\n"
      "read line; echo '{\"type\":\"result\",\"id\":1,\"status\":\"ok\"}'\n"
      "read line\n");
  auto w = fake_executor(fake);
  auto refused = w->start();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().worker_class, "problem_error");
  EXPECT_TRUE(refused.error().worker_reusable);
  auto loaded = w->reload(worker_options("good_add").load);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().to_string();
  EXPECT_EQ(run_with(*w, "good_add", call_options()).status, CallStatus::kOk);
  EXPECT_EQ(w->workers_started(), 1);
}

// A failure quotes only what the worker wrote to stderr since its request began: a second
// refused load does not repeat the first one's traceback, nor the first the worker's start-up.
TEST(WorkerProcess, AFailureQuotesOnlyTheStderrOfItsOwnRequest) {
  const std::string refuse =
      "echo '{\"type\":\"error\",\"class\":\"problem_error\","
      "\"message\":\"problem_error: not this shape\",\"reusable\":true}'\n";
  const FakeWorker fake(
      "read line; echo 'warming up' >&2\n"
      "echo '{\"type\":\"hello\",\"protocol\":1}'\n"
      "read line; echo 'first traceback' >&2\n" +
      refuse + "read line; echo 'second traceback' >&2\n" + refuse + "read line\n");
  auto w = fake_executor(fake);
  auto first = w->start();
  ASSERT_FALSE(first.has_value());
  EXPECT_TRUE(contains(first.error().message, "first traceback")) << first.error().message;
  EXPECT_FALSE(contains(first.error().message, "warming up")) << first.error().message;
  auto second = w->reload(worker_options("good_add").load);
  ASSERT_FALSE(second.has_value());
  EXPECT_TRUE(contains(second.error().message, "second traceback")) << second.error().message;
  EXPECT_FALSE(contains(second.error().message, "first traceback")) << second.error().message;
}

// Without "reusable" a failed load ends the process; the next load starts a fresh one.
TEST(WorkerProcess, ALoadErrorWithoutReusableEndsTheWorker) {
  const FakeWorker fake(
      "read line; echo '{\"type\":\"hello\",\"protocol\":1}'\n"
      "read line; echo '{\"type\":\"loaded\",\"name\":\"good_add\",\"op\":\"add\"}'\n"
      "read line; echo '{\"type\":\"error\",\"class\":\"problem_error\","
      "\"message\":\"problem_error: not this shape\"}'\n"
      "sleep 30\n");
  auto w = fake_executor(fake);
  ASSERT_TRUE(w->start().has_value());
  auto refused = w->reload(worker_options("good_add").load);
  ASSERT_FALSE(refused.has_value());
  EXPECT_FALSE(refused.error().worker_reusable);
  EXPECT_TRUE(w->reload(worker_options("good_add").load).has_value());
  EXPECT_EQ(w->workers_started(), 2);
}

// A fake worker's executor whose out-of-memory count is the file `vmstat` beside the script,
// holding `oom_kill 7` at the start; the script writes 8 into it to play the OOM killer.
std::unique_ptr<WorkerExecutor> oom_executor(const FakeWorker& fake) {
  std::ofstream(fake.dir + "/vmstat") << "pgfault 3\noom_kill 7\n";
  WorkerOptions o = worker_options("good_add");
  o.command = {fake.path};
  o.oom_counter_files = {fake.dir + "/missing", fake.dir + "/vmstat"};
  return make_worker_executor(o);
}
const std::string kOomKill = "echo 'oom_kill 8' > \"$(dirname \"$0\")/vmstat\"; kill -9 $$\n";

// The out-of-memory killer's SIGKILL (an oom_kill count rose while the worker lived) is this
// machine's limit: the call is a crash marked killed_out_of_memory, never counted as struck.
TEST(WorkerProcess, AWorkerTheOutOfMemoryKillerTookIsMarkedAndNotStruck) {
  const FakeWorker fake(kHandshake + kOomKill);
  auto w = oom_executor(fake);
  const CallRecord r = run_with(*w, "good_add", call_options());
  EXPECT_EQ(r.status, CallStatus::kCrash);
  EXPECT_TRUE(r.killed_out_of_memory);
  EXPECT_TRUE(contains(r.message, "killed by the out-of-memory killer")) << r.message;
  EXPECT_TRUE(contains(r.message, "rose 7 -> 8")) << r.message;
  EXPECT_EQ(w->workers_struck(), 0);
  EXPECT_EQ(w->workers_out_of_memory(), 1);
}

// The same SIGKILL with no count risen is a signal from outside kcv: struck, not marked.
TEST(WorkerProcess, ASigkillWithoutAnOomKillIsStruck) {
  const FakeWorker fake(kHandshake + "kill -9 $$\n");
  auto w = oom_executor(fake);
  const CallRecord r = run_with(*w, "good_add", call_options());
  EXPECT_EQ(r.status, CallStatus::kCrash);
  EXPECT_FALSE(r.killed_out_of_memory);
  EXPECT_TRUE(contains(r.message, "SIGKILL")) << r.message;
  EXPECT_EQ(w->workers_struck(), 1);
  EXPECT_EQ(w->workers_out_of_memory(), 0);
}

// Taken during its load, the worker's start fails with the out_of_memory cause.
TEST(WorkerProcess, AWorkerTakenDuringItsLoadFailsWithTheOutOfMemoryCause) {
  const FakeWorker fake("read line; echo '{\"type\":\"hello\",\"protocol\":1}'\nread line\n" +
                        kOomKill);
  auto w = oom_executor(fake);
  auto started = w->start();
  ASSERT_FALSE(started.has_value());
  EXPECT_EQ(started.error().worker_cause, kCauseOutOfMemory);
  EXPECT_TRUE(contains(started.error().message, "out-of-memory killer")) << started.error().message;
  EXPECT_EQ(w->workers_struck(), 0);
  EXPECT_EQ(w->workers_out_of_memory(), 1);
}

// Taken after its result, between calls: the next call records it, marked.
TEST(WorkerProcess, AWorkerTakenBetweenCallsMarksTheNextCall) {
  const FakeWorker fake(
      "read line; echo '{\"type\":\"hello\",\"protocol\":1}'\n"
      "read line; echo '{\"type\":\"loaded\",\"name\":\"good_add\",\"op\":\"add\"}'\n"
      "read line; echo '{\"type\":\"result\",\"id\":1,\"status\":\"ok\"}'\n" +
      kOomKill);
  auto w = oom_executor(fake);
  EXPECT_EQ(run_with(*w, "good_add", call_options()).status, CallStatus::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the worker is gone by now
  const CallRecord r = run_with(*w, "good_add", call_options());
  EXPECT_EQ(r.status, CallStatus::kCrash);
  EXPECT_TRUE(r.killed_out_of_memory);
  EXPECT_TRUE(contains(r.message, "out-of-memory killer between calls")) << r.message;
  EXPECT_EQ(w->workers_struck(), 0);
  EXPECT_EQ(w->workers_out_of_memory(), 1);
}

TEST(WorkerProcess, LeavesNoSharedMemoryFilesBehind) {
  char dir[] = "/tmp/kcv-shm-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  WorkerOptions opt = worker_options("add_moody");
  opt.shm_dir = dir;
  auto w = make_worker_executor(opt);
  EXPECT_EQ(run_with(*w, "add_moody", call_options()).status, CallStatus::kOk);
  EXPECT_EQ(run_with(*w, "add_moody", call_options(1)).status, CallStatus::kCrash);
  DIR* d = opendir(dir);
  ASSERT_NE(d, nullptr);
  int entries = 0;
  while (dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 0);
  rmdir(dir);
}

}  // namespace
}  // namespace kcv
