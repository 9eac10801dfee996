// File: tests/unit/worker/kept_call_file_test.cpp
// CallOptions::keep_call_file: a trusted worker's calls, one after another, share one call file.
// Each call still gives the in-process executor's outputs and audit (no output of the call before
// shows through; the output guards are checked on every call), except that its outputs are not
// poisoned, so an unwritten element is not looked for; the file takes calls of other sizes, and
// it is the only file the executor leaves while it lives, and goes with it. A fresh call's file
// is made ahead, once the call before it is over, and taken when the call fits in it.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "worker_test_util.hpp"

namespace kcv {
namespace {

using namespace kcv::testing;

CallOptions kept_options() {
  CallOptions o = call_options();
  o.keep_call_file = true;
  return o;
}

// add_inputs() plus `offset` on x (exact in f32), dense or with x's rows padded behind a storage
// offset (a larger raw buffer, so a larger call file).
std::vector<HostTensor> inputs_with(double offset, bool padded) {
  std::vector<HostTensor> in = add_inputs();
  HostTensor x = padded ? HostTensor(DType::kF32, kShape, {64, 1}, 5) : in[0];
  for (int64_t i = 0; i < kN; ++i) x.set_value_at(i, in[0].value_at(i) + offset);
  return {x, in[1]};
}

int files_in(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

struct ShmDir {
  std::string path;
  ShmDir() {
    char dir[] = "/tmp/kcv-kept-XXXXXX";
    path = mkdtemp(dir) != nullptr ? dir : "";
  }
  ~ShmDir() {
    if (!path.empty()) rmdir(path.c_str());
  }
};

// The worker executor of `kernel` with its call files in `shm`.
std::unique_ptr<WorkerExecutor> executor_in(const ShmDir& shm, const std::string& kernel) {
  WorkerOptions opt = worker_options(kernel);
  opt.shm_dir = shm.path;
  return make_worker_executor(opt);
}

// A call of good_add: x + `offset`, large (x's rows padded) or small, at an address shift.
struct SizedCall {
  double offset;
  bool padded;
  int64_t shift;
};

// `there`'s call `k` under `o` gives the in-process executor's record (x + 0.25 at element 0).
void expect_in_process_record(Candidate& c, WorkerExecutor& there, const SizedCall& k,
                              CallOptions o) {
  o.address_shift = k.shift;
  const std::vector<HostTensor> in = inputs_with(k.offset, k.padded);
  const CallRecord want = make_in_process_executor()->run(c, in, kOut, o);
  const CallRecord got = there.run(c, in, kOut, o);
  ASSERT_EQ(got.status, CallStatus::kOk) << got.message;
  EXPECT_EQ(got.outputs[0].value_at(0), k.offset + 0.25);
  EXPECT_TRUE(got.all_written);
  expect_same(want, got);
}

TEST(KeptCallFile, EveryCallGivesTheInProcessRecordWhateverTheSizeBefore) {
  ShmDir shm;
  ASSERT_FALSE(shm.path.empty());
  auto c = load_here("good_add");
  ASSERT_NE(c, nullptr);
  auto there = executor_in(shm, "good_add");
  // large, small, large and shifted, small: the outputs differ from one call to the next
  for (const SizedCall& k : {SizedCall{0, true, 0}, SizedCall{100, false, 0},
                             SizedCall{200, true, 16}, SizedCall{300, false, 0}}) {
    expect_in_process_record(*c, *there, k, kept_options());
    EXPECT_EQ(files_in(shm.path), 1) << "the kept file, and no other";
  }
  EXPECT_EQ(there->workers_started(), 1);
  there.reset();
  EXPECT_EQ(files_in(shm.path), 0);
}

TEST(KeptCallFile, ACallWithoutItGetsAFreshFileAndLeavesTheKeptOne) {
  ShmDir shm;
  ASSERT_FALSE(shm.path.empty());
  auto c = load_here("good_add");
  ASSERT_NE(c, nullptr);
  auto w = executor_in(shm, "good_add");
  EXPECT_EQ(w->run(*c, add_inputs(), kOut, kept_options()).status, CallStatus::kOk);
  const CallRecord fresh = w->run(*c, add_inputs(), kOut, call_options());
  EXPECT_EQ(fresh.status, CallStatus::kOk) << fresh.message;
  expect_sums(fresh);
  EXPECT_LE(files_in(shm.path), 2) << "the kept file and the next fresh call's, made ahead";
  const CallRecord again = w->run(*c, add_inputs(), kOut, kept_options());
  EXPECT_EQ(again.status, CallStatus::kOk) << again.message;
  expect_sums(again);
  EXPECT_LE(files_in(shm.path), 2);
  EXPECT_EQ(w->call_costs().files_ahead, 0);
  w.reset();
  EXPECT_EQ(files_in(shm.path), 0);
}

TEST(FreshCallFile, IsMadeAheadAndTakenWhenTheCallFitsInIt) {
  ShmDir shm;
  ASSERT_FALSE(shm.path.empty());
  auto c = load_here("good_add");
  ASSERT_NE(c, nullptr);
  auto there = executor_in(shm, "good_add");
  // small (made then), small (ahead), large shifted (made then: it does not fit), large (ahead:
  // it fits, 16 bytes short of the shifted layout), small (ahead: it fits in the large file)
  for (const SizedCall& k :
       {SizedCall{0, false, 0}, SizedCall{100, false, 0}, SizedCall{200, true, 16},
        SizedCall{300, true, 0}, SizedCall{400, false, 0}}) {
    expect_in_process_record(*c, *there, k, call_options());
    EXPECT_LE(files_in(shm.path), 1) << "the next call's file, made ahead, and no other";
  }
  EXPECT_EQ(there->call_costs().files_ahead, 3);
  EXPECT_EQ(there->call_costs().calls, 5);
  there.reset();
  EXPECT_EQ(files_in(shm.path), 0);
}

TEST(FreshCallFile, AFileMadeAheadIsNeverOneAWorkerHasSeen) {
  // A call that writes one past its output leaves the stray byte in its own file only: the next
  // call's file, made ahead, holds its own guards, so each call's audit sees its own write.
  ShmDir shm;
  ASSERT_FALSE(shm.path.empty());
  auto c = load_here("add_write_past_end");
  ASSERT_NE(c, nullptr);
  auto w = executor_in(shm, "add_write_past_end");
  auto here = make_in_process_executor();
  for (int call = 0; call < 3; ++call) {
    const CallRecord want = here->run(*c, add_inputs(), kOut, call_options());
    const CallRecord got = w->run(*c, add_inputs(), kOut, call_options());
    EXPECT_FALSE(got.guards_intact) << call;
    expect_same(want, got);
  }
  EXPECT_EQ(w->call_costs().files_ahead, 2);
}

TEST(KeptCallFile, AWriteOnePastTheOutputIsSeenOnEveryCall) {
  // The first call's stray write stays in the kept file; the second call's guards are copied in
  // afresh, so its own write is what the audit sees, at the same byte.
  auto c = load_here("add_write_past_end");
  ASSERT_NE(c, nullptr);
  auto w = make_worker_executor(worker_options("add_write_past_end"));
  auto here = make_in_process_executor();
  for (int call = 0; call < 2; ++call) {
    const CallRecord want = here->run(*c, add_inputs(), kOut, kept_options());
    const CallRecord got = w->run(*c, add_inputs(), kOut, kept_options());
    EXPECT_FALSE(got.guards_intact) << call;
    EXPECT_EQ(got.first_guard_violation, kN * static_cast<int64_t>(sizeof(float))) << call;
    expect_same(want, got);
  }
}

TEST(KeptCallFile, OutputsAreNotPoisonedSoAnUnwrittenElementIsNotLookedFor) {
  // The in-process run of the same kernel sees the unwritten last element; a kept call's output
  // holds what the file held there (the call before wrote it), and no unwritten element is
  // reported: the option is for a worker that writes every element.
  auto c = load_here("add_skip_last");
  ASSERT_NE(c, nullptr);
  const CallRecord here = make_in_process_executor()->run(*c, add_inputs(), kOut, kept_options());
  EXPECT_FALSE(here.all_written);
  auto w = make_worker_executor(worker_options("add_skip_last"));
  const CallRecord got = w->run(*c, add_inputs(), kOut, kept_options());
  EXPECT_EQ(got.status, CallStatus::kOk) << got.message;
  EXPECT_TRUE(got.all_written);
  EXPECT_TRUE(got.guards_intact);
  for (int64_t i = 0; i + 1 < kN; ++i)
    EXPECT_EQ(got.outputs[0].value_at(i), 3.0 * static_cast<double>(i) + 0.25) << i;
}

}  // namespace
}  // namespace kcv
