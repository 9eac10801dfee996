// File: glr/launch/cuda_status.cpp
// Formatting of CUDA errors for cuda_status.hpp. The file path is cut to the part from "glr/" on,
// so messages do not depend on where the repository was checked out.
#include "glr/launch/cuda_status.hpp"

#include <cstring>
#include <string>

namespace kcv::glr::gpu::detail {

Error cuda_error(cudaError_t code, const char* what, const char* file, int line) {
  const char* short_file = nullptr;  // the last "/glr/" of the path, from "glr/" on
  for (const char* at = std::strstr(file, "/glr/"); at != nullptr;
       at = std::strstr(at + 1, "/glr/"))
    short_file = at + 1;
  std::string message = cudaGetErrorName(code);
  message += ": ";
  message += cudaGetErrorString(code);
  message += " in `";
  message += what;
  message += "`";
  return make_error(
      ErrorCode::kInternal, std::move(message),
      std::string(short_file != nullptr ? short_file : file) + ":" + std::to_string(line));
}

}  // namespace kcv::glr::gpu::detail
