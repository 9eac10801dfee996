// File: src/resource/load_report.cpp
// Loads a resource report from a file, picking the parser from the content: PTX (.version /
// .target / .entry), a ptxas -v log ("ptxas info"), or cuobjdump --dump-resource-usage output
// ("Resource usage:"). Binary device code (ELF: .cubin, .o, fatbin) is handed to cuobjdump,
// which ships with the CUDA toolkit; when it is missing the error says where kcv looked and what
// to pass instead.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kcv/resource.hpp"
#include "resource/run_tool.hpp"
#include "resource/text_scan.hpp"

namespace kcv {
namespace {

constexpr const char* kCuobjdumpEnv = "KCV_CUOBJDUMP";

bool is_binary_device_code(const std::string& path, std::string_view head) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return head.starts_with(
             "\x7f"
             "ELF") ||
         ext == ".cubin" || ext == ".o" || ext == ".fatbin";
}

Expected<ResourceReport> report_from_binary(const std::string& path) {
  const resource::ToolSearch search = resource::find_tool("cuobjdump", kCuobjdumpEnv);
  if (!search.found) {
    return make_error(
        ErrorCode::kNotFound,
        fmt::format("cuobjdump is needed to read resource usage from a binary but was not "
                    "found (set ${} or install the CUDA toolkit's cuobjdump; or pass a "
                    "ptxas -v log or PTX instead); looked at: {}",
                    kCuobjdumpEnv, fmt::join(search.tried, ", ")),
        path);
  }
  auto run = resource::run_tool({*search.found, "--dump-resource-usage", path});
  if (!run) return Error{run.error().code, run.error().message, path};
  if (run->exit_code != 0 && resource::contains(run->output, "does not contain device code")) {
    // Host code only (a C++ extension built without CUDA): a report of no kernels, which RES-02
    // judges not applicable, rather than a failure to read device code.
    ResourceReport none;
    none.format = ResourceFormat::kCuobjdump;
    return none;
  }
  if (run->exit_code != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{} --dump-resource-usage failed (exit {}): {}", *search.found,
                                  run->exit_code, resource::trim(run->output)),
                      path);
  }
  return parse_cuobjdump_resource_usage(run->output);
}

Expected<ResourceReport> report_from_text(const std::string& text) {
  using resource::contains;
  if (contains(text, "Resource usage:")) return parse_cuobjdump_resource_usage(text);
  if (contains(text, "ptxas info")) return parse_ptxas_log(text);
  if (contains(text, ".entry") && (contains(text, ".target") || contains(text, ".version"))) {
    return parse_ptx(text);
  }
  return make_error(
      ErrorCode::kParse,
      "cannot tell what this is: expected PTX (.version/.target/.entry), a ptxas -v log "
      "(\"ptxas info\" lines) or cuobjdump --dump-resource-usage output "
      "(\"Resource usage:\"), or a .cubin/.o file");
}

}  // namespace

Expected<ResourceReport> load_resource_report(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return make_error(ErrorCode::kNotFound, "device code file not found", path);
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (!in && !in.eof()) return make_error(ErrorCode::kIo, "cannot read device code file", path);
  const std::string text = buf.str();
  auto report =
      is_binary_device_code(path, text) ? report_from_binary(path) : report_from_text(text);
  if (!report) {
    Error e = report.error();
    e.context = e.context.empty() || e.context == path ? path : path + ": " + e.context;
    return e;
  }
  report->source = path;
  return report;
}

}  // namespace kcv
