// File: src/kernelbench/calls.hpp
// One typed call of a KernelBench worker through its executor, and the words for its failure.
#pragma once

#include <string>
#include <vector>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {

/// Calls `task` on `w` with `inputs` and `outputs`; the executor audits the buffers as always.
CallRecord call_task(WorkerExecutor& w, Candidate& stub, const std::vector<HostTensor>& inputs,
                     const std::vector<OutputSpec>& outputs, const Task& task, CallOptions options);

/// "status crash: <message>", clipped for evidence and errors.
std::string describe_call(const CallRecord& rec);

/// Contiguous copies of a call's outputs (what the next call sends).
std::vector<HostTensor> contiguous_outputs(const CallRecord& rec);
/// The same, taking the record's outputs that are already contiguous (all of kcv's own) instead
/// of copying them: their elements are the same, and every reader (transform_inputs, the oracle,
/// the executors' input copies) reads elements only, never guard bands or the address shift.
std::vector<HostTensor> contiguous_outputs(CallRecord&& rec);

}  // namespace kcv::kb
