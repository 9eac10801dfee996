// File: src/contract/gate_id.cpp
// Gate codes and their parsing; the one table of the twelve IDs.
#include "kcv/gate_id.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace kcv {

namespace {
constexpr std::array<std::string_view, 12> kCodes = {"CMP-01", "CMP-02", "CMP-03", "ORD-01",
                                                     "ORD-02", "ORD-03", "EXC-01", "EXC-02",
                                                     "PRC-01", "PRC-02", "RES-01", "RES-02"};
}  // namespace

std::string_view gate_code(GateId g) { return kCodes[static_cast<std::size_t>(g)]; }

Expected<GateId> parse_gate(std::string_view code) {
  std::string norm;
  for (char ch : code) {
    if (ch != '-' && ch != '_') norm.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
  }
  for (std::size_t i = 0; i < kCodes.size(); ++i) {
    std::string c(kCodes[i]);
    c.erase(std::remove(c.begin(), c.end(), '-'), c.end());
    if (c == norm) return kAllGates[i];
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown gate '" + std::string(code) + "' (see `kcv gates` for the twelve IDs)");
}

}  // namespace kcv
