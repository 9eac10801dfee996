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

/// Contiguous copies of a call's outputs without guard bands (what the next call sends).
std::vector<HostTensor> contiguous_outputs(const CallRecord& rec);

}  // namespace kcv::kb
