// File: src/resource/ptxas_log.cpp
// Parser for `ptxas -v` output (nvcc -Xptxas -v), as nvcc 13 prints it:
//   ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90a'
//   ptxas info    : Function properties for _Z3fooPf
//       528 bytes stack frame, 1000 bytes spill stores, 756 bytes spill loads
//   ptxas info    : Used 32 registers, used 1 barriers, 12000 bytes smem[, 360 bytes cmem[0]]
// The non-obvious part is attribution: "Function properties" blocks also appear for non-entry
// (__noinline__) device functions, before or after the entries that call them, and carry no
// "Compiling entry function" line. Only entry functions are reported; a properties or "Used"
// line belongs to the entry named by the latest "Compiling entry function" line only while the
// latest "Function properties" line names that same entry.
#include <map>
#include <regex>

#include "kcv/resource.hpp"
#include "resource/text_scan.hpp"

namespace kcv {
namespace {

using resource::line_error;
using resource::parse_count;
constexpr std::string_view kParser = "ptxas log";

struct LogState {
  ResourceReport report;
  std::map<std::pair<std::string, std::string>, std::size_t> index;  // (name, arch) -> kernel
  int current = -1;                                                  // entry compiled now
  bool in_entry = false;  // the latest context line names the current entry
};

void begin_entry(LogState& st, const std::string& name, const std::string& arch) {
  auto key = std::make_pair(name, arch);
  auto it = st.index.find(key);
  if (it == st.index.end()) {
    it = st.index.emplace(key, st.report.kernels.size()).first;
    KernelResources k;
    k.name = name;
    k.arch = arch;
    st.report.kernels.push_back(std::move(k));
  }
  st.current = static_cast<int>(it->second);
  st.in_entry = true;
}

// One comma-separated item of a "Used N registers, ..." line.
bool apply_used_item(KernelResources& k, std::string_view item) {
  static const std::regex kBarriers(R"(used (\d+) [a-z ]*barriers)");
  static const std::regex kBytes(R"((\d+) bytes ([a-z ]+)(\[\d+\])?)");
  static const std::regex kCount(R"((\d+) [a-z ]+)");
  const std::string s(item);
  std::smatch m;
  if (std::regex_match(s, m, kBarriers)) return true;
  if (std::regex_match(s, m, kBytes)) {
    const int64_t n = *parse_count(m[1].str());
    if (m[2] == "smem") k.shared_bytes = n;
    if (m[2] == "cmem") k.constant_bytes += n;
    return true;  // gmem, lmem, cumulative stack size: not per-kernel budgets we track
  }
  return std::regex_match(s, m, kCount);  // "1 textures", "2 samplers", ...
}

Status parse_used(LogState& st, std::size_t no, std::string_view line, std::string_view rest) {
  static const std::regex kUsed(R"(Used (\d+) registers(.*))");
  const std::string s(rest);
  std::smatch m;
  if (!std::regex_match(s, m, kUsed))
    return line_error(kParser, no, line, "unrecognised 'Used' line");
  if (st.current < 0 || !st.in_entry) return {};  // a non-entry function's usage
  KernelResources& k = st.report.kernels[static_cast<std::size_t>(st.current)];
  k.registers = *parse_count(m[1].str());
  const std::string items = m[2].str();  // split() returns views into it
  for (std::string_view item : resource::split(items, ',')) {
    if (item.empty()) continue;
    if (!apply_used_item(k, item)) {
      return line_error(kParser, no, line, "unrecognised item '" + std::string(item) + "'");
    }
  }
  return {};
}

Status parse_frame(LogState& st, std::size_t no, std::string_view line) {
  static const std::regex kFrame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::string s(resource::trim(line));
  std::smatch m;
  if (!std::regex_match(s, m, kFrame))
    return line_error(kParser, no, line, "unrecognised stack frame line");
  if (st.current < 0 || !st.in_entry) return {};
  KernelResources& k = st.report.kernels[static_cast<std::size_t>(st.current)];
  k.stack_bytes = *parse_count(m[1].str());
  k.spill_store_bytes = *parse_count(m[2].str());
  k.spill_load_bytes = *parse_count(m[3].str());
  return {};
}

Status parse_info(LogState& st, std::size_t no, std::string_view line, std::string_view rest) {
  static const std::regex kCompiling(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex kProperties(R"(Function properties for (\S+))");
  const std::string s(rest);
  std::smatch m;
  if (std::regex_match(s, m, kCompiling)) {
    begin_entry(st, m[1].str(), m[2].str());
  } else if (std::regex_match(s, m, kProperties)) {
    st.in_entry = st.current >= 0 &&
                  st.report.kernels[static_cast<std::size_t>(st.current)].name == m[1].str();
  } else if (resource::starts_with(rest, "Used ")) {
    return parse_used(st, no, line, rest);
  }
  return {};  // "0 bytes gmem", "Compile time = ...", "Overriding maximum register limit ..."
}

}  // namespace

Expected<ResourceReport> parse_ptxas_log(std::string_view text) {
  LogState st;
  st.report.format = ResourceFormat::kPtxasLog;
  const auto lines = resource::split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const std::string_view t = resource::trim(line);
    if (resource::starts_with(t, "ptxas error") || resource::starts_with(t, "ptxas fatal")) {
      return line_error(kParser, i + 1, line,
                        "ptxas reported an error; the log describes no compiled code");
    }
    Status s;
    if (resource::starts_with(t, "ptxas info")) {
      const std::size_t colon = t.find(':');
      if (colon == std::string_view::npos) return line_error(kParser, i + 1, line, "missing ':'");
      s = parse_info(st, i + 1, line, resource::trim(t.substr(colon + 1)));
    } else if (resource::contains(t, "bytes stack frame")) {
      s = parse_frame(st, i + 1, line);
    }
    if (!s) return s.error();
  }
  if (st.report.kernels.empty()) {
    return make_error(ErrorCode::kParse,
                      "no \"Compiling entry function\" line: not the output of ptxas -v "
                      "(nvcc -Xptxas -v), or a file without entry functions",
                      std::string(kParser));
  }
  return st.report;
}

}  // namespace kcv
