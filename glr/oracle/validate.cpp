// File: glr/oracle/validate.cpp
// Input validation for the GLR references. Checks run before any arithmetic and stop at the first
// problem; the message says which field is wrong and what was expected.
#include "glr/oracle/validate.hpp"

#include <cmath>
#include <string>

namespace kcv::glr {
namespace detail {

Error invalid_argument(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message), "glr");
}

Status validate_shape(const Shape& s) {
  if (s.key_dim < 1)
    return invalid_argument("key_dim must be >= 1, got " + std::to_string(s.key_dim));
  if (s.value_dim < 1)
    return invalid_argument("value_dim must be >= 1, got " + std::to_string(s.value_dim));
  if (s.qk_heads < 1)
    return invalid_argument("qk_heads must be >= 1, got " + std::to_string(s.qk_heads));
  if (s.v_heads < 1 || s.v_heads % s.qk_heads != 0)
    return invalid_argument("v_heads must be a positive multiple of qk_heads (GVA), got v_heads=" +
                            std::to_string(s.v_heads) + " qk_heads=" + std::to_string(s.qk_heads));
  if (s.tokens < 1) return invalid_argument("tokens must be >= 1, got " + std::to_string(s.tokens));
  if (s.cu_seqlens.empty()) return {};
  if (s.cu_seqlens.size() < 2) return invalid_argument("cu_seqlens needs at least 2 offsets");
  if (s.cu_seqlens.front() != 0) return invalid_argument("cu_seqlens must start at 0");
  if (s.cu_seqlens.back() != s.tokens)
    return invalid_argument("cu_seqlens must end at tokens=" + std::to_string(s.tokens) + ", got " +
                            std::to_string(s.cu_seqlens.back()));
  for (std::size_t i = 1; i < s.cu_seqlens.size(); ++i)
    if (s.cu_seqlens[i] <= s.cu_seqlens[i - 1])
      return invalid_argument(
          "cu_seqlens must be strictly increasing (no empty sequences), offset " +
          std::to_string(i) + " is " + std::to_string(s.cu_seqlens[i]));
  return {};
}

Status validate_size(std::string_view field, std::size_t actual, std::int64_t expected) {
  if (static_cast<std::int64_t>(actual) == expected) return {};
  return invalid_argument("field '" + std::string(field) + "': expected " +
                          std::to_string(expected) + " values, got " + std::to_string(actual));
}

Status validate_recurrence(const Recurrence& r) {
  const Shape& s = r.shape;
  if (Status st = validate_shape(s); !st) return st;
  const std::int64_t per_head = s.tokens * s.v_heads;
  if (Status st = validate_size("q", r.q.size(), s.qk_size()); !st) return st;
  if (Status st = validate_size("k", r.k.size(), s.qk_size()); !st) return st;
  if (Status st = validate_size("v", r.v.size(), s.v_size()); !st) return st;
  if (Status st = validate_size("g", r.g.size(), per_head * gate_width(r.gate, s.key_dim)); !st)
    return st;
  if (Status st = validate_size("erase", r.erase.size(), per_head * s.key_dim); !st) return st;
  if (Status st = validate_size("write", r.write.size(), per_head * s.value_dim); !st) return st;
  if (!r.h0.empty())
    if (Status st = validate_size("h0", r.h0.size(), s.state_size()); !st) return st;
  if (!std::isfinite(r.scale)) return invalid_argument("scale must be finite");
  return {};
}

}  // namespace detail

Status validate(Member member, const Problem& p) {
  const Shape& s = p.shape;
  if (Status st = detail::validate_shape(s); !st) return st;
  const MemberTraits tr = traits(member);
  const std::int64_t per_head = s.tokens * s.v_heads;
  if (Status st = detail::validate_size("q", p.q.size(), s.qk_size()); !st) return st;
  if (Status st = detail::validate_size("k", p.k.size(), s.qk_size()); !st) return st;
  if (Status st = detail::validate_size("v", p.v.size(), s.v_size()); !st) return st;
  if (Status st = detail::validate_size("g", p.g.size(), per_head * gate_width(tr.gate, s.key_dim));
      !st)
    return st;
  if (Status st = detail::validate_size("beta", p.beta.size(), tr.delta_rule ? per_head : 0); !st)
    return st;
  if (!p.h0.empty())
    if (Status st = detail::validate_size("h0", p.h0.size(), s.state_size()); !st) return st;
  if (!std::isfinite(p.scale)) return detail::invalid_argument("scale must be finite");
  return {};
}

Status validate(const Problem& p, const Cotangents& cot) {
  if (Status st = detail::validate_size("d_o", cot.d_o.size(), p.shape.v_size()); !st) return st;
  if (!cot.d_final_state.empty())
    return detail::validate_size("d_final_state", cot.d_final_state.size(), p.shape.state_size());
  return {};
}

}  // namespace kcv::glr
