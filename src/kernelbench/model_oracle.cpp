// File: src/kernelbench/model_oracle.cpp
// ModelOracle: the trusted reference worker draws get_inputs() under the probe's seed and
// constants, the probe's transforms are applied here, and the reference runs Model in fp64
// (the value) and fp32 eager (the bound's scale E, and the declared result PRC judges against).
// The profile decides the semantics:
//  - eager's TF32 flags are the profile's own (tf32_conv for cuDNN, tf32_dot for matmul), and a
//    profile's E is never below strict's: what it sanctions never tightens the bound;
//  - the EXC probes get a second fp64 run as the alternative where the profile permits a
//    relaxation (maxNum max/min where the reference has such ops; FTZ), so either class passes;
//  - a row that declares f16/bf16 accumulation gets eager under autocast as its declared result.
// A reference that raises on a probe's input refuses the probe (a view it does not take); any
// other trusted-side failure is an Error (a harness failure). A probe whose outputs hold fewer
// than kMinInformative informative elements pools E over the eager runs of more seeds, unless its
// gate reads no bound (EXC-01: judge_reads_bound).
// The trusted runs depend on a probe's inputs (seed, shape, distributions, layouts, injections)
// and not on how the candidate is called, so probes of several gates with the same inputs share
// them: the runs of the kernel's first probe (the reference input, which most gates probe first)
// and its draw are kept while other probes run, and a later probe with those inputs reads them
// instead of staging the inputs and running the reference again.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>

#include "gates/parallel.hpp"
#include "kcv/gate.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/op_pipeline.hpp"
#include "kcv/probe.hpp"
#include "kernelbench/calls.hpp"
#include "kernelbench/outcome.hpp"
#include "kernelbench/transforms.hpp"

namespace kcv::kb {
namespace {

constexpr int kPoolSeeds = 7;  // extra draws at most, for a probe with too few informative elements
// A probe refused on the kernel's last attempt: the reference needs more memory at its shape
// than this machine has, with nothing else running (ModuleConfig::last_attempt).
const std::string kTooLargeHere =
    "the reference runs out of this machine's memory at this shape with nothing beside it: ";

struct EagerFlags {
  bool cudnn = false;
  bool matmul = false;
  Autocast autocast = Autocast::kNone;
  bool operator==(const EagerFlags&) const = default;
};

EagerFlags flags_of(const Profile& p, bool on_cpu) {
  if (on_cpu) return {};  // no TF32 on the CPU: the flags-off run stands for every profile
  return EagerFlags{p.tf32_conv, p.tf32_dot, Autocast::kNone};
}

std::vector<OutputSpec> as_f64(const std::vector<OutputSpec>& outputs) {
  std::vector<OutputSpec> out = outputs;
  for (OutputSpec& o : out) {
    if (is_floating(o.dtype)) o.dtype = DType::kF64;
  }
  return out;
}

// The host passes over a probe's outputs (up to hundreds of millions of elements each) on
// threads, each element on its own: the same values as one serial loop.
template <class Body>
void for_each_range(std::size_t n, Body&& body) {
  gates::for_each_chunk(n, gates::chunk_count(n, {}),
                        [&](std::size_t, std::size_t begin, std::size_t end) { body(begin, end); });
}

// t.to_f64(out), a row-major tensor's ranges converted on threads.
void to_f64_on_threads(const HostTensor& t, std::vector<double>& out) {
  if (!t.is_contiguous()) return t.to_f64(out);
  out.resize(static_cast<std::size_t>(t.numel()));
  for_each_range(out.size(), [&](std::size_t begin, std::size_t end) {
    t.to_f64(static_cast<int64_t>(begin), std::span<double>(out.data() + begin, end - begin));
  });
}

double rms_of(const std::vector<double>& v) {
  double sum = 0;
  int64_t n = 0;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    sum += x * x;
    ++n;
  }
  return n == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(n));
}

// What the trusted side runs for a probe: the probe less how the candidate is called (its
// gate, label, repetitions, address shifts, launch and autotune configurations, concurrency,
// guard randomisation), as a token. Probes with one such key have the same inputs and the same
// trusted runs; the gate's own choices (EXC-01's and EXC-02's alternative run) are keyed apart
// within them.
std::string trusted_key(const Probe& probe) {
  Probe p = probe;
  p.gate = GateId::kCmp01;
  p.label.clear();
  p.repetitions = 1;
  p.shift_addresses = false;
  p.launch_configs.clear();
  p.concurrency = 1;
  p.randomize_guards = false;
  p.autotune_configs.clear();
  return probe_to_token(p);
}

// Runs' fp64 arrays are SharedDoubles: a probe's results hold them, not copies of them.
using Values = std::vector<SharedDoubles>;
using Fp64Runs = std::map<std::pair<bool, bool>, Values>;
using EagerRuns = std::map<std::tuple<bool, bool, int>, std::vector<HostTensor>>;
using EagerScales = std::map<std::tuple<bool, bool, int>, std::vector<EagerScale>>;

}  // namespace

// What one probe's trusted runs gave; kept while the pipeline judges the probe's profiles.
struct ModelOracle::Cache {
  std::string token;                            // trusted_key of the probe these runs are of
  Fp64Runs fp64;                                // (nan_number, flush)
  EagerRuns eager;                              // flags
  std::optional<std::vector<double>> pooled_e;  // per output
  // Every pooled E the kernel's probes drew, by trusted key: it depends on the probe's inputs
  // alone (the pool's seeds derive from the probe's), so a later probe of the same key (another
  // gate's) reads it instead of drawing and running the pool again. One double per output each.
  std::map<std::string, std::vector<double>> pooled_by_key;
  int pools_reused = 0;
  // Per eager run: its outputs as fp64 values, and each output's EagerScale against fp64.
  std::map<std::tuple<bool, bool, int>, Values> eager_values;
  EagerScales eager_scales;
  // The result per (profile's eager run, declared eager run, alternative): the profiles judging
  // one probe mostly share one, and each would otherwise walk the same outputs again.
  std::map<std::tuple<int, int, int, bool>, std::shared_ptr<OracleResult>> results;
  std::string refused;
  // Whether this probe's inputs are staged on the reference's device (the stage task, sent at
  // the probe's first run): unset before that run, false when staging failed or was lost.
  std::optional<bool> staged;
  // The last draw (shape, seed): consecutive probes of one shape share it.
  std::optional<std::pair<Constants, uint64_t>> draw_key;
  std::vector<HostTensor> drawn;

  // The first probe's runs (its plain fp64 run, its eager runs and their scales, a refusal)
  // while other probes run: `kept_key` is set by the first probe, the runs are here
  // while another probe's are current and in the fields above while a probe of that key is.
  std::string kept_key;
  bool kept_filled = false;
  Fp64Runs kept_fp64;
  EagerRuns kept_eager;
  EagerScales kept_scales;
  std::string kept_refused;
  // The first draw, likewise: the shape and seed most probes start from.
  std::optional<std::pair<Constants, uint64_t>> kept_draw_key;
  std::vector<HostTensor> kept_drawn;
  bool kept_draw_filled = false;
  // How many probes read kept runs instead of running the reference again.
  int reused = 0;
  // The fp64 arrays of the probe before, for this probe's to reuse (consecutive probes mostly
  // have one shape): a fresh array is faulted in and zeroed by the kernel, which cost more than
  // filling it. They keep their sizes, so an array refilled at the same size is not written twice.
  std::vector<std::vector<double>> spare;

  // A spare array of capacity >= n (the last such), else the last spare, else a new one.
  std::vector<double> take(std::size_t n) {
    if (spare.empty()) return {};
    auto it = std::find_if(spare.rbegin(), spare.rend(),
                           [n](const std::vector<double>& v) { return v.capacity() >= n; });
    const auto at = it != spare.rend() ? std::prev(it.base()) : std::prev(spare.end());
    std::vector<double> v = std::move(*at);
    spare.erase(at);
    return v;
  }
  void keep(std::vector<double>&& v) {
    if (v.capacity() > 0) spare.push_back(std::move(v));
  }
  void keep(std::vector<double>& v) { keep(std::move(v)); }
  // A shared array comes back to `spare` from its last holder only.
  void keep(SharedDoubles& v) { keep(v.release()); }
  // The probe's arrays into `spare`: its runs' values, and its results where no judge holds
  // them any longer (a result still shared keeps its arrays).
  void recycle() {
    for (auto& [key, values] : fp64)
      for (SharedDoubles& v : values) keep(v);
    for (auto& [key, values] : eager_values)
      for (SharedDoubles& v : values) keep(v);
    for (auto& [key, result] : results) {
      if (result.use_count() != 1) continue;
      for (OracleOutput& o : result->outputs) {
        keep(o.value);
        keep(o.tau);
        keep(o.declared);
        keep(o.alternative);
      }
    }
  }
  // The current probe's runs made those of the probe of `key`: the kept runs put aside when the
  // current probe is the kept one, its other arrays recycled, the kept runs taken back when
  // `key` is theirs. The first key ever is the one kept.
  void switch_to(const std::string& key) {
    if (!token.empty() && token == kept_key) {
      if (auto plain = fp64.find({false, false}); plain != fp64.end()) {
        kept_fp64.insert(fp64.extract(plain));  // the alternatives are recycled below
      }
      kept_eager = std::move(eager);
      kept_scales = std::move(eager_scales);
      kept_refused = refused;
      kept_filled = true;
    }
    recycle();
    token = key;
    fp64.clear();
    eager.clear();
    pooled_e.reset();
    eager_values.clear();
    eager_scales.clear();
    results.clear();
    refused.clear();
    staged.reset();
    if (kept_key.empty()) kept_key = key;
    if (key == kept_key && kept_filled) {
      fp64 = std::move(kept_fp64);
      eager = std::move(kept_eager);
      eager_scales = std::move(kept_scales);
      refused = kept_refused;
      kept_fp64.clear();
      kept_eager.clear();
      kept_scales.clear();
      kept_filled = false;
      ++reused;
    }
  }
  // The draw made current for (shape, seed) `key`: true when it is the kept first draw, taken
  // back; false when the caller must draw. The current draw is put aside when it is the kept one.
  bool switch_draw(const std::pair<Constants, uint64_t>& key) {
    if (draw_key && draw_key == kept_draw_key) {
      kept_drawn = std::move(drawn);
      kept_draw_filled = true;
    }
    drawn.clear();
    draw_key.reset();
    if (!kept_draw_key) kept_draw_key = key;
    if (key != *kept_draw_key || !kept_draw_filled) return false;
    drawn = std::move(kept_drawn);
    kept_drawn.clear();
    kept_draw_filled = false;
    draw_key = key;
    return true;
  }
};

ModelOracle::ModelOracle(ModuleWorkers& workers, ModuleConfig config)
    : workers_(workers), config_(std::move(config)), cache_(std::make_unique<Cache>()) {}

ModelOracle::~ModelOracle() = default;

int ModelOracle::trusted_runs_reused() const { return cache_->reused; }

int ModelOracle::pooled_scales_reused() const { return cache_->pools_reused; }

namespace {

CallOptions reference_options(const ModuleConfig& c, uint64_t salt) {
  CallOptions o;
  o.timeout_ms = c.call_budget_ms();
  o.sentinel_seed = mix_seed(0x7265660aULL, salt);
  o.keep_call_file = true;  // the trusted reference's calls share one call file
  return o;
}

}  // namespace

Expected<ProbeInputs> ModelOracle::make_inputs(const Probe& probe) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const bool at_base = workers_.at_base(probe.sizes);
  auto began = Clock::now();
  auto problem = workers_.problem(probe.sizes);
  input_times_.problem_s += seconds_since(began);
  if (!problem) {
    // Out of memory is this machine's limit at this moment, never the reference refusing; on
    // the kernel's last attempt (alone) it is this machine's limit for this shape.
    if (out_of_memory(problem.error()) && refuses_for_memory(at_base))
      return ProbeInputs{{}, {}, kTooLargeHere + problem.error().message};
    out_of_memory_seen_ = out_of_memory_seen_ || out_of_memory(problem.error());
    if (at_base || out_of_memory(problem.error())) return problem.error();
    return ProbeInputs{
        {}, {}, "the reference does not load at this shape: " + problem.error().message};
  }
  const ModuleProblem& p = **problem;
  if (p.sized_on_meta) {
    return ProbeInputs{{},
                       {},
                       fmt::format("inputs + outputs of {:.1f} MiB at this shape exceed the probe "
                                   "budget of {:.0f} MiB",
                                   static_cast<double>(p.io_bytes()) / (1 << 20),
                                   static_cast<double>(config_.probe_budget_bytes) / (1 << 20))};
  }
  const std::pair<Constants, uint64_t> key{workers_.merged(probe.sizes), probe.seed};
  if (cache_->draw_key != key && !cache_->switch_draw(key)) {
    auto w = workers_.worker(Role::kReference, probe.sizes);
    if (!w) return w.error();
    Task draw;
    draw.kind = TaskKind::kDraw;
    draw.seed = probe.seed;
    began = Clock::now();
    CallRecord rec = call_task(**w, workers_.stub(), {}, p.tensor_inputs(), draw,
                               reference_options(config_, probe.seed));
    ++input_times_.draws;
    input_times_.draw_s += seconds_since(began);
    if (rec.status != CallStatus::kOk) {
      const std::string why = "the reference's get_inputs() failed: " + describe_call(rec);
      if (out_of_memory(rec) && refuses_for_memory(at_base))
        return ProbeInputs{{}, {}, kTooLargeHere + why};
      out_of_memory_seen_ = out_of_memory_seen_ || out_of_memory(rec);
      if (at_base || out_of_memory(rec))
        return make_error(ErrorCode::kInternal, why, "reference worker");
      return ProbeInputs{{}, {}, why};
    }
    began = Clock::now();
    cache_->drawn = contiguous_outputs(std::move(rec));
    cache_->draw_key = key;
    input_times_.draw_s += seconds_since(began);
  }
  began = Clock::now();
  ProbeInputs made{transform_inputs(probe, cache_->drawn), p.outputs, {}};
  input_times_.transform_s += seconds_since(began);
  return made;
}

namespace {

// fp64 values of tensors (a reference64 call's outputs: f64 views, exact; an eager run's),
// each into an array of `take(n)`.
template <class Take>
Values values_of(const std::vector<HostTensor>& tensors, Take&& take) {
  Values out;
  for (const HostTensor& t : tensors) {
    std::vector<double> v = take(static_cast<std::size_t>(t.numel()));
    to_f64_on_threads(t, v);
    out.emplace_back(std::move(v));
  }
  return out;
}

}  // namespace

Expected<std::vector<double>> ModelOracle::pool_scale(const Probe& probe, const ModuleProblem& p) {
  auto w = workers_.worker(Role::kReference, probe.sizes);
  if (!w) return w.error();
  std::vector<double> e(p.outputs.size(), 0.0);
  std::vector<int64_t> informative(p.outputs.size(), 0);
  for (int k = 1; k <= kPoolSeeds; ++k) {
    Probe other = probe;
    other.seed = mix_seed(probe.seed, 1000 + static_cast<uint64_t>(k));
    Task draw;
    draw.kind = TaskKind::kDraw;
    draw.seed = other.seed;
    CallRecord drawn = call_task(**w, workers_.stub(), {}, p.tensor_inputs(), draw,
                                 reference_options(config_, other.seed));
    if (drawn.status != CallStatus::kOk) break;  // the probe's own scale stands
    const std::vector<HostTensor> inputs =
        transform_inputs(other, contiguous_outputs(std::move(drawn)));
    Task t64;
    t64.kind = TaskKind::kReference64;
    t64.seed = other.seed;
    const CallRecord r64 = call_task(**w, workers_.stub(), inputs, as_f64(p.outputs), t64,
                                     reference_options(config_, other.seed + 1));
    Task t32;
    t32.kind = TaskKind::kReference32;
    t32.seed = other.seed;
    const CallRecord r32 = call_task(**w, workers_.stub(), inputs, p.outputs, t32,
                                     reference_options(config_, other.seed + 2));
    if (r64.status != CallStatus::kOk || r32.status != CallStatus::kOk) break;
    bool enough = true;
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
      const EagerScale s = eager_scale(p.outputs[o].dtype, r64.outputs[o], r32.outputs[o]);
      e[o] = std::max(e[o], s.e);
      informative[o] += s.informative;
      enough = enough && informative[o] >= kMinInformative;
    }
    if (enough) break;
  }
  return e;
}

Expected<SharedOracleResult> ModelOracle::evaluate(const Probe& probe, const ProbeInputs& inputs,
                                                   const Contract& contract) {
  const std::string token = trusted_key(probe);
  if (cache_->token != token) cache_->switch_to(token);
  if (!cache_->refused.empty()) return share(OracleResult{{}, false, cache_->refused, {}});
  auto w = workers_.worker(Role::kReference, probe.sizes);
  if (!w) return w.error();
  auto problem = workers_.problem(probe.sizes);
  if (!problem) return problem.error();
  const ModuleProblem& p = **problem;
  const bool at_base = workers_.at_base(probe.sizes);
  const bool on_cpu = p.device != "cuda";
  const Profile& prof = profile(contract.profile);
  const bool exc01 = probe.gate == GateId::kExc01, exc02 = probe.gate == GateId::kExc02;
  const bool has_alternative = (exc01 && prof.nan_minmax == NanMinMax::kNumber && p.facts.minmax) ||
                               (exc02 && prof.flush_subnormals);
  const EagerFlags profile_flags = flags_of(prof, on_cpu);
  const auto flags_code = [](const EagerFlags& f) {
    return (f.cudnn ? 1 : 0) | (f.matmul ? 2 : 0) | (static_cast<int>(f.autocast) << 2);
  };
  EagerFlags declared_flags = profile_flags;
  if (config_.declared_precision) {
    declared_flags.autocast =
        *config_.declared_precision == DType::kBF16 ? Autocast::kBF16 : Autocast::kF16;
  }
  // A gate that reads no bound (EXC-01) gets the probe's own E: no pooled scale is drawn for it.
  const bool reads_bound = judge_reads_bound(probe.gate);
  // Everything the result depends on besides the probe: the runs it reads (a memoized result's
  // runs are all cached, so no worker call is skipped that would have been made) and whether its
  // E may pool.
  const std::tuple<int, int, int, bool> result_key{
      flags_code(profile_flags), config_.declared_precision ? flags_code(declared_flags) : -1,
      has_alternative ? (exc01 ? 1 : 0) | (exc02 ? 2 : 0) : -1, reads_bound};
  if (auto it = cache_->results.find(result_key); it != cache_->results.end())
    return SharedOracleResult(it->second);

  // A trusted run of this probe. Its inputs cross to the worker once: the probe's first run
  // stages them on the reference's device (the stage task), and every run names them by key
  // instead of sending them again. A keyed run the worker cannot serve (a restart lost them:
  // bad_output, or it crashed) is sent again with the inputs, as is every run once staging
  // failed.
  const uint64_t stage_key = std::hash<std::string>{}(token);
  const auto reference_call = [&](Task t, const std::vector<OutputSpec>& outs, uint64_t salt) {
    if (!cache_->staged) {
      Task stage;
      stage.kind = TaskKind::kStage;
      stage.inputs_key = stage_key;
      const CallRecord rec = call_task(**w, workers_.stub(), inputs.tensors, {}, stage,
                                       reference_options(config_, probe.seed));
      cache_->staged = rec.status == CallStatus::kOk;
    }
    if (*cache_->staged) {
      t.inputs_key = stage_key;
      CallRecord rec =
          call_task(**w, workers_.stub(), {}, outs, t, reference_options(config_, salt));
      if (rec.status != CallStatus::kBadOutput && rec.status != CallStatus::kCrash) return rec;
      cache_->staged = false;
      t.inputs_key.reset();
    }
    return call_task(**w, workers_.stub(), inputs.tensors, outs, t,
                     reference_options(config_, salt));
  };

  // One fp64 run per semantics, one eager run per flag set; an exception refuses the probe.
  const auto fp64 = [&](bool nan_number, bool flush) -> Expected<const Values*> {
    auto it = cache_->fp64.find({nan_number, flush});
    if (it != cache_->fp64.end()) return &it->second;
    Task t;
    t.kind = TaskKind::kReference64;
    t.seed = probe.seed;
    t.nan_number = nan_number;
    t.flush_subnormals = flush;
    const CallRecord rec = reference_call(t, as_f64(p.outputs), probe.seed + 1);
    if (out_of_memory(rec) && refuses_for_memory(at_base)) {
      cache_->refused = kTooLargeHere + describe_call(rec);
      return nullptr;
    }
    if (out_of_memory(rec)) {  // this machine's limit at this moment, not the probe's
      out_of_memory_seen_ = true;
      return make_error(ErrorCode::kInternal, "reference64: out of memory: " + describe_call(rec),
                        "reference worker");
    }
    if (rec.status == CallStatus::kException || rec.status == CallStatus::kKernelError) {
      cache_->refused = "the reference raises on this input: " + describe_call(rec);
      return nullptr;
    }
    if (rec.status != CallStatus::kOk) {
      return make_error(ErrorCode::kInternal, "reference64: " + describe_call(rec),
                        "reference worker");
    }
    return &cache_->fp64
                .emplace(std::pair{nan_number, flush},
                         values_of(rec.outputs, [&](std::size_t n) { return cache_->take(n); }))
                .first->second;
  };
  const auto eager = [&](EagerFlags f) -> Expected<const std::vector<HostTensor>*> {
    const auto key = std::tuple{f.cudnn, f.matmul, static_cast<int>(f.autocast)};
    auto it = cache_->eager.find(key);
    if (it != cache_->eager.end()) return &it->second;
    Task t;
    t.kind = TaskKind::kReference32;
    t.seed = probe.seed;
    t.cudnn_tf32 = f.cudnn;
    t.matmul_tf32 = f.matmul;
    t.autocast = f.autocast;
    CallRecord rec = reference_call(t, p.outputs, probe.seed + 2);
    if (out_of_memory(rec) && refuses_for_memory(at_base)) {
      cache_->refused = kTooLargeHere + describe_call(rec);
      return nullptr;
    }
    if (out_of_memory(rec)) {
      out_of_memory_seen_ = true;
      return make_error(ErrorCode::kInternal, "reference32: out of memory: " + describe_call(rec),
                        "reference worker");
    }
    if (rec.status == CallStatus::kException || rec.status == CallStatus::kKernelError) {
      cache_->refused = "the reference raises on this input: " + describe_call(rec);
      return nullptr;
    }
    if (rec.status != CallStatus::kOk) {
      return make_error(ErrorCode::kInternal, "reference32: " + describe_call(rec),
                        "reference worker");
    }
    return &cache_->eager.emplace(key, contiguous_outputs(std::move(rec))).first->second;
  };
  const auto refused = [&] { return share(OracleResult{{}, false, cache_->refused, {}}); };

  auto value = fp64(false, false);
  if (!value) return value.error();
  if (*value == nullptr) return refused();
  const EagerFlags strict_flags{};
  auto eager_strict = eager(strict_flags);
  if (!eager_strict) return eager_strict.error();
  if (*eager_strict == nullptr) return refused();
  const std::vector<HostTensor>* eager_profile = *eager_strict;
  if (!(profile_flags == strict_flags)) {
    auto e = eager(profile_flags);
    if (!e) return e.error();
    if (*e == nullptr) return refused();
    eager_profile = *e;
  }
  const std::vector<HostTensor>* eager_declared = nullptr;
  if (config_.declared_precision) {
    auto e = eager(declared_flags);
    if (!e) return e.error();
    if (*e == nullptr) return refused();
    eager_declared = *e;
  }
  const Values* alternative = nullptr;
  if (has_alternative) {
    auto alt = fp64(exc01, exc02);
    if (!alt) return alt.error();
    if (*alt == nullptr) return refused();
    alternative = *alt;
  }

  // E of each output against one eager run, and that run's outputs as fp64 values: once per
  // run and probe, whichever profiles read them.
  const auto key_of = [](const EagerFlags& f) {
    return std::tuple{f.cudnn, f.matmul, static_cast<int>(f.autocast)};
  };
  const auto scales = [&](const EagerFlags& f, const std::vector<HostTensor>& run) {
    auto [it, fresh] = cache_->eager_scales.try_emplace(key_of(f));
    if (fresh) {
      for (std::size_t o = 0; o < p.outputs.size(); ++o)
        it->second.push_back(eager_scale(p.outputs[o].dtype, (**value)[o], run[o]));
    }
    return &it->second;
  };
  const auto values = [&](const EagerFlags& f, const std::vector<HostTensor>& run) {
    auto [it, fresh] = cache_->eager_values.try_emplace(key_of(f));
    if (fresh) it->second = values_of(run, [&](std::size_t n) { return cache_->take(n); });
    return &it->second;
  };
  const std::vector<EagerScale>* strict_scales = scales(strict_flags, **eager_strict);
  const std::vector<EagerScale>* profile_scales = scales(profile_flags, *eager_profile);
  const std::vector<EagerScale>* declared_scales =
      eager_declared != nullptr ? scales(declared_flags, *eager_declared) : nullptr;
  const Values* declared_values = eager_declared != nullptr
                                      ? values(declared_flags, *eager_declared)
                                      : values(profile_flags, *eager_profile);

  OracleResult result;
  for (std::size_t o = 0; o < p.outputs.size(); ++o) {
    const OutputSpec& spec = p.outputs[o];
    OracleOutput out;
    out.dtype = spec.dtype;
    out.shape = spec.shape;
    out.value = (**value)[o];  // shared, not copied
    const EagerScale s = (*strict_scales)[o];
    double e = s.e;
    e = std::max(e, (*profile_scales)[o].e);
    if (declared_scales != nullptr) e = std::max(e, (*declared_scales)[o].e);
    if (reads_bound && s.informative < kMinInformative && is_floating(spec.dtype)) {
      if (!cache_->pooled_e) {
        if (auto known = cache_->pooled_by_key.find(token); known != cache_->pooled_by_key.end()) {
          cache_->pooled_e = known->second;
          ++cache_->pools_reused;
        } else {
          auto pooled = pool_scale(probe, p);
          if (!pooled) return pooled.error();
          cache_->pooled_by_key.emplace(token, *pooled);
          cache_->pooled_e = std::move(*pooled);
        }
      }
      if (o < cache_->pooled_e->size()) e = std::max(e, (*cache_->pooled_e)[o]);
    }
    const double u = unit_roundoff(spec.dtype);
    // Read through const references: a write access to a shared array would copy it.
    const std::vector<double>& y_all = (**value)[o];
    const SharedDoubles& declared_run = (*declared_values)[o];
    const std::vector<double>& declared = declared_run;
    out.tau = cache_->take(y_all.size());
    out.tau.resize(y_all.size());
    // Both runs have the outputs' shapes (kcv allocates them), so n is the output's size and the
    // declared run's array is shared as it is; otherwise its first n elements are copied and
    // the rest are 0.
    const std::size_t n = std::min(y_all.size(), declared.size());
    const bool share_declared = declared.size() == y_all.size();
    std::vector<double> declared_copy;
    if (!share_declared) {
      declared_copy = cache_->take(y_all.size());
      declared_copy.assign(y_all.size(), 0.0);
    }
    const bool floating = is_floating(spec.dtype);
    for_each_range(n, [&](std::size_t begin, std::size_t end) {
      if (!share_declared) {
        std::copy(declared.begin() + static_cast<std::ptrdiff_t>(begin),
                  declared.begin() + static_cast<std::ptrdiff_t>(end),
                  declared_copy.begin() + static_cast<std::ptrdiff_t>(begin));
      }
      for (std::size_t i = begin; i < end; ++i) {
        const double y = y_all[i];
        const double d = declared[i];
        if (!floating || !std::isfinite(y)) {
          out.tau[i] = 0;  // exact: integer outputs, and non-finite values compared by class
        } else if (!std::isfinite(d)) {
          out.tau[i] =
              std::numeric_limits<double>::quiet_NaN();  // fp32 eager overflows here: no claim
        } else {
          out.tau[i] = u * std::fabs(y) + kEagerMultiple * e;
        }
      }
    });
    if (share_declared) {
      out.declared = declared_run;
    } else {
      out.declared = std::move(declared_copy);
    }
    // Elements past n are not judged by value (tau 0), whatever a spare array held there.
    std::fill(out.tau.begin() + static_cast<std::ptrdiff_t>(n), out.tau.end(), 0.0);
    if (alternative != nullptr) out.alternative = (*alternative)[o];
    if (is_floating(spec.dtype) && result.no_value_claim.empty()) {
      result.no_value_claim = no_claim_reason(e, rms_of(out.value));
    }
    result.outputs.push_back(std::move(out));
  }
  return SharedOracleResult(
      cache_->results.emplace(result_key, std::make_shared<OracleResult>(std::move(result)))
          .first->second);
}

}  // namespace kcv::kb
