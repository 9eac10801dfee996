// File: src/exec/invoke.hpp
// One kernel call on prepared buffers, as both executors make it (the forked one inside its
// child): C++ exceptions become kException, a nonzero return kKernelError with the kernel's
// message, a rewritten output view kBadOutput. Never throws.
#pragma once

#include <string>

#include "exec/buffer_audit.hpp"

namespace kcv::exec {

struct KernelOutcome {
  CallStatus status = CallStatus::kOk;
  std::string message;
};

KernelOutcome invoke_kernel(Candidate& candidate, CallBuffers& buffers,
                            const CallOptions& options) noexcept;

/// A record with launch, sentinel and outputs filled and, when the call returned, the audit.
CallRecord finish_record(CallBuffers&& buffers, const CallOptions& options, KernelOutcome outcome,
                         bool returned);

}  // namespace kcv::exec
