// File: src/worker/protocol.cpp
// Message building and checking for the orchestrator. Tensor descriptions give, per buffer, the
// raw region (absolute byte range in the shared file) and the view over it (dtype, shape,
// strides in elements, byte offset of element 0 from the start of the raw region); the worker
// needs nothing else. Result statuses map to CallStatus exactly as src/exec's invoke_kernel
// words them, so records from the worker and in-process executors compare equal.
#include "worker/protocol.hpp"

#include <fmt/format.h>

namespace kcv::worker {
namespace {

using nlohmann::json;

json describe(const HostTensor& t, const std::string& name, std::size_t raw_begin) {
  const std::size_t elem0 =
      t.raw_storage_begin() + static_cast<std::size_t>(t.storage_offset()) * dtype_size(t.dtype());
  return {{"name", name},       {"dtype", dtype_name(t.dtype())},
          {"shape", t.shape()}, {"strides", t.strides()},
          {"offset", elem0},    {"raw", {raw_begin, raw_begin + t.raw().size()}}};
}

Error protocol_error(std::string what) {
  return make_error(ErrorCode::kParse, "worker protocol violation: " + std::move(what));
}

}  // namespace

std::string quote(std::string_view text, std::size_t n) {
  if (text.size() <= n) return fmt::format("'{}'", text);
  return fmt::format("'{}...'", text.substr(0, n));
}

std::string hello_request() {
  return json{{"type", "hello"}, {"protocol", kWorkerProtocolVersion}}.dump();
}

Expected<std::string> load_request(const WorkerLoad& load) {
  json req = json::object();
  if (!load.extra_json.empty()) {
    req = json::parse(load.extra_json, nullptr, false);
    if (req.is_discarded() || !req.is_object())
      return make_error(ErrorCode::kInvalidArgument, "WorkerLoad.extra_json is not a JSON object");
  }
  req["type"] = "load";
  req["kind"] = load.kind;
  req["path"] = load.path;
  req["kernel"] = load.kernel;
  req["op"] = load.op;
  return req.dump();
}

std::string shutdown_request() { return json{{"type", "shutdown"}}.dump(); }

std::vector<RegionBuffer> region_layout(exec::CallBuffers& b) {
  std::vector<RegionBuffer> out;
  for (std::size_t k = 0; k < b.inputs.size(); ++k)
    out.push_back({fmt::format("input.{}", k), b.inputs[k].raw().size()});
  for (std::size_t k = 0; k < b.outputs.size(); ++k)
    out.push_back({fmt::format("output.{}", k), b.outputs[k].raw().size()});
  return out;
}

std::string call_request(uint64_t id, const CallRegion& region, const exec::CallBuffers& b,
                         const CallOptions& options) {
  json inputs = json::array(), outputs = json::array();
  std::size_t k = 0;
  for (std::size_t i = 0; i < b.inputs.size(); ++i, ++k)
    inputs.push_back(describe(b.inputs[i], fmt::format("input.{}", i), region.begin(k)));
  for (std::size_t i = 0; i < b.outputs.size(); ++i, ++k)
    outputs.push_back(describe(b.outputs[i], fmt::format("output.{}", i), region.begin(k)));
  json params = json::object();
  for (const auto& [name, value] : options.params) params[name] = value;
  json req{{"type", "call"},
           {"id", id},
           {"shm", {{"path", region.path()}, {"size", region.size()}}},
           {"inputs", inputs},
           {"outputs", outputs},
           {"params", params},
           {"launch", {{"block", options.launch.block}, {"threads", options.launch.threads}}}};
  if (!options.task_json.empty()) req["task"] = json::parse(options.task_json);
  return req.dump();
}

Expected<json> parse_reply(const std::string& line, std::string_view type) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded()) return protocol_error("a reply line is not JSON: " + quote(line));
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return protocol_error("a reply has no \"type\": " + quote(line));
  const std::string got = j["type"];
  if (got == "error") {
    const std::string msg = j.value("message", std::string("(no message)"));
    Error e = make_error(ErrorCode::kCandidate, "the worker reported an error: " + msg);
    if (j.contains("class") && j["class"].is_string())
      e.worker_class = j["class"].get<std::string>();
    if (j.contains("cause") && j["cause"].is_string())
      e.worker_cause = j["cause"].get<std::string>();
    e.worker_reusable = j.value("reusable", false) == true;
    return e;
  }
  if (got != type)
    return protocol_error(fmt::format("expected a \"{}\" reply, got: {}", type, quote(line)));
  return j;
}

exec::KernelOutcome outcome_of(const json& r) {
  const std::string status = r.value("status", std::string());
  const std::string message =
      r.contains("message") && r["message"].is_string() ? r["message"].get<std::string>() : "";
  if (status == "ok") return {};
  if (status == "kernel_error") {
    const int64_t code =
        r.contains("code") && r["code"].is_number_integer() ? r["code"].get<int64_t>() : -1;
    return {CallStatus::kKernelError,
            message.empty() ? fmt::format("the kernel returned {}", code)
                            : fmt::format("the kernel returned {}: {}", code, message)};
  }
  if (status == "exception")
    return {CallStatus::kException, fmt::format("the kernel threw: {}", message)};
  if (status == "bad_output") return {CallStatus::kBadOutput, message};
  return {CallStatus::kBadOutput,
          fmt::format("worker protocol violation: unknown result status {}", quote(status))};
}

Status read_hello(const json& hello, WorkerKernelInfo& info) {
  if (!hello.contains("protocol") || !hello["protocol"].is_number_integer())
    return protocol_error("the hello reply has no integer \"protocol\"");
  const int version = hello["protocol"];
  if (version != kWorkerProtocolVersion)
    return make_error(ErrorCode::kCandidate,
                      fmt::format("the worker speaks protocol {}, kcv speaks {}", version,
                                  kWorkerProtocolVersion));
  info.worker = hello.value("worker", std::string("unnamed worker"));
  const json caps = hello.value("capabilities", json::object());
  info.concurrent_calls = caps.is_object() && caps.value("concurrent_calls", false);
  return {};
}

Status read_loaded(const json& loaded, WorkerKernelInfo& info) {
  if (!loaded.contains("name") || !loaded["name"].is_string() || !loaded.contains("op") ||
      !loaded["op"].is_string())
    return protocol_error("the loaded reply lacks string fields \"name\" and \"op\"");
  info.name = loaded["name"];
  info.op = loaded["op"];
  info.load_reply_json = loaded.dump();
  if (loaded.contains("contract") && !loaded["contract"].is_null())
    info.contract_json = loaded["contract"].dump();
  if (loaded.contains("device_code") && loaded["device_code"].is_string())
    info.device_code = loaded["device_code"].get<std::string>();
  return {};
}

}  // namespace kcv::worker
