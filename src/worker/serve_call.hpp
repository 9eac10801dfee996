// File: src/worker/serve_call.hpp
// One call inside the worker: map the request's shared-memory file, build the kcv_tensor views
// it describes (checked to lie inside their raw regions), call the kernel, and word the result
// reply. Every failure of the request itself becomes an "error" reply naming the bad field.
#pragma once

#include <nlohmann/json.hpp>

#include "kcv/candidate.hpp"

namespace kcv::worker {

/// The reply to a call request (type "result", or "error" for a malformed request).
nlohmann::json serve_call(Candidate& candidate, const nlohmann::json& request);

}  // namespace kcv::worker
