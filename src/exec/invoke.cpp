// File: src/exec/invoke.cpp
// The shared call-and-record steps of the executors.
#include "exec/invoke.hpp"

#include <fmt/format.h>

#include <exception>

namespace kcv::exec {

KernelOutcome invoke_kernel(Candidate& candidate, CallBuffers& buffers,
                            const CallOptions& options) noexcept {
  try {
    std::string message;
    const int rc = candidate.call(buffers.input_views, buffers.output_views, options.params,
                                  options.launch, &message);
    if (rc != 0) {
      return {CallStatus::kKernelError,
              message.empty() ? fmt::format("the kernel returned {}", rc)
                              : fmt::format("the kernel returned {}: {}", rc, message)};
    }
  } catch (const std::exception& e) {
    return {CallStatus::kException, fmt::format("the kernel threw: {}", e.what())};
  } catch (...) {
    return {CallStatus::kException, "the kernel threw something that is not a std::exception"};
  }
  if (auto bad = check_output_views(buffers)) return {CallStatus::kBadOutput, *bad};
  return {};
}

CallRecord finish_record(CallBuffers&& buffers, const CallOptions& options, KernelOutcome outcome,
                         bool returned) {
  CallRecord rec;
  rec.status = outcome.status;
  rec.message = std::move(outcome.message);
  rec.launch = options.launch;
  rec.sentinel = buffers.sentinel;
  if (returned) audit_buffers(buffers, rec);
  rec.outputs = std::move(buffers.outputs);
  return rec;
}

}  // namespace kcv::exec
