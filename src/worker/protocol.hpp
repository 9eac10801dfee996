// File: src/worker/protocol.hpp
// The orchestrator's side of the message formats of docs/06_worker_protocol.md: building the
// hello, load, call and shutdown requests, and checking a reply line. A reply that is not a
// JSON object of the expected type is an Error whose message says what was wrong and quotes the
// start of the line; the executor turns that into a kBadOutput record, never a crash of kcv.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "exec/buffer_audit.hpp"
#include "exec/invoke.hpp"
#include "kcv/worker.hpp"
#include "worker/call_region.hpp"

namespace kcv::worker {

std::string hello_request();
Expected<std::string> load_request(const WorkerLoad& load);
std::string shutdown_request();

/// The region's buffer list for a call's buffers: inputs, then outputs.
std::vector<RegionBuffer> region_layout(exec::CallBuffers& b);
std::string call_request(uint64_t id, const CallRegion& region, const exec::CallBuffers& b,
                         const CallOptions& options);

/// The reply as a JSON object of type `type`; a reply of type "error" is an Error carrying the
/// worker's message.
Expected<nlohmann::json> parse_reply(const std::string& line, std::string_view type);

/// The kernel outcome a result reply reports, with the in-process executor's wording.
exec::KernelOutcome outcome_of(const nlohmann::json& result);

/// What the hello and load replies say.
Status read_hello(const nlohmann::json& hello, WorkerKernelInfo& info);
Status read_loaded(const nlohmann::json& loaded, WorkerKernelInfo& info);

/// The first `n` characters of `text`, with "..." when cut.
std::string quote(std::string_view text, std::size_t n = 200);

}  // namespace kcv::worker
