// File: src/exec/in_process.cpp
// The in-process executor: the kernel runs on the calling thread (or, for run_concurrently, on
// one std::thread per call) in kcv's own address space. C++ exceptions are caught; a crash or a
// hang takes kcv with it, so this executor is for trusted kernels and tests. Timeouts are not
// enforced here.
#include <thread>

#include "exec/invoke.hpp"

namespace kcv {
namespace {

class InProcessExecutor final : public Executor {
 public:
  std::string_view name() const override { return "in-process"; }

  CallRecord run(Candidate& candidate, const std::vector<HostTensor>& inputs,
                 const std::vector<OutputSpec>& outputs, const CallOptions& options) override {
    exec::CallBuffers b = exec::prepare_buffers(inputs, outputs, options);
    if (auto bad = exec::check_declared_outputs(candidate.contract(), outputs)) {
      return exec::finish_record(std::move(b), options, {CallStatus::kBadOutput, *bad}, false);
    }
    exec::KernelOutcome outcome = exec::invoke_kernel(candidate, b, options);
    return exec::finish_record(std::move(b), options, std::move(outcome), true);
  }

  std::vector<CallRecord> run_concurrently(Candidate& candidate,
                                           const std::vector<HostTensor>& inputs,
                                           const std::vector<OutputSpec>& outputs,
                                           const std::vector<CallOptions>& options) override {
    std::vector<CallRecord> records;
    if (auto bad = exec::check_declared_outputs(candidate.contract(), outputs)) {
      for (const CallOptions& o : options) {
        records.push_back(exec::finish_record(exec::prepare_buffers(inputs, outputs, o), o,
                                              {CallStatus::kBadOutput, *bad}, false));
      }
      return records;
    }
    std::vector<exec::CallBuffers> buffers;
    for (const CallOptions& o : options)
      buffers.push_back(exec::prepare_buffers(inputs, outputs, o));
    std::vector<exec::KernelOutcome> outcomes(options.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < options.size(); ++i) {
      threads.emplace_back(
          [&, i] { outcomes[i] = exec::invoke_kernel(candidate, buffers[i], options[i]); });
    }
    for (std::thread& t : threads) t.join();
    for (std::size_t i = 0; i < options.size(); ++i) {
      records.push_back(
          exec::finish_record(std::move(buffers[i]), options[i], std::move(outcomes[i]), true));
    }
    return records;
  }
};

}  // namespace

std::unique_ptr<Executor> make_in_process_executor() {
  return std::make_unique<InProcessExecutor>();
}

}  // namespace kcv
