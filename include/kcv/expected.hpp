// File: include/kcv/expected.hpp
// Value-or-error returns at module boundaries. C++20 has no std::expected, so this is a small
// type with the same member names (has_value, value, error, operator bool), to be swapped for
// std::expected when the project moves to C++23. Errors are kcv's own faults; a misbehaving
// candidate is data (a GateResult), never an Error.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kcv {

enum class ErrorCode {
  kInvalidArgument,  // bad user input: unknown op, malformed contract, bad flag value
  kNotFound,         // a file, symbol, kernel or op that does not exist
  kIo,               // a read or write that failed
  kParse,            // text that could not be parsed (JSON, ptxas output, probe token)
  kCandidate,        // the candidate cannot be used at all (missing entry point, wrong ABI)
  kInternal,         // a bug in kcv
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string context;  // where: row id, gate, probe, file; empty when obvious
  std::string worker_class;  // a worker's error class (docs/06 §7.1: "import_error", ...); else empty
  std::string worker_cause;  // a worker's failure cause (docs/06 §7.1: "cuda_unavailable", ...)
  bool worker_reusable = false;  // a failed load's worker takes another load (docs/06 §2)

  std::string to_string() const {
    return context.empty() ? message : context + ": " + message;
  }
};

inline Error make_error(ErrorCode code, std::string message, std::string context = {}) {
  return Error{code, std::move(message), std::move(context)};
}

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Expected(Error error) : v_(std::move(error)) {}      // NOLINT(google-explicit-constructor)

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Expected<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace kcv
