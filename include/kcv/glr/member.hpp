// File: include/kcv/glr/member.hpp
// The six members of the gated linear recurrence family (gdn-spec.md §1) and the two properties
// that tell them apart: the kind of log-decay gate (none, one scalar per token and head, or one
// value per key channel) and whether the delta rule is on (erase b = β·1, write w = β·1) or off
// (b = 0, w = 1). Everything else in kcv::glr is written once against these two properties, so the
// references (and later the kernels) are one parameterised implementation, not six copies.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace kcv::glr {

/// How the log-decay g enters: absent, one scalar per (token, value head), or one per key channel.
enum class GateKind { kNone, kScalar, kChannel };

/// The members, named after the fla ops they mirror (gdn-spec.md §1, §11).
enum class Member {
  kLinearAttention,  ///< chunk_linear_attn: no gate, no delta rule
  kSimpleGla,        ///< chunk_simple_gla (SSD / Mamba-2 / RetNet): scalar gate, no delta rule
  kGla,              ///< chunk_gla: per-channel gate, no delta rule
  kDeltaNet,         ///< chunk_delta_rule: no gate, delta rule
  kGatedDeltaNet,    ///< chunk_gated_delta_rule (GDN): scalar gate, delta rule
  kKda,              ///< chunk_kda: per-channel gate, delta rule
};

struct MemberTraits {
  GateKind gate = GateKind::kNone;
  bool delta_rule = false;  ///< erase b = β·1 and write w = β·1 (else b = 0, w = 1, no β input)
};

constexpr MemberTraits traits(Member m) {
  switch (m) {
    case Member::kLinearAttention:
      return {GateKind::kNone, false};
    case Member::kSimpleGla:
      return {GateKind::kScalar, false};
    case Member::kGla:
      return {GateKind::kChannel, false};
    case Member::kDeltaNet:
      return {GateKind::kNone, true};
    case Member::kGatedDeltaNet:
      return {GateKind::kScalar, true};
    case Member::kKda:
      return {GateKind::kChannel, true};
  }
  return {};
}

/// Short lower-case name, stable for test names and reports ("la", "ssd", "gla", "deltanet", ...).
constexpr std::string_view name(Member m) {
  switch (m) {
    case Member::kLinearAttention:
      return "la";
    case Member::kSimpleGla:
      return "ssd";
    case Member::kGla:
      return "gla";
    case Member::kDeltaNet:
      return "deltanet";
    case Member::kGatedDeltaNet:
      return "gdn";
    case Member::kKda:
      return "kda";
  }
  return "?";
}

inline constexpr std::array<Member, 6> kAllMembers = {
    Member::kLinearAttention, Member::kSimpleGla,     Member::kGla,
    Member::kDeltaNet,        Member::kGatedDeltaNet, Member::kKda};

/// Number of g values per (token, value head): 0, 1 or the key dimension.
constexpr std::int64_t gate_width(GateKind kind, std::int64_t key_dim) {
  return kind == GateKind::kNone ? 0 : (kind == GateKind::kScalar ? 1 : key_dim);
}

}  // namespace kcv::glr
