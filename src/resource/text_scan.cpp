// File: src/resource/text_scan.cpp
// Implementation of the shared text helpers of the resource parsers.
#include "resource/text_scan.hpp"

#include <fmt/format.h>

#include <charconv>

namespace kcv::resource {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }

bool contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

std::optional<int64_t> parse_count(std::string_view s) {
  s = trim(s);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_ptx_integer(std::string_view s) {
  s = trim(s);
  if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.remove_suffix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = s.find(sep, start);
    parts.push_back(trim(s.substr(start, end == std::string_view::npos ? end : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

Error line_error(std::string_view parser, std::size_t line_no, std::string_view line,
                 std::string_view what) {
  return make_error(ErrorCode::kParse, fmt::format("{} (line {}: '{}')", what, line_no, trim(line)),
                    std::string(parser));
}

}  // namespace kcv::resource
