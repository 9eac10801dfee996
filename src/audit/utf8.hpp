// File: src/audit/utf8.hpp
// UTF-8 validation of corpus lines (RFC 3629: no overlong forms, no surrogates, nothing above
// U+10FFFF; what Python's strict decoder accepts too), so the C++ reader and the Python
// orchestrator agree on every row: a line that is not UTF-8 is a malformed row naming its first
// bad byte, and every text handed on is valid UTF-8.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kcv::audit {

struct Utf8Error {
  std::size_t offset = 0;  // 0-based byte offset of the first byte of the bad sequence
  unsigned char byte = 0;
  /// "not UTF-8: byte 0xff at column 58"
  std::string describe() const;
};

/// The first byte that does not start a valid UTF-8 sequence, or nullopt.
std::optional<Utf8Error> first_invalid_utf8(std::string_view text);
/// `text` with each invalid byte replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

}  // namespace kcv::audit
