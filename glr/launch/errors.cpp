// File: glr/launch/errors.cpp
// invalid_argument of errors.hpp.
#include "glr/launch/errors.hpp"

namespace kcv::glr::gpu::detail {

Error invalid_argument(const std::string& message) {
  return make_error(ErrorCode::kInvalidArgument, message, "glr::gpu");
}

}  // namespace kcv::glr::gpu::detail
