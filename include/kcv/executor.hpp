// File: include/kcv/executor.hpp
// Executors run a candidate on a probe's inputs and audit the buffers. They are swappable: the
// in-process executor (tests; a crash takes kcv down with it) and the forked executor (each call
// in a child process; crash, hang and exit become CallStatus values) share one contract:
//  - inputs are copied into fresh buffers with guard bands for every call (fresh addresses);
//  - outputs are fresh contiguous buffers whose every byte, guards included, holds a per-call
//    random sentinel (a NaN pattern for floats), so stale results cannot pass;
//  - after the call: inputs compared bit for bit with their pre-call copies (padding included),
//    output guards checked, unwritten elements found.
#pragma once

#include <memory>
#include <vector>

#include "kcv/call.hpp"
#include "kcv/candidate.hpp"
#include "kcv/tensor.hpp"

namespace kcv {

struct OutputSpec {
  DType dtype;
  Shape shape;
};

struct CallOptions {
  LaunchConfig launch;
  std::map<std::string, double> params;
  uint64_t sentinel_seed = 0;     // per-call sentinel derives from this
  int64_t address_shift = 0;      // bytes added before each buffer
  bool randomize_guards = false;  // fill input guards/padding with random bits (RES-01)
  uint64_t guard_seed = 0;
  int timeout_ms = 10000;      // forked executor; <= 0: no deadline
  bool plain_buffers = false;  // replica mode: zero guards and zero-initialised outputs
  /// Worker executor only: the call request's "task" object (a JSON object text) for workers
  /// whose calls are typed tasks (docs/06 §7.3); built by the kind's own typed layer
  /// (kcv/kernelbench.hpp). Empty: the request has no task.
  std::string task_json;
  /// Worker executor only, for a trusted worker's calls (the reference's), one after another:
  /// the call's shared-memory file is the one this executor kept from its last such call when
  /// the buffers fit (else a new one, kept in its place), and only the inputs and the outputs'
  /// guard bytes are copied in: the worker writes every output element, so the outputs' elements
  /// are not poisoned beforehand nor audited for unwritten ones afterwards (guards still are). A
  /// candidate's calls never set it: each gets a fresh file, new pages and addresses, revoked
  /// after the call.
  bool keep_call_file = false;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view name() const = 0;
  /// One call. Never throws for candidate misbehaviour.
  virtual CallRecord run(Candidate& candidate, const std::vector<HostTensor>& inputs,
                         const std::vector<OutputSpec>& outputs, const CallOptions& options) = 0;
  /// `count` calls running at the same time on separate buffers (ORD-03 concurrency).
  virtual std::vector<CallRecord> run_concurrently(Candidate& candidate,
                                                   const std::vector<HostTensor>& inputs,
                                                   const std::vector<OutputSpec>& outputs,
                                                   const std::vector<CallOptions>& options) = 0;
};

std::unique_ptr<Executor> make_in_process_executor();
std::unique_ptr<Executor> make_forked_executor();

/// The sentinel element pattern for a dtype derived from a seed (NaN payload for floats).
uint64_t sentinel_bits(DType t, uint64_t seed);

}  // namespace kcv
