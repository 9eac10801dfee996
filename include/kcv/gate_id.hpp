// File: include/kcv/gate_id.hpp
// The twelve gate identifiers (IDs follow the seed paper; research note §4).
#pragma once

#include <array>
#include <string_view>

#include "kcv/expected.hpp"

namespace kcv {

enum class GateId { kCmp01, kCmp02, kCmp03, kOrd01, kOrd02, kOrd03, kExc01, kExc02, kPrc01, kPrc02, kRes01, kRes02 };

inline constexpr std::array<GateId, 12> kAllGates = {
    GateId::kCmp01, GateId::kCmp02, GateId::kCmp03, GateId::kOrd01, GateId::kOrd02, GateId::kOrd03,
    GateId::kExc01, GateId::kExc02, GateId::kPrc01, GateId::kPrc02, GateId::kRes01, GateId::kRes02};

std::string_view gate_code(GateId g);  // "CMP-01"
Expected<GateId> parse_gate(std::string_view code);  // accepts "CMP-01", "cmp-01", "CMP01"

}  // namespace kcv
