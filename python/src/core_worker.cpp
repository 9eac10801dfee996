// File: python/src/core_worker.cpp
// kcv._core.Worker: the C++ WorkerExecutor (include/kcv/worker.hpp, docs/06_worker_protocol.md)
// for the trusted Python orchestrator. The executor owns the shared-memory files, guard bands,
// sentinels, buffer audit, timeouts, crash capture and restarts; this file only converts. The
// load dict is sent as the protocol's load request with "name" added (the Python worker echoes
// it, and the executor refuses a worker that loaded another kernel than name/op). The GIL is
// released while a worker starts, runs or shuts down, so Workers on several threads run at once;
// each Worker serialises its own calls.
#include <fmt/format.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "core_common.hpp"
#include "kcv/candidate.hpp"
#include "kcv/executor.hpp"
#include "kcv/worker.hpp"

namespace kcv::py {
namespace {

std::string string_field(const nb::dict& load, const char* key) {
  if (!load.contains(key)) return {};
  nb::object v = load[key];
  if (!nb::isinstance<nb::str>(v))
    raise_invalid(fmt::format("load[\"{}\"]: expected a string", key));
  return nb::cast<std::string>(v);
}

std::vector<OutputSpec> output_specs(nb::handle outputs) {
  std::vector<OutputSpec> specs;
  std::size_t k = 0;
  for (nb::handle item : outputs) {
    nb::tuple pair = nb::cast<nb::tuple>(item);
    const std::string what = fmt::format("outputs[{}]", k++);
    if (pair.size() != 2) raise_invalid(what + ": expected a (dtype, shape) pair");
    OutputSpec s{dtype_from_string(nb::cast<std::string>(pair[0]), what), {}};
    for (nb::handle d : pair[1]) s.shape.push_back(nb::cast<int64_t>(d));
    specs.push_back(std::move(s));
  }
  return specs;
}

CallOptions call_options(const std::map<std::string, double>& params, int timeout_ms,
                         uint64_t sentinel_seed, int64_t address_shift, bool randomize_guards,
                         uint64_t guard_seed, bool plain_buffers, const std::string& task_json) {
  CallOptions o;
  o.params = params;
  o.timeout_ms = timeout_ms;
  o.sentinel_seed = sentinel_seed;
  o.address_shift = address_shift;
  o.randomize_guards = randomize_guards;
  o.guard_seed = guard_seed;
  o.plain_buffers = plain_buffers;
  o.task_json = task_json;
  return o;
}

/// The call's typed task (docs/06 §7.3) as JSON text; None: the request carries none.
std::string task_text(nb::handle task) {
  if (task.is_none()) return {};
  if (!nb::isinstance<nb::dict>(task)) raise_invalid("task: expected a dict (docs/06 §7.3)");
  return to_json_text(task);
}

/// One option dict of run_concurrently: the keyword arguments of run.
CallOptions call_options_from(const nb::dict& d) {
  const auto get = [&](const char* key, auto fallback) {
    return d.contains(key) ? nb::cast<decltype(fallback)>(d[key]) : fallback;
  };
  CallOptions o = call_options(get("params", std::map<std::string, double>{}),
                               get("timeout_ms", 60000), get("sentinel_seed", uint64_t{0}),
                               get("address_shift", int64_t{0}), get("randomize_guards", false),
                               get("guard_seed", uint64_t{0}), get("plain_buffers", false),
                               d.contains("task") ? task_text(d["task"]) : std::string());
  if (d.contains("launch")) {
    const auto l = nb::cast<std::tuple<int32_t, int32_t>>(d["launch"]);
    o.launch = LaunchConfig{std::get<0>(l), std::get<1>(l)};
  }
  return o;
}

class PyWorker {
 public:
  PyWorker(std::vector<std::string> command, nb::dict load, std::string name, std::string op,
           int64_t memory_limit_bytes, int startup_timeout_ms)
      : candidate_(make_worker_candidate(name, op)) {
    if (!load.contains("kind")) raise_invalid("load: no \"kind\" (e.g. \"kernelbench\")");
    WorkerOptions o;
    o.command = std::move(command);
    o.load.kind = string_field(load, "kind");
    o.load.path = string_field(load, "path");
    o.load.kernel = string_field(load, "kernel");
    o.load.op = string_field(load, "op");
    nb::dict request;
    for (auto [k, v] : load) request[k] = v;
    if (!request.contains("name")) request["name"] = name;
    o.load.extra_json = to_json_text(request);
    o.memory_limit_bytes = memory_limit_bytes;
    o.startup_timeout_ms = startup_timeout_ms;
    executor_ = make_worker_executor(std::move(o));
  }

  nb::dict start() {
    Expected<WorkerKernelInfo> info = make_error(ErrorCode::kInternal, "");
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(mutex_);
      info = executor().start();
    }
    if (!info) raise(info.error());
    nb::dict d;
    d["name"] = info->name;
    d["op"] = info->op;
    d["pid"] = info->pid;
    d["worker"] = info->worker;
    d["concurrent_calls"] = info->concurrent_calls;
    d["reply"] = info->load_reply_json.empty() ? nb::object(nb::dict())
                                               : from_json_text(info->load_reply_json);
    return d;
  }

  std::vector<CallRecord> run_all(nb::handle inputs, nb::handle outputs,
                                  const std::vector<CallOptions>& options, bool concurrently) {
    const std::vector<HostTensor> tensors = tensors_from_pairs(inputs, "inputs");
    const std::vector<OutputSpec> specs = output_specs(outputs);
    nb::gil_scoped_release unlocked;
    std::lock_guard lock(mutex_);
    if (!concurrently) return {executor().run(*candidate_, tensors, specs, options.front())};
    return executor().run_concurrently(*candidate_, tensors, specs, options);
  }

  int workers_started() {
    std::lock_guard lock(mutex_);
    return executor_ ? executor_->workers_started() : closed_started_;
  }

  int workers_struck() {
    std::lock_guard lock(mutex_);
    return executor_ ? executor_->workers_struck() : closed_struck_;
  }

  void close() {
    std::unique_ptr<WorkerExecutor> gone;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(mutex_);
      if (executor_) {
        closed_started_ = executor_->workers_started();
        closed_struck_ = executor_->workers_struck();
      }
      gone = std::move(executor_);
      gone.reset();  // shutdown request, grace period, kill: without the GIL
    }
  }

 private:
  WorkerExecutor& executor() {
    if (!executor_) raise_invalid("the Worker is closed");
    return *executor_;
  }

  std::unique_ptr<Candidate> candidate_;
  std::unique_ptr<WorkerExecutor> executor_;
  std::mutex mutex_;
  int closed_started_ = 0;
  int closed_struck_ = 0;
};

}  // namespace

void bind_worker(nb::module_& m) {
  nb::class_<PyWorker>(m, "Worker",
                       "A worker process speaking docs/06_worker_protocol.md, driven by kcv's "
                       "WorkerExecutor (buffer audit, timeouts, crash capture, restarts).")
      .def(nb::init<std::vector<std::string>, nb::dict, std::string, std::string, int64_t, int>(),
           nb::arg("command"), nb::arg("load"), nb::kw_only(), nb::arg("name"),
           nb::arg("op") = "kernelbench", nb::arg("memory_limit_bytes") = 0,
           nb::arg("startup_timeout_ms") = 120000)
      .def("start", &PyWorker::start,
           "Starts the worker (spawn, hello, load) unless running; returns {name, op, pid, worker, "
           "concurrent_calls, reply}. On failure a kcv._core.Error of the failure's code "
           "(CandidateError "
           "when the worker fails to start or load, with worker_class when it says why).")
      .def(
          "run",
          [](PyWorker& w, nb::handle inputs, nb::handle outputs,
             const std::map<std::string, double>& params, int timeout_ms, uint64_t sentinel_seed,
             int64_t address_shift, bool randomize_guards, uint64_t guard_seed, bool plain_buffers,
             nb::handle task) {
            const CallOptions o =
                call_options(params, timeout_ms, sentinel_seed, address_shift, randomize_guards,
                             guard_seed, plain_buffers, task_text(task));
            return std::move(w.run_all(inputs, outputs, {o}, false).front());
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::kw_only(),
          nb::arg("params") = std::map<std::string, double>{}, nb::arg("timeout_ms") = 60000,
          nb::arg("sentinel_seed") = 0, nb::arg("address_shift") = 0,
          nb::arg("randomize_guards") = false, nb::arg("guard_seed") = 0,
          nb::arg("plain_buffers") = false, nb::arg("task") = nb::none(),
          "One call: inputs [(name, array)] with their strides, outputs [(dtype, shape)].")
      .def(
          "run_concurrently",
          [](PyWorker& w, nb::handle inputs, nb::handle outputs, nb::list options) {
            std::vector<CallOptions> opts;
            for (nb::handle d : options) opts.push_back(call_options_from(nb::cast<nb::dict>(d)));
            if (opts.empty()) return std::vector<CallRecord>{};
            return w.run_all(inputs, outputs, opts, true);
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::arg("options"),
          "len(options) calls at once (ORD-03); each dict takes run's keywords plus "
          "launch=(block, threads).")
      .def_prop_ro("workers_started", &PyWorker::workers_started)
      .def_prop_ro("workers_struck", &PyWorker::workers_struck,
                   "Workers that died of a signal kcv did not send, or were found stopped.")
      .def("close", &PyWorker::close)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyWorker& w, nb::args) { w.close(); });
}

}  // namespace kcv::py
