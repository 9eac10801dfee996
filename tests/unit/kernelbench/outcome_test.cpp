// File: tests/unit/kernelbench/outcome_test.cpp
// A call's environment cause is read from the worker's reply (its "cause" field, docs/06 §7.1),
// never from the words of its message: out of memory and a CUDA device the worker cannot see.
#include "kernelbench/outcome.hpp"

#include <gtest/gtest.h>

namespace kcv::kb {
namespace {

CallRecord replied(std::string reply, std::string message = "the kernel threw: RuntimeError") {
  CallRecord c;
  c.status = CallStatus::kException;
  c.message = std::move(message);
  c.worker_reply = std::move(reply);
  return c;
}

TEST(Outcome, OutOfMemoryIsTheRepliesCause) {
  EXPECT_TRUE(out_of_memory(replied(R"({"status":"exception","cause":"out_of_memory"})")));
  EXPECT_FALSE(needs_a_gpu(replied(R"({"status":"exception","cause":"out_of_memory"})")));
  EXPECT_TRUE(needs_a_gpu(replied(R"({"status":"exception","cause":"cuda_unavailable"})")));
  EXPECT_FALSE(out_of_memory(replied(R"({"status":"exception","cause":"cuda_unavailable"})")));
}

TEST(Outcome, MessageWordsAreNoCause) {
  const CallRecord says = replied(R"({"status":"exception"})",
                                  "the kernel threw: RuntimeError: CUDA error: out of memory");
  EXPECT_FALSE(out_of_memory(says));
  EXPECT_FALSE(needs_a_gpu(says));
  EXPECT_FALSE(out_of_memory(replied("")));  // no reply (the worker died)
  EXPECT_FALSE(out_of_memory(replied("not json")));
  EXPECT_FALSE(out_of_memory(replied(R"(["out_of_memory"])")));
}

TEST(Outcome, ALoadFailuresOutOfMemoryIsItsCause) {
  Error e = make_error(ErrorCode::kCandidate, "the worker reported an error: problem_error: ...");
  EXPECT_FALSE(out_of_memory(e));
  e.worker_cause = "out_of_memory";
  EXPECT_TRUE(out_of_memory(e));
  EXPECT_FALSE(needs_a_gpu(e));
}

}  // namespace
}  // namespace kcv::kb
