// File: src/exec/buffer_audit.hpp
// The buffer audit both executors share. prepare_buffers makes the buffers of one call: inputs
// copied into fresh HostTensors with the caller's layout (strides, storage offset), guard bands
// and address shift, guards and padding filled with a fixed pattern or random bits; outputs
// contiguous, every raw byte (guards included) holding the call's sentinel, or zeros in plain
// (replica) mode. Snapshots of the inputs' raw bytes and the outputs' guard bytes are taken
// before the call. audit_buffers compares
// after the call: inputs bit for bit, output guards, and output elements still equal to the
// sentinel. The kcv_tensor views handed to the kernel are kept with a pristine copy, so a kernel
// that rewrites its output views (a "wrong shape") is caught.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "exec/byte_passes.hpp"  // first_difference
#include "kcv/call.hpp"
#include "kcv/candidate.hpp"
#include "kcv/executor.hpp"

namespace kcv::exec {

/// Guard elements on each side of every buffer kcv allocates.
inline constexpr int64_t kGuardElems = 64;

struct CallBuffers {
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
  std::vector<std::vector<std::byte>> inputs_before;  // raw() of each input before the call
  // Set instead of inputs_before by an executor whose kernel writes to copies of the inputs
  // (the worker's shared memory), so that `inputs` themselves stay as they were: the first raw
  // byte at which each copy differs after the call, -1 where none does.
  std::vector<int64_t> input_first_difference;
  // Each output's guard bytes as poisoned, before and after its elements: a copy of the whole
  // output per call would only add an output-sized allocation (the audit's large problems).
  struct Guards {
    std::vector<std::byte> front, back;
  };
  std::vector<Guards> output_guards_before;
  std::vector<kcv_tensor> input_views;
  std::vector<kcv_tensor> output_views;       // handed to the kernel (it may scribble on them)
  std::vector<kcv_tensor> output_views_made;  // as kcv made them
  std::vector<uint64_t> output_sentinels;     // per output (sentinel_bits of its dtype)
  uint64_t sentinel = 0;                      // the first output's, for CallRecord::sentinel
  bool plain = false;
  // Outputs made by OutputFill::kGuardsOnly: their elements never held the sentinel, so they are
  // not audited for unwritten elements (the trusted writer writes every one).
  bool guards_only = false;
};

/// How prepare_buffers makes the outputs: every raw byte the call's sentinel (a candidate's call:
/// an element it never writes is seen), or only the guards, the elements left for a trusted
/// worker whose outputs come back whole (the worker executor's kept call file).
enum class OutputFill { kSentinel, kGuardsOnly };

/// snapshot_inputs = false: the executor compares the inputs itself and fills
/// input_first_difference (no input-sized snapshot per call).
CallBuffers prepare_buffers(const std::vector<HostTensor>& inputs,
                            const std::vector<OutputSpec>& outputs, const CallOptions& options,
                            bool snapshot_inputs = true,
                            OutputFill output_fill = OutputFill::kSentinel);

/// Fills the audit fields of `rec` (inputs_unchanged ... first_unwritten) from the buffers.
void audit_buffers(const CallBuffers& b, CallRecord& rec);

/// A message when the kernel rewrote an output view (data, dtype, rank, shape or strides).
std::optional<std::string> check_output_views(const CallBuffers& b);

/// A message when the candidate's contract declares outputs that differ from what the op
/// requires (number or dtype); such a kernel is not called.
std::optional<std::string> check_declared_outputs(const Contract& contract,
                                                  const std::vector<OutputSpec>& outputs);

/// Bytes of every input and output raw buffer, in order: inputs, then outputs.
std::vector<std::span<std::byte>> raw_buffers(CallBuffers& b);

}  // namespace kcv::exec
