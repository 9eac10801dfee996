// File: src/resource/cuobjdump.cpp
// Parser for `cuobjdump --dump-resource-usage` output. For an object file or fatbinary the tool
// prints one "Fatbin elf code" section per embedded cubin ("arch = sm_90a" in its header) and,
// under "Resource usage:", one "Function NAME:" line followed by a line of KEY:VALUE pairs
//   REG:32 STACK:528 SHARED:0 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0
// For a bare .cubin there is no section header, so the arch is left empty. The "Common:" block
// (module-wide GLOBAL and CONSTANT[3] user constants) is not attributed to any kernel. Spill
// byte counts are not part of this output (ResourceFormat::kCuobjdump says so).
#include <regex>

#include "kcv/resource.hpp"
#include "resource/text_scan.hpp"

namespace kcv {
namespace {

using resource::line_error;
constexpr std::string_view kParser = "cuobjdump resource usage";

// "KEY:VALUE" or "KEY[n]:VALUE"; false for anything else.
bool apply_pair(KernelResources& k, std::string_view token) {
  static const std::regex kPair(R"(([A-Z_]+)(\[\d+\])?:(\d+))");
  const std::string s(token);
  std::smatch m;
  if (!std::regex_match(s, m, kPair)) return false;
  const auto v = resource::parse_count(m[3].str());
  if (!v) return false;
  const std::string key = m[1].str();
  if (key == "REG") k.registers = *v;
  if (key == "STACK") k.stack_bytes = *v;
  if (key == "SHARED") k.shared_bytes = *v;
  if (key == "CONSTANT") k.constant_bytes += *v;
  return true;  // LOCAL, TEXTURE, SURFACE, SAMPLER: not budgets kcv tracks
}

Status parse_usage_line(KernelResources& k, std::size_t no, std::string_view line) {
  std::string_view rest = resource::trim(line);
  while (!rest.empty()) {
    const std::size_t sp = rest.find_first_of(" \t");
    const std::string_view token = rest.substr(0, sp);
    if (!apply_pair(k, token)) {
      return line_error(kParser, no, line,
                        "unrecognised resource item '" + std::string(token) + "'");
    }
    rest = sp == std::string_view::npos ? std::string_view{} : resource::trim(rest.substr(sp));
  }
  return {};
}

}  // namespace

Expected<ResourceReport> parse_cuobjdump_resource_usage(std::string_view text) {
  ResourceReport report;
  report.format = ResourceFormat::kCuobjdump;
  std::string arch;
  bool expect_usage = false;  // the line after "Function NAME:"
  const auto lines = resource::split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view t = resource::trim(lines[i]);
    if (expect_usage) {
      expect_usage = false;
      Status s = parse_usage_line(report.kernels.back(), i + 1, lines[i]);
      if (!s) return s.error();
    } else if (resource::starts_with(t, "arch = ")) {
      arch = std::string(resource::trim(t.substr(7)));
    } else if (resource::starts_with(t, "Function ") && t.back() == ':') {
      KernelResources k;
      k.name = std::string(resource::trim(t.substr(9, t.size() - 10)));
      k.arch = arch;
      report.kernels.push_back(std::move(k));
      expect_usage = true;
    }
  }
  if (expect_usage) {
    return line_error(kParser, lines.size(), lines.back(),
                      "a Function line without its usage line");
  }
  if (report.kernels.empty()) {
    return make_error(ErrorCode::kParse,
                      "no \"Function NAME:\" entries: not the output of cuobjdump "
                      "--dump-resource-usage, or the file holds no device functions",
                      std::string(kParser));
  }
  return report;
}

}  // namespace kcv
