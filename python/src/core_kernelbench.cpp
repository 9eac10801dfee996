// File: python/src/core_kernelbench.cpp
// kcv._core.verify_module: one KernelBench corpus row through the C++ pipeline
// (include/kcv/kernelbench.hpp), for the Python orchestrator. The orchestrator keeps what only
// it can (scheduling, host-memory and GPU admission, the store); everything that decides a
// verdict (plans, inputs, the fp64 oracle's bound, the replica, the judges, folding, shrinking)
// runs here, without the GIL. The result is the store's outcome as a dict that Store.record
// takes once the orchestrator has taken out what is its own (timings, the out-of-memory flag).
#include <fmt/format.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "core_common.hpp"
#include "kcv/contract.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/resource.hpp"

namespace kcv::py {
namespace {

std::string row_string(const nb::dict& row, const char* key, bool required) {
  if (!row.contains(key)) {
    if (required) raise_invalid(fmt::format("row: no \"{}\"", key));
    return {};
  }
  nb::handle v = row[key];
  if (!nb::isinstance<nb::str>(v))
    raise_invalid(fmt::format("row[\"{}\"]: expected a string", key));
  return nb::cast<std::string>(v);
}

// The row's optional "contract": docs/01's fields, parsed strictly (an unknown field is an error).
void read_contract(const nb::dict& row, kb::ModuleRow& out) {
  if (!row.contains("contract") || row["contract"].is_none()) return;
  if (!nb::isinstance<nb::dict>(row["contract"]))
    raise_invalid("row[\"contract\"]: expected an object");
  auto c = parse_contract(to_json_text(row["contract"]), "kernelbench");
  if (!c) raise(c.error(), "row[\"contract\"]");
  out.contract = std::move(*c);
}

nb::dict record_dict(const audit::VerdictRecord& v) {
  nb::dict d;
  d["gate"] = v.gate;
  d["profile"] = v.profile;
  d["verdict"] = v.verdict;
  d["reason"] = v.reason;
  d["worst_ratio"] = v.worst_ratio ? nb::cast(*v.worst_ratio) : nb::none();
  d["bits_lost"] = v.bits_lost ? nb::cast(*v.bits_lost) : nb::none();
  d["evidence_json"] = v.evidence_json;
  d["probe_token"] = v.probe_token;
  d["finding"] = std::string(finding_name(v.finding));
  d["scope"] = std::string(scope_name(v.scope));
  return d;
}

nb::dict outcome_dict(const kb::ModuleOutcome& r) {
  const audit::KernelOutcome& o = r.outcome;
  nb::dict d;
  d["kernel_id"] = o.kernel_id;
  d["status"] = std::string(audit::status_name(o.status));
  d["message"] = o.message;
  d["replica_verdict"] = o.replica_verdict ? nb::cast(*o.replica_verdict) : nb::none();
  nb::list verdicts;
  for (const audit::VerdictRecord& v : o.verdicts) verdicts.append(record_dict(v));
  d["verdicts"] = verdicts;
  d["op_class"] = o.op_class;
  d["determinism_declared"] =
      o.determinism_declared ? nb::cast(*o.determinism_declared) : nb::none();
  d["facts"] = o.facts_json.empty() ? std::string("{}") : o.facts_json;
  nb::dict timings;
  for (const auto& [k, v] : r.timings) timings[k.c_str()] = v;
  d["timings"] = timings;
  d["out_of_memory"] = r.out_of_memory;
  return d;
}

// The workers' part of the options, shared by start_reference and verify_module: a reference
// started by one is adopted by the other only when both describe the same workers.
kb::WorkerSetup worker_setup(std::vector<std::string> worker_command, std::string device,
                             std::string cache_dir, int64_t memory_limit_bytes,
                             double load_timeout_s, int64_t size_on_meta_over) {
  kb::WorkerSetup w;
  w.command = std::move(worker_command);
  w.device = std::move(device);
  w.cache_dir = std::move(cache_dir);
  w.memory_limit_bytes = memory_limit_bytes;
  w.load_timeout_ms = static_cast<int>(load_timeout_s * 1000);
  w.size_on_meta_over = size_on_meta_over;
  return w;
}

// kcv._core.StartedReference: a judge-shape reference worker started ahead of verify_module.
class PyStartedReference {
 public:
  explicit PyStartedReference(kb::StartedReference r) : started_(std::move(r)) {}
  nb::object reply() const {
    if (!started_) raise_invalid("the StartedReference was closed or given to verify_module");
    return from_json_text(started_->load_reply_json());
  }
  std::optional<kb::StartedReference> take() { return std::exchange(started_, std::nullopt); }
  void close() {
    std::optional<kb::StartedReference> gone = take();
    nb::gil_scoped_release unlocked;  // shutdown request, grace period, kill: without the GIL
    gone.reset();
  }

 private:
  std::optional<kb::StartedReference> started_;
};

PyStartedReference start_reference(nb::dict row, std::vector<std::string> worker_command,
                                   std::string device, std::string cache_dir,
                                   int64_t memory_limit_bytes, double load_timeout_s,
                                   int64_t size_on_meta_over,
                                   std::map<std::string, int64_t> constants,
                                   std::string reference_shm_dir) {
  kb::WorkerSetup setup =
      worker_setup(std::move(worker_command), std::move(device), std::move(cache_dir),
                   memory_limit_bytes, load_timeout_s, size_on_meta_over);
  setup.reference_shm_dir = std::move(reference_shm_dir);
  setup.reference_code = row_string(row, "reference_code", true);
  setup.name = row_string(row, "id", true);
  Expected<kb::StartedReference> started = make_error(ErrorCode::kInternal, "not started");
  {
    nb::gil_scoped_release unlocked;
    started = kb::StartedReference::start(setup, constants);
  }
  if (!started) raise(started.error());
  return PyStartedReference(std::move(*started));
}

nb::dict verify_module(nb::dict row, std::vector<std::string> worker_command, std::string device,
                       std::string cache_dir, int64_t memory_limit_bytes, double load_timeout_s,
                       double call_timeout_s, double kernel_timeout_s,
                       std::vector<std::string> profiles, uint64_t seed,
                       std::map<std::string, int64_t> base_constants, int64_t probe_budget_bytes,
                       bool shrink, std::optional<nb::callable> progress, int64_t size_on_meta_over,
                       PyStartedReference* reference,
                       std::vector<std::string> reference_worker_command,
                       std::string candidate_shm_dir, std::string reference_shm_dir,
                       bool last_attempt) {
  kb::ModuleRow r;
  r.id = row_string(row, "id", true);
  const bool loads = row.contains("reference_load") && row.contains("candidate_load");
  if (loads) {  // kcv.verify: load requests of another kind (docs/06 §7.5)
    r.reference_load_json = to_json_text(row["reference_load"]);
    r.candidate_load_json = to_json_text(row["candidate_load"]);
  } else {
    r.reference_code = row_string(row, "reference_code", true);
    r.candidate_code = row_string(row, "candidate_code", true);
  }
  read_contract(row, r);
  kb::ModuleRunOptions o;
  o.workers = worker_setup(std::move(worker_command), std::move(device), std::move(cache_dir),
                           memory_limit_bytes, load_timeout_s, size_on_meta_over);
  o.workers.reference_command = std::move(reference_worker_command);
  o.workers.candidate_shm_dir = std::move(candidate_shm_dir);
  o.workers.reference_shm_dir = std::move(reference_shm_dir);
  o.call_timeout_ms = static_cast<int>(call_timeout_s * 1000);
  o.kernel_timeout_ms = static_cast<int64_t>(kernel_timeout_s * 1000);
  for (const std::string& name : profiles) {
    auto p = parse_profile(name);
    if (!p) raise_invalid("profiles: " + p.error().message);
    o.profiles.push_back(*p);
  }
  o.seed = seed;
  o.base = std::move(base_constants);
  o.probe_budget_bytes = probe_budget_bytes;
  o.shrink = shrink;
  o.last_attempt = last_attempt;
  if (progress) {
    o.progress = [cb = *progress](std::string_view line) {
      nb::gil_scoped_acquire held;
      try {
        cb(std::string(line));
      } catch (const nb::python_error&) {  // a broken progress display must not stop a verdict
      }
    };
  }
  std::optional<kb::StartedReference> started;
  if (reference != nullptr) started = reference->take();
  kb::ModuleOutcome result;
  {
    nb::gil_scoped_release unlocked;
    result = kb::verify_module(r, o, std::move(started));
  }
  return outcome_dict(result);
}

// RES-02 of device code compiled outside a worker (the calibration set's CUDA sources compiled
// with nvcc -Xptxas -v where no GPU is): the same judge as a worker's device code.
nb::dict judge_ptxas_log(const std::string& log, nb::handle contract) {
  auto report = parse_ptxas_log(log);
  if (!report) raise(report.error(), "log");
  auto c = parse_contract(contract.is_none() ? std::string("{}") : to_json_text(contract),
                          "kernelbench");
  if (!c) raise(c.error(), "contract");
  const GateResult r = judge_resources(*report, *c);
  nb::dict d;
  d["verdict"] = std::string(verdict_name(r.verdict));
  d["summary"] = r.evidence.summary;
  d["reason"] = r.reason;
  d["kernels"] = report->kernels.size();
  return d;
}

}  // namespace

void bind_kernelbench(nb::module_& m) {
  m.def("judge_ptxas_log", &judge_ptxas_log, nb::arg("log"), nb::arg("contract") = nb::none(),
        "RES-02 of a `ptxas -v` log against a contract dict (budgets, arch): {verdict, summary, "
        "reason, kernels}.");
  nb::class_<PyStartedReference>(
      m, "StartedReference",
      "A judge-shape reference worker started ahead of verify_module (start_reference).")
      .def_prop_ro("reply", &PyStartedReference::reply,
                   "The worker's load reply: the problem's inputs, outputs, sizes and facts.")
      .def("close", &PyStartedReference::close)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyStartedReference& r, nb::args) { r.close(); });
  m.def("start_reference", &start_reference, nb::arg("row"), nb::kw_only(),
        nb::arg("worker_command"), nb::arg("device") = "auto", nb::arg("cache_dir") = "",
        nb::arg("memory_limit_bytes") = 0, nb::arg("load_timeout_s") = 900.0,
        nb::arg("size_on_meta_over") = 0, nb::arg("constants") = std::map<std::string, int64_t>{},
        nb::arg("reference_shm_dir") = "",
        "Starts and loads the reference worker of a row (id, reference_code) at `constants`,\n"
        "as verify_module would start it, and returns it (reply: its load reply). Give it to\n"
        "verify_module(reference=...) with the same worker options and base_constants and it\n"
        "is adopted instead of loading the reference again; close() ends it otherwise. A load\n"
        "that fails raises the worker's typed kcv._core.Error.");
  m.def("verify_module", &verify_module, nb::arg("row"), nb::kw_only(), nb::arg("worker_command"),
        nb::arg("device") = "auto", nb::arg("cache_dir") = "", nb::arg("memory_limit_bytes") = 0,
        nb::arg("load_timeout_s") = 900.0, nb::arg("call_timeout_s") = 120.0,
        nb::arg("kernel_timeout_s") = 900.0, nb::arg("profiles") = std::vector<std::string>{},
        nb::arg("seed") = uint64_t{0x6b6376},
        nb::arg("base_constants") = std::map<std::string, int64_t>{},
        nb::arg("probe_budget_bytes") = int64_t{256} << 20, nb::arg("shrink") = true,
        nb::arg("progress") = nb::none(), nb::arg("size_on_meta_over") = 0,
        nb::arg("reference") = nb::none(),
        nb::arg("reference_worker_command") = std::vector<std::string>{},
        nb::arg("candidate_shm_dir") = "", nb::arg("reference_shm_dir") = "",
        nb::arg("last_attempt") = false,
        "Verifies one KernelBench row (id, reference_code, candidate_code, optional contract)\n"
        "through the C++ pipeline: loads, KernelBench's check, every gate under every profile.\n"
        "Returns the store's outcome dict plus 'timings' (seconds) and 'out_of_memory' (a harness\n"
        "error to retry alone), which are the orchestrator's: take them out before Store.record.\n"
        "reference: a StartedReference of this row at base_constants (start_reference with the\n"
        "same worker options), adopted and so closed here; size_on_meta_over: as the reference\n"
        "load's field (docs/06 §7.1), the one start_reference was given;\n"
        "reference_worker_command: argv of the reference's workers (empty: worker_command);\n"
        "candidate_shm_dir, reference_shm_dir: the call-file directories of the candidate's and\n"
        "the reference's workers (empty: /dev/shm); last_attempt: the orchestrator's run alone,\n"
        "where the reference running out of memory at another shape refuses that probe.");
}

}  // namespace kcv::py
