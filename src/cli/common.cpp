// File: src/cli/common.cpp
// Shared flag parsing and loading for the commands (see common.hpp).
#include "cli/common.hpp"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/cli_error.hpp"
#include "kcv/op.hpp"

namespace kcv::cli {

CandidateRef parse_candidate_ref(const std::string& text) {
  if (text.empty()) usage_error("--candidate: a shared library path is required");
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return {text, ""};
  std::string kernel = text.substr(colon + 1);
  if (kernel.empty() || kernel.find('/') != std::string::npos) return {text, ""};
  return {text.substr(0, colon), kernel};
}

std::string loadable_path(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0) usage_error(fmt::format("--candidate: no such file '{}'", path));
  return path.find('/') == std::string::npos ? "./" + path : path;
}

std::vector<GateId> parse_gate_list(const std::string& text) {
  std::vector<GateId> gates;
  std::size_t begin = 0;
  while (begin <= text.size() && !text.empty()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string code = text.substr(begin, end - begin);
    auto id = parse_gate(code);
    if (!id) usage_error(fmt::format("--gates: unknown gate '{}' (gates: {})", code, all_gate_codes()));
    gates.push_back(*id);
    begin = end + 1;
  }
  return gates;
}

std::optional<ProfileId> parse_profile_flag(const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto id = parse_profile(text);
  if (!id) {
    std::vector<std::string_view> names;
    for (const Profile& p : all_profiles()) names.push_back(p.name);
    usage_error(fmt::format("--profile: unknown profile '{}' (profiles: {})", text, fmt::join(names, ", ")));
  }
  return *id;
}

void check_op(const std::string& op) {
  if (op.empty() || find_op(op) != nullptr) return;
  usage_error(fmt::format("--op: unknown op '{}' (see `kcv ops`)", op));
}

std::unique_ptr<Executor> make_executor(const std::string& name) {
  if (name == "forked") return make_forked_executor();
  if (name == "in-process") return make_in_process_executor();
  usage_error(fmt::format("--executor: unknown executor '{}' (forked, in-process)", name));
}

void write_text_file(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) usage_error(fmt::format("{}: cannot write '{}'", flag, path));
}

std::string all_gate_codes() {
  std::vector<std::string_view> codes;
  for (GateId id : kAllGates) codes.push_back(gate_code(id));
  return fmt::format("{}", fmt::join(codes, ", "));
}

bool is_terminal(int fd) { return isatty(fd) == 1; }

}  // namespace kcv::cli
