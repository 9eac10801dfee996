// File: tests/unit/kernelbench/task_test.cpp
// Typed tasks serialise to the request's task object with exactly their kind's fields, and a
// run's poison patterns are the executor's sentinels for the call (so its audit sees them).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

using nlohmann::json;

TEST(Task, Reference64CarriesItsSemanticsOnly) {
  Task t;
  t.kind = TaskKind::kReference64;
  t.seed = 7;
  t.nan_number = true;
  const json j = json::parse(task_json(t, 0));
  EXPECT_EQ(
      j, (json{{"kind", "reference64"}, {"seed", 7}, {"nan", "number"}, {"subnormals", "keep"}}));
}

TEST(Task, RunPoisonIsTheCallsSentinel) {
  Task t;
  t.kind = TaskKind::kRun;
  t.poison = true;
  const json j = json::parse(task_json(t, 1234));
  EXPECT_EQ(j["poison"]["f32"].get<uint64_t>(), sentinel_bits(DType::kF32, 1234));
  EXPECT_EQ(j["poison"]["bf16"].get<uint64_t>(), sentinel_bits(DType::kBF16, 1234));
  EXPECT_FALSE(j.contains("shuffle_seed"));
  EXPECT_EQ(j["autotune_config"], -1);
}

TEST(Task, DescribeHasNoFields) {
  Task t;
  t.kind = TaskKind::kDescribe;
  EXPECT_EQ(json::parse(task_json(t, 0)), (json{{"kind", "describe"}}));
}

TEST(Task, Reference32NamesItsAutocast) {
  Task t;
  t.kind = TaskKind::kReference32;
  t.cudnn_tf32 = true;
  t.autocast = Autocast::kBF16;
  const json j = json::parse(task_json(t, 0));
  EXPECT_EQ(j["autocast"], "bf16");
  EXPECT_EQ(j["cudnn_tf32"], true);
  EXPECT_EQ(j["matmul_tf32"], false);
}

}  // namespace
}  // namespace kcv::kb
