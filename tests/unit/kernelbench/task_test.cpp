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

TEST(Task, StageCarriesItsKeyAndReferenceRunsNameIt) {
  Task stage;
  stage.kind = TaskKind::kStage;
  stage.inputs_key = 42;
  EXPECT_EQ(json::parse(task_json(stage, 0)), (json{{"kind", "stage"}, {"key", 42}}));
  Task r64;
  r64.kind = TaskKind::kReference64;
  EXPECT_FALSE(json::parse(task_json(r64, 0)).contains("inputs_key"));
  r64.inputs_key = 42;
  EXPECT_EQ(json::parse(task_json(r64, 0))["inputs_key"], 42);
  Task r32;
  r32.kind = TaskKind::kReference32;
  r32.inputs_key = 43;
  EXPECT_EQ(json::parse(task_json(r32, 0))["inputs_key"], 43);
}

}  // namespace
}  // namespace kcv::kb
