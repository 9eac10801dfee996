// File: glr/launch/member_dispatch.hpp
// for_member(m, f): calls f.template operator()<gate kind, delta rule>() for the member, the one
// place where a runtime Member becomes the two compile-time parameters of the stage templates.
#pragma once

#include "glr/launch/cuda_status.hpp"
#include "kcv/glr/member.hpp"

namespace kcv::glr::gpu::detail {

template <typename F>
Status for_member(Member m, F&& f) {
  switch (m) {
    case Member::kLinearAttention:
      return f.template operator()<GateKind::kNone, false>();
    case Member::kSimpleGla:
      return f.template operator()<GateKind::kScalar, false>();
    case Member::kGla:
      return f.template operator()<GateKind::kChannel, false>();
    case Member::kDeltaNet:
      return f.template operator()<GateKind::kNone, true>();
    case Member::kGatedDeltaNet:
      return f.template operator()<GateKind::kScalar, true>();
    case Member::kKda:
      return f.template operator()<GateKind::kChannel, true>();
  }
  return invalid_argument("unknown member");
}

}  // namespace kcv::glr::gpu::detail
