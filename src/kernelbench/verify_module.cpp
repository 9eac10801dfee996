// File: src/kernelbench/verify_module.cpp
// One corpus row end to end. The order is the reason-based numbers' order:
//  1. the loads: a reference that does not load is the harness's or the row's problem (its own
//     status), a candidate that does not load is an import/compile error, never a gate failure;
//  2. KernelBench's own check, the replica (five trials at the reference shape, get_inputs' own
//     draws, fp32 eager with PyTorch's default flags, plain zero-filled buffers, allclose
//     1e-2/1e-2); its first call is the reference-shape check: a candidate that raises, crashes,
//     hangs or returns the wrong outputs there gets a kernel status and no gate verdicts;
//  3. every gate under every profile through the pipeline, with shrinking.
// Whatever was judged before a deadline or an exhausted candidate is kept.
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "kcv/kernelbench.hpp"
#include "kcv/replica.hpp"
#include "kernelbench/calls.hpp"
#include "kernelbench/outcome.hpp"

namespace kcv::kb {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kShrinkRuns = 12;
constexpr double kReplicaTol = 1e-2;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Replica {
  std::optional<bool> accepted;
  std::string reason;
  std::optional<audit::KernelStatus> kernel_status;  // the reference-shape check failed
  std::string status_message;
  bool needs_a_gpu = false;    // that failure's cause: a CUDA device this worker cannot see
  bool out_of_memory = false;  // a call of either side failed for want of memory (docs/06 §7.1)
};

audit::KernelStatus status_of_first_call(CallStatus s) {
  switch (s) {
    case CallStatus::kCrash:
      return audit::KernelStatus::kCrash;
    case CallStatus::kTimeout:
      return audit::KernelStatus::kTimeout;
    case CallStatus::kBadOutput:
      return audit::KernelStatus::kBadOutput;
    default:
      return audit::KernelStatus::kRuntimeError;
  }
}

Replica run_replica(ModuleWorkers& workers, ModuleRunner& runner, const ModuleProblem& problem,
                    const ModuleConfig& config) {
  Replica r;
  auto w = workers.worker(Role::kReference, {});
  if (!w) {
    r.reason = "replica not run: " + w.error().message;
    return r;
  }
  CallOptions ref_options;
  ref_options.timeout_ms = config.call_budget_ms();
  ref_options.keep_call_file = true;  // the trusted reference's calls share one call file
  for (std::size_t t = 0; t < problem.facts.trial_seeds.size(); ++t) {
    const uint64_t seed = problem.facts.trial_seeds[t];
    ref_options.timeout_ms = config.call_budget_ms();  // what is left of the kernel's time
    Task draw;
    draw.kind = TaskKind::kDraw;
    draw.seed = seed;
    const CallRecord drawn =
        call_task(**w, workers.stub(), {}, problem.tensor_inputs(), draw, ref_options);
    Task ref;
    ref.kind = TaskKind::kReference32;
    ref.seed = seed;
    ref.cudnn_tf32 = problem.device == "cuda";  // PyTorch's defaults, as KernelBench runs it
    const std::vector<HostTensor> inputs = contiguous_outputs(drawn);
    const CallRecord want =
        drawn.status == CallStatus::kOk
            ? call_task(**w, workers.stub(), inputs, problem.outputs, ref, ref_options)
            : drawn;
    if (want.status != CallStatus::kOk) {
      r.out_of_memory = out_of_memory(want);
      r.reason = fmt::format("replica not run: the reference failed in trial {}: {}", t + 1,
                             describe_call(want));
      return r;
    }
    const CallRecord got = runner.run_plain(inputs, problem.outputs, seed);
    if (got.status != CallStatus::kOk) {
      if (t == 0) {
        r.kernel_status = status_of_first_call(got.status);
        r.status_message = "at the reference shape, on get_inputs' own draw: " + describe_call(got);
        r.needs_a_gpu = needs_a_gpu(got);
      }
      r.out_of_memory = out_of_memory(got);
      r.accepted = false;
      r.reason = fmt::format("trial {}: candidate {}", t + 1, describe_call(got));
      return r;
    }
    double max_diff = 0;
    for (std::size_t o = 0; o < problem.outputs.size(); ++o) {
      const std::vector<double> reference = want.outputs[o].to_f64();
      const std::string why =
          allclose_failure(reference, got.outputs[o], kReplicaTol, kReplicaTol, max_diff);
      if (!why.empty()) {
        r.accepted = false;
        r.reason = fmt::format("trial {}, output {}: {}", t + 1, o, why);
        return r;
      }
    }
  }
  if (problem.facts.trial_seeds.empty()) {
    r.reason = "replica not run: the reference worker reported no trial seeds";
    return r;
  }
  r.accepted = true;
  return r;
}

// Why a candidate's calls are not run concurrently, or empty.
std::string no_concurrency_of(const std::string& candidate_load_reply) {
  const nlohmann::json j = nlohmann::json::parse(candidate_load_reply, nullptr, false);
  if (j.is_object() && j.value("triton_interpret", false) && j.value("triton_kernels", 0) > 0) {
    return "concurrent calls are not run under the Triton interpreter, which is not thread-safe (a "
           "CPU run)";
  }
  return {};
}

int autotune_configs_of(const std::string& candidate_load_reply) {
  const nlohmann::json j = nlohmann::json::parse(candidate_load_reply, nullptr, false);
  int most = 0;
  if (j.is_object() && j.contains("autotuners") && j["autotuners"].is_array()) {
    for (const auto& a : j["autotuners"]) {
      if (!a.is_object() || !a.contains("configs")) continue;
      const auto& c = a["configs"];  // a list of configs (docs/06 §7.4), or their count
      most = std::max(most, c.is_array() ? static_cast<int>(c.size())
                                         : (c.is_number_integer() ? c.get<int>() : 0));
    }
  }
  return most;
}

// The candidate load's JIT builds (its reply's `build`, docs/06 §7): "build", the seconds inside
// torch.utils.cpp_extension.load / load_inline; "build_cached", 1 when its build-cache entry
// was published before the load (every build in place) and 0 when it was not; "build_compiled",
// 1 when the calls compiled (a library written during the load) and 0 when torch found every
// library in place. Nothing when the load made no such call.
void record_build(const std::string& candidate_load_reply, std::map<std::string, double>& timings) {
  const nlohmann::json j = nlohmann::json::parse(candidate_load_reply, nullptr, false);
  if (!j.is_object() || !j.contains("build") || !j["build"].is_object()) return;
  const nlohmann::json& b = j["build"];
  const auto calls = b.find("jit_calls");
  const auto seconds = b.find("jit_s");
  const auto cached = b.find("cached");
  if (calls == b.end() || !calls->is_number_integer() || calls->get<int64_t>() <= 0) return;
  if (seconds == b.end() || !seconds->is_number() || cached == b.end() || !cached->is_boolean())
    return;
  timings["build"] = seconds->get<double>();
  timings["build_cached"] = cached->get<bool>() ? 1.0 : 0.0;
  if (const auto compiled = b.find("compiled"); compiled != b.end() && compiled->is_boolean())
    timings["build_compiled"] = compiled->get<bool>() ? 1.0 : 0.0;
}

std::vector<ProfileId> profiles_or_all(const std::vector<ProfileId>& given) {
  if (!given.empty()) return given;
  std::vector<ProfileId> all;
  for (const Profile& p : all_profiles()) all.push_back(p.id);
  return all;
}

// The gates' time split by step (gates.inputs, gates.candidate, gates.oracle, gates.judge;
// gates.shrink is part of them), the trusted result's seconds the candidate's calls hid
// (gates.oracle_beside, not part of them) and by gate (gate.CMP-01, ...: gates that took no
// time left out).
void record_pipeline_timings(const PipelineTimings& t, std::map<std::string, double>& timings) {
  timings["gates.inputs"] = t.inputs;
  timings["gates.candidate"] = t.candidate;
  timings["gates.oracle"] = t.oracle;
  timings["gates.judge"] = t.judge;
  timings["gates.shrink"] = t.shrink;
  timings["gates.oracle_beside"] = t.oracle_beside;
  for (std::size_t g = 0; g < kAllGates.size(); ++g) {
    if (t.per_gate[g] > 0) timings[fmt::format("gate.{}", gate_code(kAllGates[g]))] = t.per_gate[g];
    if (t.judge_per_gate[g] > 0)
      timings[fmt::format("judge.{}", gate_code(kAllGates[g]))] = t.judge_per_gate[g];
  }
}

// gates.inputs split: inputs.problem (the reference at the probe's shape, loaded when the shape
// changes), inputs.draw (inputs.draws calls of get_inputs()), inputs.transform (kcv's side).
void record_input_times(const ModelOracle::InputTimes& t, std::map<std::string, double>& timings) {
  timings["inputs.problem"] = t.problem_s;
  timings["inputs.draw"] = t.draw_s;
  timings["inputs.draws"] = t.draws;
  timings["inputs.transform"] = t.transform_s;
}

// Where each role's worker calls spent their time, over the whole kernel (the replica's calls
// too): calls.<role>.n, .prepare, .round_trip (of it: .task, the worker's own seconds, and
// .forward, the model's run), .finish, .ahead (calls whose file was made ahead); and its loads at
// other shapes than the judge shape: shapes.<role>.n and .load (seconds; inside gates.inputs for
// the reference, gates.candidate for the candidate).
void record_call_costs(const ModuleWorkers& workers, std::map<std::string, double>& timings) {
  for (const Role role : {Role::kReference, Role::kCandidate}) {
    const std::string role_name = role == Role::kReference ? "reference" : "candidate";
    if (const ModuleWorkers::ShapeLoads l = workers.other_shape_loads(role); l.n > 0) {
      timings["shapes." + role_name + ".n"] = l.n;
      timings["shapes." + role_name + ".load"] = l.seconds;
    }
    const WorkerCallCosts c = workers.call_costs(role);
    if (c.calls == 0) continue;
    const std::string at = "calls." + role_name + ".";
    timings[at + "n"] = static_cast<double>(c.calls);
    timings[at + "prepare"] = c.prepare_s;
    timings[at + "round_trip"] = c.round_trip_s;
    timings[at + "task"] = c.task_s;
    timings[at + "forward"] = c.forward_s;
    timings[at + "finish"] = c.finish_s;
    timings[at + "ahead"] = static_cast<double>(c.files_ahead);
  }
}

}  // namespace

ModuleOutcome verify_module_unguarded(const ModuleRow& row, const ModuleRunOptions& options,
                                      std::optional<StartedReference> reference);

ModuleOutcome verify_module(const ModuleRow& row, const ModuleRunOptions& options,
                            std::optional<StartedReference> reference) {
  // Our own fault must not lose the row: it becomes status error with what went wrong.
  try {
    return verify_module_unguarded(row, options, std::move(reference));
  } catch (const std::exception& e) {
    ModuleOutcome failed;
    failed.outcome.kernel_id = row.id;
    failed.outcome.status = audit::KernelStatus::kError;
    failed.outcome.message = clip(fmt::format("internal error in kcv: {}", e.what()));
    return failed;
  }
}

// A worker of either side that the out-of-memory killer took: the machine's limit at that
// moment, whatever the kernel's calls showed before. The orchestrator runs the kernel again
// alone and records out_of_memory if it happens again; on that last attempt the workers at other
// shapes do not count (ModelOracle and ModuleRunner refused those probes). A candidate that
// struck the trusted reference stays a crash.
void note_out_of_memory_kills(const ModuleWorkers& workers, const ModuleRunOptions& options,
                              ModuleOutcome& result) {
  const int killed = workers.out_of_memory_kills(!options.last_attempt);
  if (killed == 0 || (workers.reference_struck() > 0 && workers.candidate_started())) return;
  audit::KernelOutcome& out = result.outcome;
  result.out_of_memory = true;
  out.status = audit::KernelStatus::kOutOfMemory;
  out.replica_verdict.reset();
  out.message = clip(fmt::format("the out-of-memory killer took {} of the kernel's workers{}{}",
                                 killed, out.message.empty() ? "" : "; ", out.message));
}

ModuleOutcome verify_module_unguarded(const ModuleRow& row, const ModuleRunOptions& options,
                                      std::optional<StartedReference> reference) {
  const auto t0 = Clock::now();
  ModuleOutcome result;
  audit::KernelOutcome& out = result.outcome;
  out.kernel_id = row.id;
  WorkerSetup setup = options.workers;
  setup.reference_code = row.reference_code;
  setup.candidate_code = row.candidate_code;
  setup.reference_load_json = row.reference_load_json;
  setup.candidate_load_json = row.candidate_load_json;
  setup.name = row.id;
  ModuleWorkers workers(setup, options.base, options.probe_budget_bytes);
  if (reference && workers.adopt(std::move(*reference))) result.timings["reference_adopted"] = 1;
  const auto say = [&](std::string_view what) {
    if (options.progress) options.progress(fmt::format("{}: {}", row.id, what));
  };

  say("loading the reference");
  auto problem = workers.problem({});
  if (!problem) {
    out.status = load_failure_status(problem.error(), /*reference=*/true);
    out.message = clip("the reference: " + problem.error().message);
    result.out_of_memory = out_of_memory(problem.error()) || mentions_out_of_memory(out.message);
    note_out_of_memory_kills(workers, options, result);
    return result;
  }
  result.problem = **problem;
  out.facts_json = result.problem.facts.json.empty() ? "{}" : result.problem.facts.json;
  if (result.problem.sized_on_meta) {
    out.status = audit::KernelStatus::kError;
    out.message =
        "the judge shape was only sized on the meta device (a reduced shape must be given)";
    note_out_of_memory_kills(workers, options, result);
    return result;
  }
  say("loading the candidate");
  auto candidate = workers.worker(Role::kCandidate, {});
  result.timings["load"] = seconds_since(t0);
  const bool on_cpu = result.problem.device != "cuda";
  if (!candidate) {
    out.status = load_failure_status(candidate.error(), /*reference=*/false);
    if (on_cpu && needs_a_gpu(candidate.error())) out.status = audit::KernelStatus::kEnvironment;
    out.message = clip("the candidate: " + candidate.error().message);
    // KernelBench's check fails on it too; a worker killed from outside never ran it.
    if (out.status != audit::KernelStatus::kLoadKilled &&
        out.status != audit::KernelStatus::kOutOfMemory)
      out.replica_verdict = "rejected";
    result.out_of_memory = out_of_memory(candidate.error()) || mentions_out_of_memory(out.message);
    note_out_of_memory_kills(workers, options, result);
    return result;
  }

  ModuleConfig config;
  config.call_timeout_ms = options.call_timeout_ms;
  config.probe_budget_bytes = options.probe_budget_bytes;
  const Contract declared = declared_contract(row);
  config.declared_deterministic = declared.deterministic;
  config.declared_precision = declared_precision(declared);
  record_build(workers.base_load_reply(Role::kCandidate), result.timings);
  config.autotune_configs = autotune_configs_of(workers.base_load_reply(Role::kCandidate));
  config.no_concurrency = no_concurrency_of(workers.base_load_reply(Role::kCandidate));
  config.forward_seed = setup.seed;
  config.last_attempt = options.last_attempt;
  // --kernel-timeout covers everything after the loads: the replica too, and no call outlives it.
  config.deadline = Clock::now() + std::chrono::milliseconds(options.kernel_timeout_ms);
  ModuleRunner runner(workers, config);

  say("KernelBench's check");
  const auto t1 = Clock::now();
  const Replica replica = run_replica(workers, runner, result.problem, config);
  result.timings["replica"] = seconds_since(t1);
  if (replica.accepted) (void)runner.resources();  // RES-02's facts, before the probes' clock
  if (replica.accepted) out.replica_verdict = *replica.accepted ? "accepted" : "rejected";
  if (replica.kernel_status) {
    out.status = *replica.kernel_status;
    // A CUDA-only candidate on a machine without a GPU: an environment finding, not the kernel's.
    if (on_cpu && replica.needs_a_gpu) out.status = audit::KernelStatus::kEnvironment;
    out.message = clip(replica.status_message);
    result.out_of_memory = replica.out_of_memory || mentions_out_of_memory(out.message);
    record_call_costs(workers, result.timings);
    result.timings["total"] = seconds_since(t0);
    note_out_of_memory_kills(workers, options, result);
    return result;
  }

  const Contract& contract = declared;
  ModuleProbes source(result.problem, options.base, config);
  ModelOracle oracle(workers, config);
  PipelineOptions po;
  po.seed = options.seed;
  po.profiles = profiles_or_all(options.profiles);
  po.shrink = options.shrink;
  po.shrink_runs = kShrinkRuns;
  po.progress = [&](std::string_view line) { say(line); };
  po.keep_going = [&] { return Clock::now() < config.deadline; };
  // Once the candidate has struck the trusted reference (below), the kernel is a crash whatever
  // the gates find: the probes left would only restart the reference for nothing.
  const auto candidate_struck_reference = [&] {
    return workers.reference_struck() > 0 && workers.candidate_started();
  };
  po.abandon = [&]() -> std::string {
    if (candidate_struck_reference()) return "the candidate struck the trusted reference worker";
    // the kernel is out_of_memory whatever the rest finds, and each probe could take another
    if (workers.out_of_memory_kills(!config.last_attempt) > 0)
      return "the out-of-memory killer took a worker of this kernel";
    // the same for a call or load the allocator refused (at another shape on the last attempt
    // that refuses the probe instead, and sets neither)
    if (runner.out_of_memory_seen() || oracle.out_of_memory_seen())
      return "a call ran out of this machine's memory";
    return {};
  };
  po.evaluate_beside_calls = true;  // the reference's workers beside the candidate's
  const auto t2 = Clock::now();
  const PipelineReport report = run_pipeline(source, oracle, runner, contract, po);
  result.timings["gates"] = seconds_since(t2);
  record_pipeline_timings(report.timings, result.timings);
  record_input_times(oracle.input_times(), result.timings);
  result.timings["oracle.reused"] = oracle.trusted_runs_reused();
  result.timings["oracle.pools_reused"] = oracle.pooled_scales_reused();

  out.verdicts = verdict_records(report, options.base);
  out.op_class = std::string(op_class_name(source.signature().op_class));
  out.determinism_declared = source.not_applicable_reason(GateId::kOrd02, contract).empty();
  std::vector<std::string> notes;
  if (!replica.reason.empty()) notes.push_back("replica: " + replica.reason);
  result.out_of_memory = result.out_of_memory || replica.out_of_memory ||
                         oracle.out_of_memory_seen() || runner.out_of_memory_seen();
  const bool struck = candidate_struck_reference();
  if (!report.stopped.empty()) {
    notes.insert(notes.begin(), "probing stopped: " + report.stopped);
    if (!runner.exhausted().empty()) out.status = audit::KernelStatus::kTimeout;
  }
  if (struck) {
    // The trusted reference does not die of a stray signal or stop by itself: with the
    // candidate's worker running beside it, the candidate is blamed, never the harness.
    out.status = audit::KernelStatus::kCrash;
    out.replica_verdict = "rejected";
    notes.insert(notes.begin(),
                 "the trusted reference worker died of a signal or was stopped while the "
                 "candidate's worker ran: the candidate's doing (docs/10_threat_model.md)");
  }
  out.message = clip(fmt::format("{}", fmt::join(notes, "; ")));
  // A trusted side's error for want of memory; a gate in error because the candidate could not
  // run at some probes (probes_not_run: refused there, on the last attempt) is not one.
  for (const ProfileResults& p : report.profiles) {
    for (const GateResult& r : p.results) {
      result.out_of_memory =
          result.out_of_memory || (r.verdict == Verdict::kError && r.probes_not_run == 0 &&
                                   mentions_out_of_memory(r.reason));
    }
  }
  record_call_costs(workers, result.timings);
  result.timings["total"] = seconds_since(t0);
  note_out_of_memory_kills(workers, options, result);
  return result;
}

}  // namespace kcv::kb
