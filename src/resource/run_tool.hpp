// File: src/resource/run_tool.hpp
// Runs an external tool (cuobjdump) without a shell and captures its output, and finds such a
// tool: an explicit environment override, then next to the nvcc kcv was configured with, then
// $CUDA_HOME/bin, then PATH.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kcv/expected.hpp"

namespace kcv::resource {

struct ToolResult {
  int exit_code = 0;   // -1 when killed by a signal
  std::string output;  // stdout and stderr, interleaved
};

/// argv[0] is the program path. Errors only when the program cannot be started.
Expected<ToolResult> run_tool(const std::vector<std::string>& argv);

/// Where `program` was searched, in order (for error messages), and the first executable hit.
struct ToolSearch {
  std::vector<std::string> tried;
  std::optional<std::string> found;
};
ToolSearch find_tool(const std::string& program, const char* override_env);

}  // namespace kcv::resource
