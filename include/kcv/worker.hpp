// File: include/kcv/worker.hpp
// The worker executor: the candidate runs in a separate, long-lived worker process that kcv
// talks to over newline-delimited JSON on the worker's stdin/stdout (docs/06_worker_protocol.md).
// Tensors travel in fresh shared-memory files (one per call, safetensors layout); kcv keeps its
// own copy of every buffer and does the whole buffer audit itself, so a worker can lie about
// nothing but its own outputs. A worker that crashes, hangs past the call's timeout_ms, or
// breaks the protocol is killed; its calls become kCrash / kTimeout / kBadOutput records with
// the worker's stderr tail, and the next call starts a new worker (hello and load again).
// run_concurrently sends all its calls before reading any result: a worker advertising the
// capability "concurrent_calls" runs them at once on threads (kcv-worker does); otherwise kcv
// sends them one after the other to the one worker.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcv/executor.hpp"
#include "kcv/expected.hpp"

namespace kcv {

inline constexpr int kWorkerProtocolVersion = 1;

/// What the worker loads (the fields of the protocol's load request).
struct WorkerLoad {
  std::string kind = "shared_library";  // kcv-worker knows only this kind
  std::string path;                     // shared library (kind shared_library)
  std::string kernel;                   // kernel name; empty: by op, or the only kernel
  std::string op;                       // op to pick the kernel by; may be empty
  std::string extra_json;               // a JSON object merged into the request (other kinds)
};

struct WorkerOptions {
  std::vector<std::string> command;  // argv of the worker; empty: default_worker_command()
  WorkerLoad load;
  int64_t memory_limit_bytes = 0;        // RLIMIT_AS of the worker process; 0: no limit
  int startup_timeout_ms = 30000;        // spawn + hello + load; <= 0: no deadline
  int shutdown_grace_ms = 1000;          // after the shutdown request, before SIGKILL
  std::string shm_dir = "/dev/shm";      // where the per-call shared-memory files live
  std::size_t stderr_tail_bytes = 2048;  // how much of the worker's stderr a record quotes
  /// Files whose `oom_kill N` line counts the out-of-memory killer's kills (src/worker/
  /// oom_kills.hpp); empty: this process's cgroup files and /proc/vmstat.
  std::vector<std::string> oom_counter_files;
};

/// The failure cause (Error::worker_cause, a reply's "cause", docs/06 §7.1) of a worker that ran
/// out of memory: it reported an allocation failure, or the out-of-memory killer took it.
inline constexpr std::string_view kCauseOutOfMemory = "out_of_memory";

/// What the worker reported after loading (its hello and load replies).
struct WorkerKernelInfo {
  std::string name;
  std::string op;
  std::string contract_json;  // as the worker reported it (may be empty)
  std::optional<std::string> device_code;
  std::string worker;             // the worker's self-description from hello
  bool concurrent_calls = false;  // capability from hello
  int pid = 0;
  std::string load_reply_json;  // the worker's whole load reply, as JSON text
};

/// Where the calls of one executor spent their wall time, summed over its calls (restarts
/// included). The worker's figures are its own report (a result's `task_s` and `forward_s`,
/// docs/06 §4): timings, never evidence for a verdict.
struct WorkerCallCosts {
  int64_t calls = 0;        // calls sent to a worker
  double prepare_s = 0;     // kcv's side before sending: buffers, guards, the call file filled
  double round_trip_s = 0;  // from sending a call to reading its result (or its failure)
  double task_s = 0;        // of round_trip_s: the worker's own seconds inside the task
  double forward_s = 0;     // of task_s: the model's run alone, where the worker reports it
  double finish_s = 0;      // kcv's side after: inputs compared, outputs back, the audit
  int64_t files_ahead =
      0;  // fresh calls whose call file was made ahead, beside the last call's judging
};

class WorkerExecutor : public Executor {
 public:
  /// Starts the worker now if none is running (spawn, hello, load) and says what it loaded;
  /// an error names the failing step and quotes the worker's stderr. run() starts one lazily.
  virtual Expected<WorkerKernelInfo> start() = 0;
  /// How many worker processes this executor has started (1 + restarts).
  virtual int workers_started() const = 0;
  /// How many of its workers died of a signal kcv did not send, or were found stopped, while a
  /// call or a load was in flight (a trusted worker's such end is the candidate's doing unless
  /// shown otherwise: docs/10_threat_model.md).
  virtual int workers_struck() const = 0;
  /// How many of its workers the host's out-of-memory killer took (SIGKILL while an oom_kill
  /// count rose, src/worker/oom_kills.hpp): the machine's limit, never counted as struck.
  virtual int workers_out_of_memory() const = 0;
  /// Loads `load` instead of the current load: on the running worker when there is one (workers
  /// whose load may come again, docs/06 §7), else at the next start. A worker restarted later
  /// loads `load` too. A failed load is an Error naming the worker's message; the worker is
  /// stopped and the next call starts it afresh with `load`.
  virtual Expected<WorkerKernelInfo> reload(const WorkerLoad& load) = 0;
  /// Where this executor's calls spent their time so far.
  virtual WorkerCallCosts call_costs() const = 0;
};

std::unique_ptr<WorkerExecutor> make_worker_executor(WorkerOptions options);

/// The Candidate a WorkerExecutor checks a worker's load reply against (its name and op) when the
/// kernel lives only in the worker (a KernelBench module, a Python callable); calling it directly
/// fails with a message saying so.
std::unique_ptr<Candidate> make_worker_candidate(std::string name, std::string op);
/// The same for the kernel a worker loaded, as its load reply describes it (name, op, contract,
/// device code): the kernel's library is never loaded into kcv's own process.
Expected<std::unique_ptr<Candidate>> make_worker_candidate(const WorkerKernelInfo& info);

/// $KCV_WORKER when set, else `kcv-worker` beside the running executable when it exists, else
/// `kcv-worker` (looked up on PATH).
std::vector<std::string> default_worker_command();

}  // namespace kcv
