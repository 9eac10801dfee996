// File: src/audit/utf8.cpp
// A UTF-8 decoder that only measures: the length of the valid sequence starting at each byte
// (0: none), by the table of RFC 3629 section 4.
#include "audit/utf8.hpp"

#include <fmt/format.h>

namespace kcv::audit {
namespace {

bool cont(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid sequence at text[i], 0 when the byte there starts none.
std::size_t sequence_at(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = at(i);
  const std::size_t left = text.size() - i;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(at(i + 1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(at(i + 1)) || !cont(at(i + 2))) return 0;
    if (c == 0xE0 && at(i + 1) < 0xA0) return 0;  // overlong
    if (c == 0xED && at(i + 1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(at(i + 1)) || !cont(at(i + 2)) || !cont(at(i + 3))) return 0;
    if (c == 0xF0 && at(i + 1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && at(i + 1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string Utf8Error::describe() const {
  return fmt::format("not UTF-8: byte 0x{:02x} at column {}", byte, offset + 1);
}

std::optional<Utf8Error> first_invalid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_at(text, i);
    if (n == 0) return Utf8Error{i, static_cast<unsigned char>(text[i])};
    i += n;
  }
  return std::nullopt;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_at(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace kcv::audit
