// File: glr/check/validation_check.hpp
// The launcher rejects bad arguments before touching the device, with a message naming the field:
// unsupported head dim, GVA ratio, batch > 1 with cu_seqlens, a non-monotone or wrongly ending host
// cu_seqlens, a gate or β given to a member without one (or missing), a non-finite scale, a short
// workspace. Needs no GPU: the pointers are never dereferenced.
#pragma once

#include <vector>

#include "check/check_result.hpp"

namespace kcv::glr::check {

std::vector<CheckResult> argument_validation();

}  // namespace kcv::glr::check
