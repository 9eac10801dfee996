// File: src/audit/shard.cpp
// Deterministic sharding: a row belongs to shard (FNV-1a-64(id) mod n). FNV-1a is fixed by its
// spec (offset basis 14695981039346656037, prime 1099511628211), byte-order free and needs no
// seed, so every machine and every scheduler (Slurm arrays, Ray) splits a corpus identically and
// the n shards partition it exactly. Shards are 0-based: --shard 0/4 .. --shard 3/4.
#include <fmt/format.h>

#include <charconv>

#include "kcv/audit.hpp"

namespace kcv::audit {
namespace {

Expected<int> parse_part(std::string_view text, std::string_view what) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("shard: {} '{}' is not a number (expected i/n)", what, text));
  }
  return value;
}

}  // namespace

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

bool Shard::contains(std::string_view key) const {
  return count <= 1 || fnv1a64(key) % static_cast<uint64_t>(count) == static_cast<uint64_t>(index);
}

Expected<Shard> parse_shard(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("shard: '{}' is not i/n", text));
  }
  Expected<int> i = parse_part(text.substr(0, slash), "index");
  if (!i) return i.error();
  Expected<int> n = parse_part(text.substr(slash + 1), "count");
  if (!n) return n.error();
  if (*n < 1 || *i < 0 || *i >= *n) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("shard: '{}' needs 0 <= i < n (shards are 0-based)", text));
  }
  return Shard{*i, *n};
}

std::string shard_key(const RowError& e) {
  if (!e.id.empty()) return e.id;
  const size_t slash = e.file.find_last_of('/');
  const std::string name = slash == std::string::npos ? e.file : e.file.substr(slash + 1);
  return fmt::format("{}:{}", name, e.line);
}

}  // namespace kcv::audit
