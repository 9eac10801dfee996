// File: src/worker/executor.cpp
// WorkerExecutor: kcv prepares and owns every buffer (src/exec's prepare_buffers), copies the
// raw bytes into a fresh shared-memory file per call, sends the call, and when the result comes
// copies the bytes back and runs the same audit as the other executors. The worker only ever
// sees copies, so a lying worker can corrupt nothing but its own outputs. Calls in flight when
// the worker dies, hangs or breaks the protocol get kCrash / kTimeout / kBadOutput and the
// worker is killed; results that arrived before keep their audit. The next fresh call's file
// is made ahead (SpareRegion), so its pages are reserved while kcv judges the last call.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "worker/protocol.hpp"
#include "worker/session.hpp"

namespace kcv {
namespace {

// The next fresh call's file, made on a thread of its own once a call's file is revoked: making
// one (reserving, zeroing and mapping its pages) costs several times the copy into it, and kcv
// has the judges, the trusted result and the next probe's inputs to do before the next call. It
// is laid out for the last call's buffers and taken when the next call's fit in it (reuse()),
// else dropped for a file of the right size. A file made ahead is as fresh as one made at the
// call: no worker has seen it, and it lies in the worker's own call-file directory. At most one
// is made at a time, after the last call's file is gone, so no more call files exist at once
// than without it.
class SpareRegion {
 public:
  explicit SpareRegion(std::string dir) : dir_(std::move(dir)) {}
  SpareRegion(const SpareRegion&) = delete;
  SpareRegion& operator=(const SpareRegion&) = delete;
  ~SpareRegion() {
    if (next_.valid()) next_.wait();
  }

  /// Starts making a file laid out for `layout` unless one is on its way already.
  void make(std::vector<worker::RegionBuffer> layout, int64_t address_shift) {
    if (next_.valid()) return;
    try {
      next_ =
          std::async(std::launch::async, [dir = dir_, layout = std::move(layout), address_shift] {
            return worker::CallRegion::create(dir, layout, address_shift);
          });
    } catch (const std::system_error&) {  // no thread to be had: the next call makes its own
      next_ = {};
    }
  }

  /// The file made ahead, laid out for `layout`, when one was made and `layout` fits in it.
  std::optional<worker::CallRegion> take(const std::vector<worker::RegionBuffer>& layout,
                                         int64_t address_shift) {
    if (!next_.valid()) return std::nullopt;
    Expected<worker::CallRegion> made = next_.get();
    if (!made || !made->reuse(layout, address_shift)) return std::nullopt;
    return std::move(*made);
  }

 private:
  std::string dir_;
  std::future<Expected<worker::CallRegion>> next_;
};

struct Pending {
  exec::CallBuffers buffers;
  std::optional<worker::CallRegion> fresh;
  worker::CallRegion* kept = nullptr;  // the executor's kept file, when the call uses it
  worker::CallRegion& region() { return kept != nullptr ? *kept : *fresh; }
  std::optional<exec::KernelOutcome> outcome;  // set once the call ended, one way or another
  bool returned = false;                       // a result arrived: audit the buffers
  std::string reply;                           // the result reply, as sent
  bool killed_out_of_memory = false;           // the out-of-memory killer took its worker
  int64_t address_shift = 0;                   // the call's (its file's layout)
};

class WorkerExecutorImpl final : public WorkerExecutor {
 public:
  explicit WorkerExecutorImpl(WorkerOptions o)
      : session_(std::move(o)), spare_(session_.options().shm_dir) {}
  std::string_view name() const override { return "worker"; }
  Expected<WorkerKernelInfo> start() override { return session_.ensure_started(); }
  Expected<WorkerKernelInfo> reload(const WorkerLoad& load) override {
    return session_.reload(load);
  }
  int workers_started() const override { return session_.started(); }
  int workers_struck() const override { return session_.struck(); }
  int workers_out_of_memory() const override { return session_.out_of_memory(); }
  WorkerCallCosts call_costs() const override { return costs_; }

  CallRecord run(Candidate& candidate, const std::vector<HostTensor>& inputs,
                 const std::vector<OutputSpec>& outputs, const CallOptions& options) override {
    return std::move(run_all(candidate, inputs, outputs, {options}).front());
  }
  std::vector<CallRecord> run_concurrently(Candidate& candidate,
                                           const std::vector<HostTensor>& inputs,
                                           const std::vector<OutputSpec>& outputs,
                                           const std::vector<CallOptions>& options) override {
    return run_all(candidate, inputs, outputs, options);
  }

 private:
  std::vector<CallRecord> run_all(Candidate& candidate, const std::vector<HostTensor>& inputs,
                                  const std::vector<OutputSpec>& outputs,
                                  const std::vector<CallOptions>& options);
  std::optional<exec::KernelOutcome> refuse(Candidate& candidate,
                                            const std::vector<OutputSpec>& outputs);
  void make_region(Pending& p, const CallOptions& o);
  bool send(Pending& p, uint64_t id, const CallOptions& o);
  void run_calls(std::vector<Pending>& calls, const std::vector<CallOptions>& options);
  void collect(const std::vector<Pending*>& calls, const std::vector<uint64_t>& ids,
               int timeout_ms);
  void accept(Pending& p, const nlohmann::json& result);

  worker::Session session_;
  std::optional<worker::CallRegion> kept_;  // the trusted calls' file (CallOptions::keep_call_file)
  SpareRegion spare_;                       // the next fresh call's file, made ahead
  uint64_t next_id_ = 1;
  WorkerCallCosts costs_;
};

double seconds_since(worker::Clock::time_point t0) {
  return std::chrono::duration<double>(worker::Clock::now() - t0).count();
}

// A result's own figure `key` (seconds, docs/06 §4), 0 when absent or not a number.
double reported_seconds(const nlohmann::json& result, const char* key) {
  const auto it = result.find(key);
  return it != result.end() && it->is_number() ? std::max(0.0, it->get<double>()) : 0.0;
}

void fail_all(const std::vector<Pending*>& calls, CallStatus status, const std::string& message,
              bool out_of_memory = false);

// A reason not to call the kernel at all (wrong declared outputs, no worker, wrong kernel).
std::optional<exec::KernelOutcome> WorkerExecutorImpl::refuse(
    Candidate& candidate, const std::vector<OutputSpec>& outputs) {
  if (auto bad = exec::check_declared_outputs(candidate.contract(), outputs))
    return exec::KernelOutcome{CallStatus::kBadOutput, *bad};
  auto info = session_.ensure_started();
  if (!info) {
    return exec::KernelOutcome{CallStatus::kCrash,
                               "the worker could not be started: " + info.error().message};
  }
  if (info->name != candidate.name() || info->op != candidate.op()) {
    return exec::KernelOutcome{
        CallStatus::kBadOutput,
        fmt::format("the worker loaded kernel '{}' (op {}), not the candidate '{}' (op {})",
                    info->name, info->op, candidate.name(), candidate.op())};
  }
  return std::nullopt;
}

// The bytes of an output's raw buffer outside its elements (guards), copied from `from` to `to`.
void copy_guard_bytes(std::span<std::byte> to, std::span<const std::byte> from,
                      const HostTensor& t) {
  const std::size_t front = t.raw_storage_begin();
  const std::size_t back = front + static_cast<std::size_t>(t.storage_elems()) *
                                       static_cast<std::size_t>(dtype_size(t.dtype()));
  std::memcpy(to.data(), from.data(), std::min(front, to.size()));
  if (back < to.size()) std::memcpy(to.data() + back, from.data() + back, to.size() - back);
}

void WorkerExecutorImpl::make_region(Pending& p, const CallOptions& o) {
  const auto layout = worker::region_layout(p.buffers);
  if (o.keep_call_file && !(kept_ && kept_->reuse(layout, o.address_shift))) {
    kept_.reset();  // its pages go before the larger file's are reserved
    auto region = worker::CallRegion::create(session_.options().shm_dir, layout, o.address_shift);
    if (!region) throw std::runtime_error("worker executor: " + region.error().to_string());
    kept_.emplace(std::move(*region));
  }
  if (o.keep_call_file) {
    p.kept = &*kept_;
  } else if (std::optional<worker::CallRegion> ahead = spare_.take(layout, o.address_shift)) {
    p.fresh.emplace(std::move(*ahead));
    ++costs_.files_ahead;
  } else {
    auto region = worker::CallRegion::create(session_.options().shm_dir, layout, o.address_shift);
    if (!region) throw std::runtime_error("worker executor: " + region.error().to_string());
    p.fresh.emplace(std::move(*region));
  }
  p.address_shift = o.address_shift;
  const auto raws = exec::raw_buffers(p.buffers);
  const std::size_t n_inputs = p.buffers.inputs.size();
  for (std::size_t k = 0; k < raws.size(); ++k) {
    if (p.kept != nullptr && k >= n_inputs)
      copy_guard_bytes(p.region().buffer(k), raws[k], p.buffers.outputs[k - n_inputs]);
    else
      exec::copy_bytes(p.region().buffer(k), raws[k]);
  }
}

bool WorkerExecutorImpl::send(Pending& p, uint64_t id, const CallOptions& o) {
  return session_.process()->send(worker::call_request(id, p.region(), p.buffers, o));
}

void fail_all(const std::vector<Pending*>& calls, CallStatus status, const std::string& message,
              bool out_of_memory) {
  for (Pending* p : calls) {
    if (p->outcome) continue;
    p->outcome = exec::KernelOutcome{status, message};
    p->killed_out_of_memory = out_of_memory;
  }
}

void WorkerExecutorImpl::accept(Pending& p, const nlohmann::json& result) {
  const auto t0 = worker::Clock::now();
  const auto raws = exec::raw_buffers(p.buffers);
  // The worker wrote to the region's copies only: kcv's inputs are still as they were, so each
  // input copy is compared with them in place (no snapshot per call); the outputs come back.
  const std::size_t n_inputs = p.buffers.inputs.size();
  p.buffers.input_first_difference.clear();
  for (std::size_t k = 0; k < n_inputs; ++k)
    p.buffers.input_first_difference.push_back(
        exec::first_difference(p.region().buffer(k), raws[k]));
  for (std::size_t k = n_inputs; k < raws.size(); ++k)
    exec::copy_bytes(raws[k], p.region().buffer(k));
  if (p.kept == nullptr) {
    p.region().revoke();  // a thread still writing through it dies of SIGBUS
    spare_.make(worker::region_layout(p.buffers), p.address_shift);
  }
  p.outcome = worker::outcome_of(result);
  p.returned = true;
  p.reply = result.dump();
  session_.note_result(p.outcome->status);
  costs_.task_s += reported_seconds(result, "task_s");
  costs_.forward_s += reported_seconds(result, "forward_s");
  costs_.finish_s += seconds_since(t0);
  costs_.round_trip_s -= seconds_since(t0);  // run_calls counts the whole wait; this was ours
}

// Reads results until every call in `calls` (sent with the same position's id) has an outcome.
void WorkerExecutorImpl::collect(const std::vector<Pending*>& calls,
                                 const std::vector<uint64_t>& ids, int timeout_ms) {
  const auto deadline = timeout_ms > 0
                            ? worker::Clock::now() + std::chrono::milliseconds(timeout_ms)
                            : worker::Clock::time_point::max();
  auto open = [&] {
    for (const Pending* p : calls)
      if (!p->outcome) return true;
    return false;
  };
  while (open()) {
    const worker::ReadResult r = session_.process()->read_line(deadline);
    if (r.end == worker::ReadEnd::kTimeout) {
      const std::string why = session_.kill_and_describe();
      return fail_all(calls, CallStatus::kTimeout,
                      fmt::format("no result within {} ms; {}", timeout_ms, why));
    }
    if (r.end == worker::ReadEnd::kStopped) {
      session_.note_stopped();
      const std::string why = session_.kill_and_describe();
      return fail_all(
          calls, CallStatus::kCrash,
          fmt::format("the worker was stopped by a signal while the call ran; {}", why));
    }
    if (r.end == worker::ReadEnd::kEof) {
      const std::string why = session_.reap_and_describe();
      return fail_all(calls, CallStatus::kCrash, why + " before the call returned",
                      session_.last_end_out_of_memory());
    }
    std::string violation;
    if (r.end == worker::ReadEnd::kTooLong) {
      violation = "worker protocol violation: a reply line longer than 16 MiB, starting " +
                  worker::quote(r.line);
    } else {
      try {
        auto reply = worker::parse_reply(r.line, "result");
        if (!reply) {
          violation = reply.error().message;
        } else {
          const auto it = std::find(ids.begin(), ids.end(), reply->value("id", uint64_t{0}));
          Pending* p =
              it == ids.end() ? nullptr : calls[static_cast<std::size_t>(it - ids.begin())];
          if (p == nullptr || p->outcome)
            violation = "worker protocol violation: a result for no call in flight: " +
                        worker::quote(r.line);
          else
            accept(*p, *reply);
        }
      } catch (const nlohmann::json::exception& e) {
        violation =
            fmt::format("worker protocol violation: {} in {}", e.what(), worker::quote(r.line));
      }
    }
    if (!violation.empty()) {
      const std::string why = session_.kill_and_describe();
      return fail_all(calls, CallStatus::kBadOutput, fmt::format("{}; {}", violation, why));
    }
  }
}

// All calls at once when the worker runs calls concurrently (one deadline: the longest
// allowance, as in the forked executor); else one by one, restarting a worker that died.
void WorkerExecutorImpl::run_calls(std::vector<Pending>& calls,
                                   const std::vector<CallOptions>& options) {
  const auto t0 = worker::Clock::now();
  struct Count {  // the whole wait, starts included (accept takes its own share back out)
    WorkerCallCosts& costs;
    worker::Clock::time_point t0;
    ~Count() { costs.round_trip_s += seconds_since(t0); }
  } count{costs_, t0};
  const auto info = session_.ensure_started();
  if (worker::Session::Death died = session_.take_death_between_calls(); !died.message.empty()) {
    // the calls are not sent: the crash is the candidate's (or the out-of-memory killer's),
    // recorded on the calls that follow it
    for (Pending& p : calls) {
      p.outcome = exec::KernelOutcome{CallStatus::kCrash, died.message};
      p.killed_out_of_memory = died.out_of_memory;
    }
    return;
  }
  if (info && info->concurrent_calls && calls.size() > 1) {
    session_.mark_stderr();  // a failure quotes what the worker wrote during these calls
    std::vector<Pending*> all;
    std::vector<uint64_t> ids;
    int timeout_ms = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      all.push_back(&calls[i]);
      ids.push_back(next_id_++);
      ++costs_.calls;
      timeout_ms = std::max(timeout_ms, options[i].timeout_ms);
      if (!send(calls[i], ids.back(), options[i])) break;  // collect() sees the worker's end
    }
    return collect(all, ids, timeout_ms);
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto running = session_.ensure_started();
    if (worker::Session::Death died = session_.take_death_between_calls(); !died.message.empty()) {
      calls[i].outcome = exec::KernelOutcome{CallStatus::kCrash, died.message};
      calls[i].killed_out_of_memory = died.out_of_memory;
      continue;
    }
    if (!running) {
      calls[i].outcome = exec::KernelOutcome{
          CallStatus::kCrash, "the worker could not be restarted: " + running.error().message};
      calls[i].killed_out_of_memory = session_.last_end_out_of_memory();
      continue;
    }
    const uint64_t id = next_id_++;
    ++costs_.calls;
    session_.mark_stderr();
    send(calls[i], id, options[i]);
    collect({&calls[i]}, {id}, options[i].timeout_ms);
  }
}

std::vector<CallRecord> WorkerExecutorImpl::run_all(Candidate& candidate,
                                                    const std::vector<HostTensor>& inputs,
                                                    const std::vector<OutputSpec>& outputs,
                                                    const std::vector<CallOptions>& options) {
  auto t0 = worker::Clock::now();
  std::vector<Pending> calls(options.size());
  const bool kept = options.size() == 1 && options.front().keep_call_file;  // one kept file
  for (std::size_t i = 0; i < options.size(); ++i)
    calls[i].buffers =
        exec::prepare_buffers(inputs, outputs, options[i], /*snapshot_inputs=*/false,
                              kept ? exec::OutputFill::kGuardsOnly : exec::OutputFill::kSentinel);
  costs_.prepare_s += seconds_since(t0);
  if (!options.empty()) {
    if (auto no = refuse(candidate, outputs)) {
      for (Pending& p : calls) {
        p.outcome = *no;
        p.killed_out_of_memory =
            no->status == CallStatus::kCrash && session_.last_end_out_of_memory();
      }
    } else {
      t0 = worker::Clock::now();
      for (std::size_t i = 0; i < options.size(); ++i) {
        CallOptions o = options[i];
        o.keep_call_file = kept;
        make_region(calls[i], o);
      }
      costs_.prepare_s += seconds_since(t0);
      run_calls(calls, options);
    }
  }
  t0 = worker::Clock::now();
  std::vector<CallRecord> records;
  for (std::size_t i = 0; i < options.size(); ++i) {
    exec::KernelOutcome outcome = std::move(*calls[i].outcome);
    records.push_back(exec::finish_record(std::move(calls[i].buffers), options[i],
                                          std::move(outcome), calls[i].returned));
    records.back().worker_reply = std::move(calls[i].reply);
    records.back().killed_out_of_memory = calls[i].killed_out_of_memory;
  }
  costs_.finish_s += seconds_since(t0);
  return records;
}

}  // namespace

std::unique_ptr<WorkerExecutor> make_worker_executor(WorkerOptions options) {
  return std::make_unique<WorkerExecutorImpl>(std::move(options));
}

}  // namespace kcv
