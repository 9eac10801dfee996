// File: include/kcv/call.hpp
// What one candidate call produced, as audited by an executor: the outputs (bits, in fresh
// buffers that were poisoned with a per-call random sentinel), whether the call returned,
// crashed, timed out or threw, and the tolerance-free buffer facts (inputs unchanged, guard
// bands and padding intact, every output element written). A misbehaving candidate is data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/tensor.hpp"

namespace kcv {

enum class CallStatus {
  kOk,
  kKernelError,  // the kernel returned non-zero
  kException,    // the kernel threw (in-process C++ candidates)
  kCrash,        // the process running the kernel died (signal)
  kTimeout,
  kBadOutput,  // outputs of the wrong number, shape or dtype
};
std::string_view call_status_name(CallStatus s);

struct CallRecord {
  CallStatus status = CallStatus::kOk;
  std::string message;
  LaunchConfig launch;
  std::vector<HostTensor> outputs;  // contiguous, with guard bands, as the candidate left them
  bool inputs_unchanged = true;     // every input byte (elements and padding) as before
  int64_t first_mutated_input_elem = -1;  // elements from storage element 0 (negative: front guard)
  int mutated_input = -1;
  bool guards_intact = true;           // output guard bands untouched
  int64_t first_guard_violation = -1;  // byte offset relative to storage begin (negative: front)
  bool all_written = true;             // no output element still holds the sentinel
  int64_t first_unwritten = -1;        // logical row-major index into outputs[unwritten_output]
  int unwritten_output = -1;
  uint64_t sentinel = 0;  // the poison pattern of this call
  /// Worker executor only: the worker's whole result reply (JSON text), for the fields a task's
  /// own layer reads (device guard reports, device code); empty otherwise.
  std::string worker_reply;
  /// Worker executor only: the host's out-of-memory killer ended the worker during this call
  /// (status kCrash): the machine's limit, not the kernel's crash.
  bool killed_out_of_memory = false;
};

/// All calls made for one probe.
struct ProbeOutcome {
  std::vector<CallRecord> calls;
  /// Non-empty: the runner could not run the candidate at this probe for a reason of the
  /// machine's, not the kernel's (ModuleRunner: out of memory at a shape other than the judge
  /// shape on the kernel's last attempt). The probe fails nothing, and its gate cannot pass: a
  /// gate that no other probe failed is an error naming the reason (run_pipeline).
  std::string refused;
};

/// The calls of one probe as a judge reads them, in order, without owning them: those of a
/// ProbeOutcome, or records kept elsewhere (the Python binding's, read in place rather than
/// copied, since a call's outputs can be gigabytes). Valid while the records live.
class CallsView {
 public:
  class Iterator {
   public:
    explicit Iterator(const CallRecord* const* at) : at_(at) {}
    const CallRecord& operator*() const { return **at_; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    bool operator==(const Iterator&) const = default;

   private:
    const CallRecord* const* at_;
  };

  CallsView() = default;
  CallsView(const ProbeOutcome& outcome) {  // NOLINT(google-explicit-constructor): a view of it
    calls_.reserve(outcome.calls.size());
    for (const CallRecord& c : outcome.calls) calls_.push_back(&c);
  }
  CallsView(ProbeOutcome&&) = delete;  // would point into a temporary
  explicit CallsView(std::vector<const CallRecord*> calls) : calls_(std::move(calls)) {}

  std::size_t size() const { return calls_.size(); }
  bool empty() const { return calls_.empty(); }
  const CallRecord& operator[](std::size_t k) const { return *calls_[k]; }
  const CallRecord& front() const { return *calls_.front(); }
  Iterator begin() const { return Iterator(calls_.data()); }
  Iterator end() const { return Iterator(calls_.data() + calls_.size()); }

 private:
  std::vector<const CallRecord*> calls_;
};

}  // namespace kcv
