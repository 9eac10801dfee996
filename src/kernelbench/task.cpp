// File: src/kernelbench/task.cpp
// The typed task of a KernelBench worker call as the request's "task" object (docs/06 §7.3).
// Only the fields of the task's kind are written: the worker refuses fields it does not expect.
#include <nlohmann/json.hpp>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

using nlohmann::json;

std::string_view kind_name(TaskKind k) {
  constexpr std::array<std::string_view, 7> kNames = {
      "draw", "forget", "reference64", "reference32", "run", "describe", "stage"};
  return kNames[static_cast<std::size_t>(k)];
}

std::string_view autocast_name(Autocast a) {
  switch (a) {
    case Autocast::kF16:
      return "f16";
    case Autocast::kBF16:
      return "bf16";
    case Autocast::kNone:
      break;
  }
  return "none";
}

// The sentinel of each dtype the executor poisons outputs with, for the worker's empty tensors.
// zeros: what a fresh allocation holds as KernelBench's check meets it (the replica).
json poison_patterns(uint64_t sentinel_seed, bool zeros) {
  json p = json::object();
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64}) {
    p[std::string(dtype_name(t))] = zeros ? uint64_t{0} : sentinel_bits(t, sentinel_seed);
  }
  return p;
}

}  // namespace

std::string task_json(const Task& t, uint64_t sentinel_seed) {
  json j{{"kind", kind_name(t.kind)}};
  switch (t.kind) {
    case TaskKind::kDraw:
      j["seed"] = t.seed;
      j["keep"] = t.keep;
      break;
    case TaskKind::kForget:
      j["seed"] = t.seed;
      break;
    case TaskKind::kStage:
      j["key"] = t.inputs_key.value_or(0);
      break;
    case TaskKind::kReference64:
      j["seed"] = t.seed;
      if (t.inputs_key) j["inputs_key"] = *t.inputs_key;
      j["nan"] = t.nan_number ? "number" : "propagate";
      j["subnormals"] = t.flush_subnormals ? "flush" : "keep";
      break;
    case TaskKind::kReference32:
      j["seed"] = t.seed;
      if (t.inputs_key) j["inputs_key"] = *t.inputs_key;
      j["cudnn_tf32"] = t.cudnn_tf32;
      j["matmul_tf32"] = t.matmul_tf32;
      j["autocast"] = autocast_name(t.autocast);
      break;
    case TaskKind::kRun:
      j["seed"] = t.seed;
      j["concurrency"] = t.concurrency;
      j["autotune_config"] = t.autotune_config;
      if (t.poison || t.zero_fill) j["poison"] = poison_patterns(sentinel_seed, !t.poison);
      j["device_guard"] = t.device_guard;
      j["guard_seed"] = t.guard_seed;
      if (t.shuffle_seed) j["shuffle_seed"] = *t.shuffle_seed;
      j["fresh_inputs"] = t.fresh_inputs;
      if (t.device_offset != 0) j["device_offset"] = t.device_offset;
      break;
    case TaskKind::kDescribe:
      break;
  }
  return j.dump();
}

}  // namespace kcv::kb
