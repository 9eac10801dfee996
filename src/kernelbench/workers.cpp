// File: src/kernelbench/workers.cpp
// The kernel's worker processes. Four slots: reference and candidate at the judge shape (kept
// loaded for the whole kernel, where most probes run) and reference and candidate for any other
// shape (reloaded from one shape to the next: a warm worker with torch imported and the build
// cached takes a new shape in a fraction of a cold start). A reference load at another shape
// sizes the problem on the meta device first, so a shape over the probe budget is never drawn,
// and where meta cannot size its forward, its models over the budget are never built.
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

WorkerLoad load_for(const WorkerSetup& s, Role role, const Constants& constants,
                    int64_t size_on_meta_over, bool facts, int64_t refuse_models_over = 0) {
  const std::string& given =
      role == Role::kReference ? s.reference_load_json : s.candidate_load_json;
  nlohmann::json j;
  if (!given.empty()) {  // another kind: the caller's request, with the kernel's name
    j = nlohmann::json::parse(given, nullptr, false);
    if (!j.is_object()) j = nlohmann::json::object();
    j["role"] = role == Role::kReference ? "reference" : "candidate";
    j["name"] = s.name;
    j["op"] = "kernelbench";
    if (!s.device.empty()) j["device"] = s.device;
  } else {
    j = nlohmann::json{{"kind", "kernelbench"},
                       {"role", role == Role::kReference ? "reference" : "candidate"},
                       {"reference_code", s.reference_code},
                       {"seed", s.seed},
                       {"device", s.device},
                       {"name", s.name},
                       {"op", "kernelbench"},
                       {"constants", nlohmann::json::object()}};
    if (role == Role::kCandidate) j["candidate_code"] = s.candidate_code;
    if (!s.cache_dir.empty()) j["cache_dir"] = s.cache_dir;
    for (const auto& [name, v] : constants) j["constants"][name] = v;
    if (role == Role::kReference && size_on_meta_over > 0) {
      j["size_on_meta_over"] = size_on_meta_over;
      // A shape whose forward meta cannot size, and whose models alone exceed the budget, is
      // refused before its weights are built for real (docs/06 §7).
      if (refuse_models_over > 0) j["refuse_models_over"] = refuse_models_over;
    }
    if (role == Role::kReference && !facts) j["facts"] = false;  // the judge shape's facts serve
  }
  WorkerLoad load;
  load.kind = j.value("kind", std::string("kernelbench"));
  load.kernel = s.name;
  load.op = "kernelbench";
  load.extra_json = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return load;
}

WorkerOptions options_for(const WorkerSetup& s, Role role, WorkerLoad load) {
  WorkerOptions o;
  o.command =
      role == Role::kReference && !s.reference_command.empty() ? s.reference_command : s.command;
  o.load = std::move(load);
  o.memory_limit_bytes = s.memory_limit_bytes;
  o.startup_timeout_ms = s.load_timeout_ms;
  if (role == Role::kCandidate && !s.candidate_shm_dir.empty()) o.shm_dir = s.candidate_shm_dir;
  if (role == Role::kReference && !s.reference_shm_dir.empty()) o.shm_dir = s.reference_shm_dir;
  return o;
}

}  // namespace

Expected<StartedReference> StartedReference::start(const WorkerSetup& setup,
                                                   const Constants& constants) {
  StartedReference r;
  r.constants_ = constants;
  r.load_ = load_for(setup, Role::kReference, constants, setup.size_on_meta_over, true);
  r.executor_ = make_worker_executor(options_for(setup, Role::kReference, r.load_));
  auto info = r.executor_->start();
  if (!info) return info.error();
  r.reply_ = info->load_reply_json;
  return r;
}

StartedReference::StartedReference(StartedReference&&) noexcept = default;
StartedReference& StartedReference::operator=(StartedReference&&) noexcept = default;
StartedReference::~StartedReference() = default;

struct ModuleWorkers::Slot {
  Role role = Role::kReference;
  bool at_base = true;
  std::unique_ptr<WorkerExecutor> executor;
  std::optional<Constants> loaded;  // the constants of the current load
  std::optional<ModuleProblem> problem;
  std::optional<Error> failed;  // the last load's error at `loaded`
  std::string load_reply;       // the last successful load's reply
  int earlier_starts = 0;
  ShapeLoads loads;  // the loads worker() made in this slot, timed
};

ModuleWorkers::ModuleWorkers(WorkerSetup setup, Constants base, int64_t other_shape_budget)
    : setup_(std::move(setup)),
      base_(std::move(base)),
      other_shape_budget_(other_shape_budget),
      stub_(make_worker_candidate(setup_.name, "kernelbench")) {
  for (Role role : {Role::kReference, Role::kCandidate}) {
    for (bool at_base : {true, false}) {
      auto s = std::make_unique<Slot>();
      s->role = role;
      s->at_base = at_base;
      slots_.push_back(std::move(s));
    }
  }
}

ModuleWorkers::~ModuleWorkers() = default;

Constants ModuleWorkers::merged(const Constants& constants) const {
  Constants m = base_;
  for (const auto& [k, v] : constants) m[k] = v;
  return m;
}

ModuleWorkers::Slot& ModuleWorkers::slot(Role role, bool at_base) {
  return *slots_[(role == Role::kReference ? 0 : 2) + (at_base ? 0 : 1)];
}

int ModuleWorkers::reference_struck() const {
  int n = 0;
  for (const auto& s : slots_)
    if (s->role == Role::kReference && s->executor) n += s->executor->workers_struck();
  return n;
}

int ModuleWorkers::out_of_memory_kills(bool other_shapes) const {
  int n = 0;
  for (const auto& s : slots_) {
    if (!other_shapes && !s->at_base) continue;
    if (s->executor) n += s->executor->workers_out_of_memory();
  }
  return n;
}

bool ModuleWorkers::candidate_started() const {
  for (const auto& s : slots_)
    if (s->role == Role::kCandidate &&
        (s->earlier_starts > 0 || (s->executor && s->executor->workers_started() > 0)))
      return true;
  return false;
}

WorkerCallCosts ModuleWorkers::call_costs(Role role) const {
  WorkerCallCosts sum;
  for (const auto& s : slots_) {
    if (s->role != role || !s->executor) continue;
    const WorkerCallCosts c = s->executor->call_costs();
    sum.calls += c.calls;
    sum.prepare_s += c.prepare_s;
    sum.round_trip_s += c.round_trip_s;
    sum.task_s += c.task_s;
    sum.forward_s += c.forward_s;
    sum.finish_s += c.finish_s;
    sum.files_ahead += c.files_ahead;
  }
  return sum;
}

ModuleWorkers::ShapeLoads ModuleWorkers::other_shape_loads(Role role) const {
  const Slot& s = *slots_[(role == Role::kReference ? 0 : 2) + 1];
  return s.loads;
}

int ModuleWorkers::starts() const {
  int n = 0;
  for (const auto& s : slots_)
    n += s->earlier_starts + (s->executor ? s->executor->workers_started() : 0);
  return n;
}

Expected<WorkerExecutor*> ModuleWorkers::worker(Role role, const Constants& constants) {
  const Constants want = merged(constants);
  Slot& s = slot(role, at_base(constants));
  if (s.loaded == want) {
    if (s.failed) return *s.failed;
    return s.executor.get();
  }
  const int64_t meta = s.at_base ? setup_.size_on_meta_over : other_shape_budget_;
  const bool reference = role == Role::kReference;
  const WorkerLoad load = load_for(setup_, role, want, reference ? meta : 0, s.at_base,
                                   reference && !s.at_base ? other_shape_budget_ : 0);
  Expected<WorkerKernelInfo> info = make_error(ErrorCode::kInternal, "not started");
  const auto began = std::chrono::steady_clock::now();
  if (!s.executor) {
    s.executor = make_worker_executor(options_for(setup_, role, load));
    info = s.executor->start();
  } else {
    info = s.executor->reload(load);
  }
  ++s.loads.n;
  s.loads.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  s.loaded = want;
  s.problem.reset();
  s.failed.reset();
  if (!info) {
    s.failed = info.error();
    return *s.failed;
  }
  s.load_reply = info->load_reply_json;
  if (role == Role::kReference) {
    auto p = parse_problem(info->load_reply_json);
    if (!p) {
      s.failed = p.error();
      return *s.failed;
    }
    s.problem = std::move(*p);
  }
  return s.executor.get();
}

bool ModuleWorkers::adopt(StartedReference&& started) {
  Slot& s = slot(Role::kReference, true);
  const Constants want = merged({});
  const WorkerLoad load =
      load_for(setup_, Role::kReference, want, setup_.size_on_meta_over, /*facts=*/true);
  StartedReference taken = std::move(started);  // closed on return unless adopted
  if (s.executor || !taken.executor_ || taken.constants_ != want ||
      taken.load_.extra_json != load.extra_json || taken.load_.kind != load.kind ||
      taken.load_.kernel != load.kernel || taken.load_.op != load.op) {
    return false;
  }
  auto p = parse_problem(taken.reply_);
  if (!p) return false;
  s.executor = std::move(taken.executor_);
  s.loaded = want;
  s.problem = std::move(*p);
  s.failed.reset();
  s.load_reply = std::move(taken.reply_);
  return true;
}

std::string ModuleWorkers::base_load_reply(Role role) const {
  return slots_[role == Role::kReference ? 0 : 2]->load_reply;
}

Expected<const ModuleProblem*> ModuleWorkers::problem(const Constants& constants) {
  auto w = worker(Role::kReference, constants);
  if (!w) return w.error();
  Slot& s = slot(Role::kReference, at_base(constants));
  return &*s.problem;
}

}  // namespace kcv::kb
