// File: src/audit/mac.hpp
// The store's cryptography, all of it from OpenSSL's libcrypto (nothing hand-written): SHA-256
// for the content hash of a corpus row, HMAC-SHA256 for the MAC of a store row, the system's
// CSPRNG for keys and store ids, and a constant-time comparison. Also the store key's file: 32
// random bytes as hex, in a directory outside the store's (docs/07_audit_store.md, "Integrity").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kcv/expected.hpp"

namespace kcv::audit::mac {

using Digest = std::array<unsigned char, 32>;

struct Key {
  std::array<unsigned char, 32> bytes{};
};

std::string hex(const Digest& d);
Digest sha256(std::string_view bytes);
Digest hmac(const Key& key, std::string_view message);
/// Equal in constant time (CRYPTO_memcmp); false when the lengths differ.
bool equal(std::string_view a, std::string_view b);
Digest xor_of(const Digest& a, const Digest& b);
/// 64 hex digits back to a digest.
Expected<Digest> parse_hex(std::string_view text);

/// An unambiguous byte string of typed, length-prefixed fields: what is hashed or MACed. Two
/// messages are equal only when their field sequences are (a text field never runs into the
/// next, a NULL differs from an empty text, an integer from its decimal text).
class Message {
 public:
  explicit Message(std::string_view domain) { text(domain); }
  Message& text(std::string_view s);
  Message& null();
  Message& integer(int64_t v);
  Message& real(double v);
  Message& opt(const std::optional<std::string>& s) { return s ? text(*s) : null(); }
  const std::string& bytes() const { return bytes_; }

 private:
  void field(char tag, std::string_view payload);
  std::string bytes_;
};

/// `n` random bytes from the system's CSPRNG, as hex.
Expected<std::string> random_hex(int n);

/// Where store keys live unless told otherwise: $KCV_KEY_DIR, else $XDG_CONFIG_HOME/kcv/store-keys,
/// else $HOME/.config/kcv/store-keys.
std::string default_key_dir();
/// <dir>/<store id>.key (`dir` empty: default_key_dir()).
std::string key_path(const std::string& dir, std::string_view store_id);

/// Reads a key file; refuses one that others than its owner may read or write.
Expected<Key> read_key_file(const std::string& path);
/// Creates a fresh random key at `path` (mode 0600, never overwriting; its directory is created
/// with mode 0700 when absent).
Expected<Key> create_key_file(const std::string& path);

}  // namespace kcv::audit::mac
