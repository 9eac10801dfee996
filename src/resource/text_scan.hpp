// File: src/resource/text_scan.hpp
// Small line and number helpers shared by the three resource parsers (ptxas log, cuobjdump
// output, PTX). Numbers are parsed with std::from_chars so that a malformed count is an error,
// never a silent zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcv/expected.hpp"

namespace kcv::resource {

/// Lines without their terminators ("\n" or "\r\n").
std::vector<std::string_view> split_lines(std::string_view text);
std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
bool contains(std::string_view s, std::string_view needle);
/// A non-negative decimal integer occupying all of `s` (after trimming).
std::optional<int64_t> parse_count(std::string_view s);
/// A PTX integer literal: decimal or 0x hex, optional U suffix.
std::optional<int64_t> parse_ptx_integer(std::string_view s);
/// Splits on `sep`, trimming each piece; empty pieces are kept.
std::vector<std::string_view> split(std::string_view s, char sep);
/// A kParse error that quotes the offending line and its 1-based number.
Error line_error(std::string_view parser, std::size_t line_no, std::string_view line,
                 std::string_view what);

}  // namespace kcv::resource
