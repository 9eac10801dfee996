// File: glr/oracle/validate.hpp
// Eager input checks shared by both references (the public member-level checks are declared in
// kcv/glr/problem.hpp). Every message names the offending field, so a caller (and later the
// Python front) can report it as is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kcv/expected.hpp"
#include "kcv/glr/oracle.hpp"

namespace kcv::glr::detail {

/// Dimensions positive, HV a multiple of H, cu_seqlens from 0 to tokens strictly increasing.
[[nodiscard]] Status validate_shape(const Shape& s);

/// An ErrorCode::kInvalidArgument error in the "glr" context.
[[nodiscard]] Error invalid_argument(std::string message);

/// `field` holds exactly `expected` values.
[[nodiscard]] Status validate_size(std::string_view field, std::size_t actual,
                                   std::int64_t expected);

/// Shape, sizes of q, k, v, g (per gate kind), erase, write, h0, finite scale.
[[nodiscard]] Status validate_recurrence(const Recurrence& r);

}  // namespace kcv::glr::detail
