// File: src/kernelbench/module_runner.cpp
// ModuleRunner: a probe's calls of ModelNew in the candidate worker at the probe's shape. Every
// gate call poisons the candidate's fresh allocations with the call's sentinel (so an output
// element it never writes comes back as the sentinel the executor's audit looks for) and guards
// its device input copies; repetitions sit at shifted host addresses and, on the device, behind
// a fresh block of random bytes. Concurrent calls are one request whose outputs hold one copy per
// run, split here into one record per run. A candidate that does not load at a shape where the
// reference does fails every call there (shape specialisation is a finding, not a refusal).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "kcv/kernelbench.hpp"
#include "kcv/op_pipeline.hpp"
#include "kernelbench/calls.hpp"
#include "kernelbench/outcome.hpp"

namespace kcv::kb {
namespace {

constexpr int64_t kDeviceGuardBytes = 256;
// Where ORD-02's repetitions put the device copies of their inputs, in bytes past a 256-byte
// boundary (run task device_offset): 16-byte steps keep every vectorised access legal, and the
// reference's repeatability fact is taken at offsets of the same two alignment classes (0 and
// 16 bytes), so a kernel whose result follows its input's address fails where the reference
// does not.
constexpr std::array<int64_t, 4> kDeviceOffsets = {0, 16, 48, 112};
constexpr int kMaxTimeouts = 2;
// A probe refused on the kernel's last attempt: the candidate needs more memory at its shape
// than this machine has beside the reference's worker (ModuleConfig::last_attempt).
const std::string kTooLargeHere =
    "the candidate runs out of this machine's memory at this shape with nothing beside it but "
    "the reference: ";

uint64_t token_hash(const Probe& p) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the token: stable across machines
  for (char ch : probe_to_token(p)) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  return h;
}

CallRecord not_loaded(const std::string& why) {
  CallRecord r;
  r.status = CallStatus::kException;
  r.message = "the candidate does not load at this shape, where the reference does: " + why;
  return r;
}

// Device guard reports of the worker's reply (docs/06 §7.3) folded into the record.
void note_device_guards(CallRecord& rec) {
  if (rec.worker_reply.empty()) return;
  const nlohmann::json reply = nlohmann::json::parse(rec.worker_reply, nullptr, false);
  if (reply.is_discarded() || !reply.contains("device_guards") ||
      !reply["device_guards"].is_array())
    return;
  for (const auto& g : reply["device_guards"]) {
    if (!g.is_object()) continue;
    const int64_t input = g.value("input", int64_t{-1});
    const int64_t first = g.value("first", int64_t{0});
    if (rec.guards_intact) rec.first_guard_violation = first;
    rec.guards_intact = false;
    rec.message += fmt::format(
        "{}the device guard band of input {} was written (byte {}; reported by the "
        "candidate's worker)",
        rec.message.empty() ? "" : "; ", input, first);
  }
}

// One record per concurrent run: run j's outputs are copy j of the outputs.
std::vector<CallRecord> split_concurrent(CallRecord&& rec, std::size_t runs, std::size_t per_run) {
  std::vector<CallRecord> out;
  for (std::size_t j = 0; j < runs; ++j) {
    CallRecord r;
    r.status = rec.status;
    r.message = rec.message;
    r.launch = rec.launch;
    r.inputs_unchanged = rec.inputs_unchanged;
    r.first_mutated_input_elem = rec.first_mutated_input_elem;
    r.mutated_input = rec.mutated_input;
    r.guards_intact = rec.guards_intact;
    r.first_guard_violation = rec.first_guard_violation;
    r.sentinel = rec.sentinel;
    const auto u = rec.unwritten_output;
    if (!rec.all_written && u >= 0 && static_cast<std::size_t>(u) / per_run == j) {
      r.all_written = false;
      r.unwritten_output = static_cast<int>(static_cast<std::size_t>(u) % per_run);
      r.first_unwritten = rec.first_unwritten;
    }
    for (std::size_t k = 0; k < per_run && j * per_run + k < rec.outputs.size(); ++k) {
      r.outputs.push_back(std::move(rec.outputs[j * per_run + k]));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

ModuleRunner::ModuleRunner(ModuleWorkers& workers, ModuleConfig config)
    : workers_(workers), config_(std::move(config)) {}

std::string ModuleRunner::exhausted() const {
  if (timeouts_ < kMaxTimeouts) return {};
  return fmt::format("the candidate timed out {} times (the limit per call is {} s)", timeouts_,
                     config_.call_timeout_ms / 1000);
}

CallRecord ModuleRunner::call(WorkerExecutor& w, const ProbeInputs& inputs,
                              const std::vector<OutputSpec>& outputs, const Task& task,
                              CallOptions options) {
  options.timeout_ms = config_.call_budget_ms();
  CallRecord rec = call_task(w, workers_.stub(), inputs.tensors, outputs, task, std::move(options));
  if (rec.status == CallStatus::kTimeout) ++timeouts_;
  note_device_guards(rec);
  ++calls_;
  return rec;
}

std::string ModuleRunner::memory_refusal(const Probe& probe, const ProbeOutcome& outcome) {
  const auto short_of_memory =
      std::find_if(outcome.calls.begin(), outcome.calls.end(),
                   [](const CallRecord& rec) { return out_of_memory(rec); });
  if (short_of_memory == outcome.calls.end()) return {};
  if (refuses_for_memory(probe)) return kTooLargeHere + describe_call(*short_of_memory);
  out_of_memory_seen_ = true;
  return {};
}

bool ModuleRunner::refuses_for_memory(const Probe& probe) const {
  return config_.last_attempt && !workers_.at_base(probe.sizes);
}

ProbeOutcome ModuleRunner::run(const Probe& probe, const ProbeInputs& inputs, const Contract&) {
  auto w = workers_.worker(Role::kCandidate, probe.sizes);
  if (!w && out_of_memory(w.error())) {  // the machine's memory, not shape specialisation
    if (refuses_for_memory(probe)) return ProbeOutcome{{}, kTooLargeHere + w.error().message};
    out_of_memory_seen_ = true;
  }
  ProbeOutcome outcome = run_calls(probe, inputs, w);
  outcome.refused = memory_refusal(probe, outcome);
  return outcome;
}

ProbeOutcome ModuleRunner::run_calls(const Probe& probe, const ProbeInputs& inputs,
                                     const Expected<WorkerExecutor*>& w) {
  ProbeOutcome outcome;
  const uint64_t base = token_hash(probe);
  uint64_t k = 0;
  const auto next = [&](int repetition) {
    CallOptions o;
    o.sentinel_seed = mix_seed(base, 2 * k);
    o.guard_seed = mix_seed(base, 2 * k + 1);
    o.randomize_guards = probe.randomize_guards;
    o.address_shift = probe.shift_addresses ? repetition * 16 + 16 : 0;
    Task t;
    t.kind = TaskKind::kRun;
    t.seed = config_.forward_seed;
    t.poison = true;
    t.device_guard = kDeviceGuardBytes;
    t.guard_seed = o.guard_seed;
    if (probe.shift_addresses) {
      t.shuffle_seed = mix_seed(base, 1000 + k);
      t.device_offset =
          kDeviceOffsets[static_cast<std::size_t>(repetition) % kDeviceOffsets.size()];
    }
    ++k;
    return std::pair{o, t};
  };
  if (!w) {
    const int n = std::max(1, probe.repetitions);
    for (int r = 0; r < n; ++r) outcome.calls.push_back(not_loaded(w.error().message));
    return outcome;
  }
  if (!probe.autotune_configs.empty()) {
    for (int config : probe.autotune_configs) {
      auto [o, t] = next(0);
      t.autotune_config = config;
      outcome.calls.push_back(call(**w, inputs, inputs.outputs, t, o));
    }
    return outcome;
  }
  if (probe.concurrency > 1) {
    auto [o, t] = next(0);
    t.concurrency = probe.concurrency;
    std::vector<OutputSpec> repeated;
    for (int j = 0; j < probe.concurrency; ++j)
      repeated.insert(repeated.end(), inputs.outputs.begin(), inputs.outputs.end());
    for (CallRecord& r :
         split_concurrent(call(**w, inputs, repeated, t, o),
                          static_cast<std::size_t>(probe.concurrency), inputs.outputs.size())) {
      outcome.calls.push_back(std::move(r));
    }
    return outcome;
  }
  for (int r = 0; r < std::max(1, probe.repetitions); ++r) {
    auto [o, t] = next(r);
    outcome.calls.push_back(call(**w, inputs, inputs.outputs, t, o));
    if (!exhausted().empty()) break;
  }
  return outcome;
}

CallRecord ModuleRunner::run_plain(const std::vector<HostTensor>& inputs,
                                   const std::vector<OutputSpec>& outputs, uint64_t seed) {
  auto w = workers_.worker(Role::kCandidate, {});
  if (!w) return not_loaded(w.error().message);
  CallOptions o;
  o.plain_buffers = true;
  Task t;
  t.kind = TaskKind::kRun;
  t.seed = seed;
  t.fresh_inputs = true;  // KernelBench hands the candidate tensors of their own
  t.zero_fill = true;     // and, as plain buffers, its own fresh allocations hold zeros
  CallRecord rec = call(**w, ProbeInputs{inputs, outputs, {}}, outputs, t, o);
  out_of_memory_seen_ = out_of_memory_seen_ || out_of_memory(rec);  // the judge shape
  return rec;
}

Expected<ResourceFacts> ModuleRunner::resources() {
  if (!resources_) resources_ = describe_resources();
  return *resources_;
}

Expected<ResourceFacts> ModuleRunner::describe_resources() {
  auto w = workers_.worker(Role::kCandidate, {});
  if (!w) return ResourceFacts{std::nullopt, "the candidate does not load: " + w.error().message};
  Task t;
  t.kind = TaskKind::kDescribe;
  CallOptions o;
  o.timeout_ms = config_.call_budget_ms();
  const CallRecord rec = call_task(**w, workers_.stub(), {}, {}, t, o);
  if (rec.status != CallStatus::kOk) {
    return make_error(
        ErrorCode::kCandidate,
        "the candidate's worker did not describe its device code: " + describe_call(rec));
  }
  const nlohmann::json reply = nlohmann::json::parse(rec.worker_reply, nullptr, false);
  const nlohmann::json code = reply.is_object()
                                  ? reply.value("device_code", nlohmann::json::object())
                                  : nlohmann::json::object();
  ResourceReport report;
  report.format = ResourceFormat::kCuobjdump;
  std::vector<std::string> sources;
  for (const auto& lib : code.value("libraries", nlohmann::json::array())) {
    if (!lib.is_string()) continue;
    auto r = load_resource_report(lib.get<std::string>());
    if (!r) return r.error();
    for (KernelResources& k : r->kernels) report.kernels.push_back(std::move(k));
    sources.push_back(lib.get<std::string>());
  }
  for (const auto& tk : code.value("triton", nlohmann::json::array())) {
    if (!tk.is_object()) continue;
    KernelResources k;
    k.name = tk.value("name", std::string("triton kernel"));
    k.registers = tk.value("n_regs", int64_t{0});
    k.spill_store_bytes = tk.value("n_spills", int64_t{0});
    k.shared_bytes = tk.value("shared", int64_t{0});
    sources.push_back("triton:" + k.name);
    report.kernels.push_back(std::move(k));
    report.format = ResourceFormat::kPtxasLog;  // Triton's metadata knows spills
  }
  if (report.kernels.empty()) {
    return ResourceFacts{
        std::nullopt,
        "no device code: the candidate built no CUDA library and compiled no Triton kernel here "
        "(a PyTorch-level kernel, or a run on the CPU)"};
  }
  report.source = fmt::format("{}", fmt::join(sources, ", "));
  return ResourceFacts{std::move(report), {}};
}

}  // namespace kcv::kb
