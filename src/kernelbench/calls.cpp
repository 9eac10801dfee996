// File: src/kernelbench/calls.cpp
// Typed calls of a KernelBench worker (calls.hpp).
#include "kernelbench/calls.hpp"

#include <fmt/format.h>

namespace kcv::kb {
namespace {

constexpr std::size_t kMessageLimit = 2000;

}  // namespace

CallRecord call_task(WorkerExecutor& w, Candidate& stub, const std::vector<HostTensor>& inputs,
                     const std::vector<OutputSpec>& outputs, const Task& task,
                     CallOptions options) {
  options.task_json = task_json(task, options.sentinel_seed);
  return w.run(stub, inputs, outputs, options);
}

std::string describe_call(const CallRecord& rec) {
  std::string msg = fmt::format("status {}{}", call_status_name(rec.status),
                                rec.message.empty() ? "" : ": " + rec.message);
  if (msg.size() > kMessageLimit) msg = msg.substr(0, kMessageLimit - 3) + "...";
  return msg;
}

std::vector<HostTensor> contiguous_outputs(const CallRecord& rec) {
  std::vector<HostTensor> out;
  out.reserve(rec.outputs.size());
  for (const HostTensor& t : rec.outputs) out.push_back(t.contiguous());
  return out;
}

std::vector<HostTensor> contiguous_outputs(CallRecord&& rec) {
  std::vector<HostTensor> out;
  out.reserve(rec.outputs.size());
  for (HostTensor& t : rec.outputs)
    out.push_back(t.is_contiguous() ? std::move(t) : t.contiguous());
  rec.outputs.clear();
  return out;
}

}  // namespace kcv::kb
