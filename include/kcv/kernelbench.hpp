// File: include/kcv/kernelbench.hpp
// A KernelBench problem (a reference `Model` with `get_inputs`, a candidate `ModelNew`) through
// the one pipeline of kcv/pipeline.hpp. The parts:
//  - ModuleProbes plans each gate from the problem's facts, which the trusted reference worker
//    learns at load (size constants and which function reads them, traced reductions and the
//    constant that sets each length, min/max ops, random draws, repeatability): no op class is
//    guessed from a problem name and no semantics from source text;
//  - ModelOracle draws get_inputs() in the reference worker under the probe's seed and constants,
//    applies the probe's transforms here (value distribution, special values, layout view), and
//    runs Model in fp64 under the profile's semantics plus fp32 eager for the bound;
//  - ModuleRunner calls ModelNew in the candidate worker; the buffer audit is the executor's.
// verify_module runs one corpus row end to end: loads, the reference-shape check (kernel
// statuses), KernelBench's own check (the replica), then every gate under every profile.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kcv/audit.hpp"
#include "kcv/executor.hpp"
#include "kcv/pipeline.hpp"
#include "kcv/worker.hpp"

namespace kcv::kb {

using Constants = std::map<std::string, int64_t>;

// ------------------------------------------------------------------------------------------
// What the reference worker says about a problem (docs/06 §7.1-7.2)

struct SizeConstant {
  std::string name;
  int64_t value = 0;
  bool in_get_inputs = false;  // get_inputs reads it
  bool in_init = false;        // get_init_inputs reads it (a weight's shape)
};

enum class ReductionKind { kSum, kDot, kNorm, kCompare, kScan };
std::string_view reduction_kind_name(ReductionKind k);

struct TracedReduction {
  std::string op;
  ReductionKind kind = ReductionKind::kSum;
  int64_t length = 0;    // terms per output element
  std::string constant;  // the size constant that sets the length; empty: none found
};

struct ProblemFacts {
  std::vector<SizeConstant> constants;
  std::vector<TracedReduction> reductions;
  bool minmax = false;      // an op whose NaN result depends on max/min semantics
  bool stochastic = false;  // random draws in forward
  bool repeatable = true;   // three fp32 forwards bitwise equal
  std::vector<std::string> ops;
  std::vector<uint64_t> trial_seeds;  // KernelBench's five trial seeds
  std::string json;                   // the facts object as the worker sent it
};

struct ModuleArg {
  bool tensor = false;
  DType dtype = DType::kF32;
  Shape shape;
};

struct ModuleProblem {
  std::vector<ModuleArg> inputs;  // get_inputs() items in order; non-tensors stay in the worker
  std::vector<OutputSpec> outputs;
  Constants constants;
  ProblemFacts facts;
  std::string device;  // "cpu" or "cuda"
  bool sized_on_meta = false;

  std::vector<OutputSpec> tensor_inputs() const;
  int64_t io_bytes() const;  // inputs + outputs
};

/// The `problem` of a reference worker's load reply (plus its `device`); an Error names the field.
Expected<ModuleProblem> parse_problem(std::string_view load_reply_json);

// ------------------------------------------------------------------------------------------
// Typed calls (docs/06 §7.3)

enum class TaskKind { kDraw, kForget, kReference64, kReference32, kRun, kDescribe, kStage };
enum class Autocast { kNone, kF16, kBF16 };

struct Task {
  TaskKind kind = TaskKind::kRun;
  uint64_t seed = 0;
  bool keep = false;  // draw
  /// stage: the key the call's inputs are kept under on the reference's device; reference64
  /// and reference32: run on the inputs staged under this key (the call then carries none).
  std::optional<uint64_t> inputs_key;
  bool nan_number = false;               // reference64: maxNum max/min (else NaN propagates)
  bool flush_subnormals = false;         // reference64: FTZ/DAZ at op granularity
  bool cudnn_tf32 = false;               // reference32
  bool matmul_tf32 = false;              // reference32
  Autocast autocast = Autocast::kNone;   // reference32
  int concurrency = 1;                   // run
  int autotune_config = -1;              // run
  bool poison = false;                   // run: the call's sentinel in fresh allocations
  bool zero_fill = false;                // run: zeros in fresh allocations instead (the replica)
  int64_t device_guard = 0;              // run: guard bytes around device input copies
  uint64_t guard_seed = 0;               // run
  std::optional<uint64_t> shuffle_seed;  // run
  bool fresh_inputs = false;             // run: inputs in fresh storage of their own (the replica)
  int64_t device_offset = 0;             // run: bytes past a 256-byte boundary of device copies
};

/// The request's task object; `sentinel_seed` gives the poison patterns (the executor's
/// sentinel of each dtype for that seed, so unwritten elements match its audit).
std::string task_json(const Task& task, uint64_t sentinel_seed);

// ------------------------------------------------------------------------------------------
// The kernel's workers

struct WorkerSetup {
  std::vector<std::string> command;  // argv of `python -m kcv.worker`
  /// argv of the reference's workers; empty: `command`. Separate so that a warm parent of
  /// candidate workers (kcv.worker.forkserver) is never the parent of a trusted one.
  std::vector<std::string> reference_command;
  /// Where the candidate's per-call shared-memory files live; empty: /dev/shm. A sandboxed
  /// candidate sees this directory only, never the reference's call files.
  std::string candidate_shm_dir;
  /// Where the reference's call files live; empty: /dev/shm (a tmpfs with huge pages makes
  /// them in a sixth of the time, docs/08_audit.md §6 "Call files").
  std::string reference_shm_dir;
  std::string reference_code;
  std::string candidate_code;
  std::string device = "auto";
  std::string cache_dir;
  std::string name;    // the row id (echoed by the worker)
  uint64_t seed = 42;  // the load seed (model init, the load's own draw)
  int64_t memory_limit_bytes = 0;
  int load_timeout_ms = 900000;
  int64_t size_on_meta_over = 0;  // reference loads: size on meta over this many bytes
  /// Load requests of another kind (a JSON object each; kcv.verify's "pickle" loads, docs/06
  /// §7.5); empty: kernelbench loads made from the codes above.
  std::string reference_load_json;
  std::string candidate_load_json;
};

enum class Role { kReference, kCandidate };

/// A reference worker started and loaded ahead of verify_module, at the judge shape (the audit
/// sizes a problem with it). verify_module adopts it as its judge-shape reference when it was
/// started with the very load request verify_module would send (same setup, same constants), so
/// a problem is loaded, drawn and traced once instead of twice; otherwise it is closed.
class StartedReference {
 public:
  /// Spawns, says hello and loads the reference of `setup` at `constants` (merged over nothing:
  /// they are the judge shape). An Error is the worker's own (a load that fails, a timeout).
  static Expected<StartedReference> start(const WorkerSetup& setup, const Constants& constants);
  StartedReference(StartedReference&&) noexcept;
  StartedReference& operator=(StartedReference&&) noexcept;
  ~StartedReference();

  /// The worker's load reply (JSON text): the problem, its sizes and facts.
  const std::string& load_reply_json() const { return reply_; }
  const Constants& constants() const { return constants_; }

 private:
  friend class ModuleWorkers;
  StartedReference() = default;
  Constants constants_;
  WorkerLoad load_;
  std::unique_ptr<WorkerExecutor> executor_;
  std::string reply_;
};

/// The reference and candidate workers of one kernel: a pair kept at the judge shape and a pair
/// moved between the other shapes by reloading (a warm worker takes another shape in a fraction
/// of a start). Lazily started; a failed load is an Error with the worker's message.
class ModuleWorkers {
 public:
  /// `other_shape_budget` > 0: a reference load at a shape other than the base sizes the problem
  /// on meta and stops there over this many bytes of inputs + outputs (problem().sized_on_meta).
  ModuleWorkers(WorkerSetup setup, Constants base, int64_t other_shape_budget);
  /// Takes `started` as the judge-shape reference when its load request equals the one this
  /// kernel's reference would be started with; true when it did (else `started` is closed).
  bool adopt(StartedReference&& started);
  ~ModuleWorkers();
  ModuleWorkers(const ModuleWorkers&) = delete;
  ModuleWorkers& operator=(const ModuleWorkers&) = delete;

  /// The worker of `role` loaded at `constants` (merged over the base), and its load reply.
  Expected<WorkerExecutor*> worker(Role role, const Constants& constants);
  /// The reference's problem description at `constants` (from its load reply).
  Expected<const ModuleProblem*> problem(const Constants& constants);
  const Constants& base() const { return base_; }
  Constants merged(const Constants& constants) const;
  /// Whether `constants` merged over the base are the judge shape's own.
  bool at_base(const Constants& constants) const { return merged(constants) == merged({}); }
  const WorkerSetup& setup() const { return setup_; }
  int starts() const;  // worker processes started so far (restarts included)
  /// Reference workers that died of a signal kcv did not send, or were stopped, while the
  /// candidate's worker had been started (WorkerExecutor::workers_struck).
  int reference_struck() const;
  /// Workers of either role the out-of-memory killer took (WorkerExecutor::workers_out_of_memory);
  /// without the workers at shapes other than the judge shape when `other_shapes` is false.
  int out_of_memory_kills(bool other_shapes = true) const;
  bool candidate_started() const;
  /// Where the calls of `role`'s workers (both shapes) spent their time so far.
  WorkerCallCosts call_costs(Role role) const;
  /// The loads of `role`'s worker at shapes other than the judge shape so far (a start or a
  /// reload each, failed ones too) and the seconds they took.
  struct ShapeLoads {
    int n = 0;
    double seconds = 0;
  };
  ShapeLoads other_shape_loads(Role role) const;
  /// What the executors check a worker's load reply against (name and op); never called.
  Candidate& stub() { return *stub_; }
  /// The load reply (JSON text) of `role`'s worker at the judge shape; empty before it loaded.
  std::string base_load_reply(Role role) const;

 private:
  struct Slot;
  Slot& slot(Role role, bool at_base);
  WorkerSetup setup_;
  Constants base_;
  int64_t other_shape_budget_ = 0;
  std::unique_ptr<Candidate> stub_;
  std::vector<std::unique_ptr<Slot>>
      slots_;  // [reference base, reference other, candidate base, candidate other]
};

// ------------------------------------------------------------------------------------------
// The error model (docs/08_audit.md §3): tau = u_out |y*| + 4 E, E eager fp32's own error

struct EagerScale {
  double e = 0;             // worst |y32 - y*| over elements finite in both, floored
  int64_t informative = 0;  // elements finite in both and not exact zeros of both
};
/// E of one output from one eager run (y32) against the fp64 value (y*).
EagerScale eager_scale(DType out_dtype, const std::vector<double>& value, const HostTensor& eager);
/// The same, the fp64 value read from a reference64 run's output (an f64 tensor) in place: the
/// pooled scale's runs are read once, with no fp64 copy of an output of up to gigabytes.
/// @pre value64.dtype() is kF64
EagerScale eager_scale(DType out_dtype, const HostTensor& value64, const HostTensor& eager);
/// Fewer informative elements than this: the scale pools the eager runs of more seeds.
inline constexpr int64_t kMinInformative = 32;
inline constexpr double kEagerMultiple = 4.0;
/// The reason no value claim is made, or empty: eager fp32 is off by more than 1/16 of RMS(y*),
/// or 4E is looser than KernelBench's allclose(1e-2, 1e-2) at RMS(y*).
std::string no_claim_reason(double e, double rms_value);

// ------------------------------------------------------------------------------------------
// The pipeline parts

struct ModuleConfig {
  int call_timeout_ms = 120000;
  /// The kernel's deadline (after its loads): no call is given more than what is left of it.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// call_timeout_ms, cut to what is left before the deadline (at least 1 ms).
  int call_budget_ms() const;
  int64_t probe_budget_bytes = int64_t{256} << 20;  // other shapes: inputs + outputs at most this
  bool declared_deterministic = true;               // the row's contract (default: declared)
  std::optional<DType> declared_precision;          // f16 / bf16 accumulation the row declares
  int autotune_configs = 0;                         // the most configs of a candidate's autotuner
  std::string no_concurrency;                       // non-empty: why concurrent calls are not run
  uint64_t forward_seed = 42;                       // torch.manual_seed before every forward
  /// The orchestrator's last run of the kernel (alone, after one that ran out of memory): the
  /// reference or the candidate running out of memory at a shape other than the judge shape
  /// refuses that probe, this machine being too small for it, instead of failing the kernel once
  /// more.
  bool last_attempt = false;
};

class ModuleProbes final : public ProbeSource {
 public:
  ModuleProbes(const ModuleProblem& problem, Constants base, ModuleConfig config);
  const OpSignature& signature() const override { return sig_; }
  std::string not_applicable_reason(GateId id, const Contract& contract) const override;
  std::vector<Probe> plan(GateId id, const Contract& contract, uint64_t seed) const override;
  ProbeScope scope_of(const Probe& probe) const override;
  std::vector<Probe> simplifications(const Probe& failing, const Contract& contract) const override;

 private:
  const ModuleProblem& problem_;
  Constants base_;
  ModuleConfig config_;
  OpSignature sig_;
};

class ModelOracle final : public Oracle {
 public:
  ModelOracle(ModuleWorkers& workers, ModuleConfig config);
  ~ModelOracle() override;
  Expected<ProbeInputs> make_inputs(const Probe& probe) override;
  Expected<SharedOracleResult> evaluate(const Probe& probe, const ProbeInputs& inputs,
                                        const Contract& contract) override;
  /// Whether a reference call or load failed for want of memory (the worker's cause): each such
  /// probe is an error, and the kernel is to be run again with the machine to itself.
  bool out_of_memory_seen() const { return out_of_memory_seen_; }
  /// Where make_inputs spent its seconds so far: the reference's problem at the probe's shape
  /// (a load when the shape changes), the draws (reference calls), the transforms (kcv's side).
  struct InputTimes {
    double problem_s = 0;
    double draw_s = 0;
    int draws = 0;
    double transform_s = 0;
  };
  const InputTimes& input_times() const { return input_times_; }
  /// How many probes read the trusted runs kept from an earlier probe with the same inputs
  /// instead of running the reference again (src/kernelbench/model_oracle.cpp).
  int trusted_runs_reused() const;
  /// How many probes read the pooled scale an earlier probe with the same inputs drew (another
  /// gate's probe of the same trusted key) instead of drawing and running the pool again.
  int pooled_scales_reused() const;

 private:
  struct Cache;
  /// E per output pooled over the eager runs of up to kPoolSeeds more draws of the probe's shape.
  Expected<std::vector<double>> pool_scale(const Probe& probe, const ModuleProblem& problem);
  /// Whether the reference running out of memory refuses the probe (ModuleConfig::last_attempt,
  /// at a shape other than the judge shape) rather than failing the kernel.
  bool refuses_for_memory(bool at_base) const { return config_.last_attempt && !at_base; }
  ModuleWorkers& workers_;
  ModuleConfig config_;
  std::unique_ptr<Cache> cache_;
  bool out_of_memory_seen_ = false;
  InputTimes input_times_;
};

class ModuleRunner final : public CandidateRunner {
 public:
  ModuleRunner(ModuleWorkers& workers, ModuleConfig config);
  std::string_view name() const override { return "kernelbench worker"; }
  ProbeOutcome run(const Probe& probe, const ProbeInputs& inputs,
                   const Contract& contract) override;
  /// The candidate's device code (describe), asked once: the first call's answer is kept, so
  /// verify_module asks right after the replica, whose calls compiled the Triton kernels of the
  /// reference shape, and RES-02's verdict never waits on what the probes leave of the
  /// kernel's time.
  Expected<ResourceFacts> resources() override;
  std::string exhausted() const override;
  int timeouts() const override { return timeouts_; }
  /// Whether a candidate call failed for want of memory (the worker's cause): the machine's
  /// limit at that moment, so the kernel is to be run again with the machine to itself.
  bool out_of_memory_seen() const { return out_of_memory_seen_; }

  /// One plain call (zero-filled buffers and fresh allocations, inputs of their own storage:
  /// KernelBench's own conditions at their most forgiving) for the
  /// replica, with torch.manual_seed(seed) before the forward.
  CallRecord run_plain(const std::vector<HostTensor>& inputs,
                       const std::vector<OutputSpec>& outputs, uint64_t seed);

 private:
  CallRecord call(WorkerExecutor& w, const ProbeInputs& inputs,
                  const std::vector<OutputSpec>& outputs, const Task& task, CallOptions options);
  /// Why `outcome`'s probe does not count (ProbeOutcome::refused): a call out of memory at a
  /// shape other than the judge shape on the kernel's last attempt. Empty otherwise, and any
  /// call out of memory is then the machine's limit at that moment (out_of_memory_seen).
  std::string memory_refusal(const Probe& probe, const ProbeOutcome& outcome);
  /// On the kernel's last attempt, at a shape other than the judge shape.
  bool refuses_for_memory(const Probe& probe) const;
  ProbeOutcome run_calls(const Probe& probe, const ProbeInputs& inputs,
                         const Expected<WorkerExecutor*>& w);
  Expected<ResourceFacts> describe_resources();
  ModuleWorkers& workers_;
  ModuleConfig config_;
  int timeouts_ = 0;
  bool out_of_memory_seen_ = false;
  uint64_t calls_ = 0;
  std::optional<Expected<ResourceFacts>> resources_;
};

// ------------------------------------------------------------------------------------------
// One corpus row

struct ModuleRow {
  std::string id;
  std::string reference_code;
  std::string candidate_code;
  std::string reference_load_json;  // instead of the codes: load requests of another kind
  std::string candidate_load_json;
  /// The row's declared contract (docs/01: "deterministic", "profile", "accumulator", "budgets",
  /// "arch"); absent: deterministic where the reference is, strict, fp32 accumulation, no budgets.
  /// Every profile is judged whatever it declares; an accumulator of f16/bf16 is the precision the
  /// declared result is simulated in.
  std::optional<Contract> contract;
};

struct ModuleRunOptions {
  WorkerSetup workers;              // command, device, cache, limits (codes and name: from the row)
  Constants base;                   // the judge shape (a reduced shape), empty: the reference's
  std::vector<ProfileId> profiles;  // empty: all five
  uint64_t seed = 0x6b6376;
  int call_timeout_ms = 120000;
  int64_t kernel_timeout_ms = 900000;  // after the loads
  int64_t probe_budget_bytes = int64_t{256} << 20;
  bool shrink = true;
  bool last_attempt = false;  // ModuleConfig::last_attempt
  std::function<void(std::string_view)> progress;
};

struct ModuleOutcome {
  audit::KernelOutcome outcome;  // status, message, replica verdict, verdict records
  ModuleProblem problem;         // as the reference described it (facts included)
  // seconds: load, replica, gates, total; build, build_cached and build_compiled (0 or 1) when
  // the candidate's load ran torch's JIT builds (load / load_inline): their seconds, inside
  // load's
  std::map<std::string, double> timings;
  bool out_of_memory = false;  // a harness error the orchestrator retries alone
};

/// `reference`: a judge-shape reference already started (StartedReference), adopted when its
/// load is the one the kernel's reference would get; timings then say "reference_adopted": 1.
ModuleOutcome verify_module(const ModuleRow& row, const ModuleRunOptions& options,
                            std::optional<StartedReference> reference = std::nullopt);

/// `kcv replay` of an audit failure: the recorded probe run once more on `row` under the
/// recorded profile, and whether it fails the same way (the same finding, and for a value the
/// same element with the same candidate bits).
struct ReplayOutcome {
  GateResult result;
  bool reproduced = false;  // fails with the recorded finding at the recorded element
  std::string detail;       // what differs, when it does not reproduce
};
Expected<ReplayOutcome> replay_verdict(const ModuleRow& row, const audit::VerdictRecord& recorded,
                                       const ModuleRunOptions& options);

}  // namespace kcv::kb
