// File: src/audit/mac.cpp
// OpenSSL's SHA-256, HMAC-SHA256, RAND_bytes and CRYPTO_memcmp behind small functions, and the
// key file. A key file is created with O_CREAT|O_EXCL and mode 0600 (never over an existing one)
// in a directory created 0700; a key file that its group or others may read or write is refused
// rather than used, since anyone who reads it can forge rows.
#include "audit/mac.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace kcv::audit::mac {
namespace {

constexpr const char* kDigits = "0123456789abcdef";

std::string hex_bytes(const unsigned char* p, std::size_t n) {
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

int digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::string hex(const Digest& d) { return hex_bytes(d.data(), d.size()); }

Digest sha256(std::string_view bytes) {
  Digest d{};
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), d.data(), &n, EVP_sha256(), nullptr);
  return d;
}

Digest hmac(const Key& key, std::string_view message) {
  Digest d{};
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), d.data(), &n);
  return d;
}

bool equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Digest xor_of(const Digest& a, const Digest& b) {
  Digest out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = a[i] ^ b[i];
  return out;
}

Expected<Digest> parse_hex(std::string_view text) {
  Digest d{};
  if (text.size() != 2 * d.size())
    return make_error(ErrorCode::kParse,
                      fmt::format("expected 64 hex digits, got {} characters", text.size()));
  for (std::size_t i = 0; i < d.size(); ++i) {
    const int hi = digit(text[2 * i]), lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return make_error(ErrorCode::kParse, "expected hex digits");
    d[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return d;
}

void Message::field(char tag, std::string_view payload) {
  bytes_ += tag;
  append_u64(bytes_, payload.size());
  bytes_.append(payload);
}

Message& Message::text(std::string_view s) {
  field('s', s);
  return *this;
}

Message& Message::null() {
  field('n', {});
  return *this;
}

Message& Message::integer(int64_t v) {
  std::string p;
  append_u64(p, static_cast<uint64_t>(v));
  field('i', p);
  return *this;
}

Message& Message::real(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  std::string p;
  append_u64(p, bits);
  field('r', p);
  return *this;
}

Expected<std::string> random_hex(int n) {
  std::vector<unsigned char> buf(static_cast<std::size_t>(n));
  if (RAND_bytes(buf.data(), n) != 1)
    return make_error(ErrorCode::kInternal, "RAND_bytes failed: no random bytes for a key");
  return hex_bytes(buf.data(), buf.size());
}

std::string default_key_dir() {
  if (const char* d = std::getenv("KCV_KEY_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/kcv/store-keys";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.config/kcv/store-keys";
}

std::string key_path(const std::string& dir, std::string_view store_id) {
  return fmt::format("{}/{}.key", dir.empty() ? default_key_dir() : dir, store_id);
}

Expected<Key> read_key_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return make_error(ErrorCode::kNotFound, fmt::format("store key: {}", errno_text()), path);
  if ((st.st_mode & 077) != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("store key: mode {:04o} lets others read or write it (chmod 600)",
                                  st.st_mode & 07777),
                      path);
  }
  std::ifstream in(path);
  std::string text;
  if (!in || !std::getline(in, text))
    return make_error(ErrorCode::kIo, "store key: cannot be read", path);
  Expected<Digest> d = parse_hex(text);
  if (!d) return make_error(ErrorCode::kParse, "store key: " + d.error().message, path);
  Key k;
  k.bytes = *d;
  return k;
}

Expected<Key> create_key_file(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir)) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return make_error(ErrorCode::kIo, "store key directory: " + ec.message(), dir.string());
    ::chmod(dir.c_str(), 0700);
  }
  Expected<std::string> text = random_hex(32);
  if (!text) return text.error();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return make_error(ErrorCode::kIo, fmt::format("store key: cannot create: {}", errno_text()),
                      path);
  const std::string line = *text + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced)
    return make_error(ErrorCode::kIo, fmt::format("store key: cannot write: {}", errno_text()),
                      path);
  Expected<Digest> d = parse_hex(*text);
  if (!d) return d.error();
  Key k;
  k.bytes = *d;
  return k;
}

}  // namespace kcv::audit::mac
