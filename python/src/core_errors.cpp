// File: python/src/core_errors.cpp
// kcv's C++ error codes as Python exception classes of kcv._core. A kcv Error crosses the
// nanobind edge as the class of its ErrorCode, carrying the code, the context and the worker's
// error class as attributes, so Python code branches on types and fields and never on message
// text. Each class also derives from ValueError (bad input, unparsable text) or RuntimeError (the
// rest), so a caller's `except ValueError` or `except RuntimeError` keeps working.
#include <array>

#include "core_common.hpp"

namespace kcv::py {
namespace {

struct ErrorClass {
  ErrorCode code;
  const char* name;     // the Python class name in kcv._core
  const char* code_id;  // Error.code as Python sees it
  const char* builtin;  // the second base
  const char* doc;
};

constexpr std::array<ErrorClass, 6> kClasses{{
    {ErrorCode::kInvalidArgument, "InvalidArgumentError", "invalid_argument", "ValueError",
     "Bad input: an unknown name, a malformed contract or row field, a bad option value."},
    {ErrorCode::kNotFound, "NotFoundError", "not_found", "RuntimeError",
     "A file, symbol, kernel, op or stored record that does not exist."},
    {ErrorCode::kIo, "IoError", "io", "RuntimeError", "A read or write that failed."},
    {ErrorCode::kParse, "ParseError", "parse", "ValueError",
     "Text that could not be parsed (JSON, a probe token, a tool's output)."},
    {ErrorCode::kCandidate, "CandidateError", "candidate", "RuntimeError",
     "The candidate or its worker cannot be used (does not load, no entry point, wrong ABI); "
     "worker_class names the worker's error class (docs/06 section 7.1) when it sent one."},
    {ErrorCode::kInternal, "InternalError", "internal", "RuntimeError", "A bug in kcv."},
}};

const ErrorClass& class_of(ErrorCode code) {
  for (const ErrorClass& c : kClasses)
    if (c.code == code) return c;
  return kClasses.back();
}

}  // namespace

void raise(const Error& e, std::string_view what) {
  // Callers may run without the GIL (a Store operation inside gil_scoped_release); the exception
  // object is built with it held. PyGILState_Ensure nests, so a caller holding it is fine too.
  nb::gil_scoped_acquire gil;
  const ErrorClass& c = class_of(e.code);
  nb::object cls = nb::module_::import_("kcv._core").attr(c.name);
  const std::string message =
      what.empty() ? e.to_string() : std::string(what) + ": " + e.to_string();
  nb::object exc = cls(message);
  exc.attr("code") = c.code_id;
  exc.attr("context") = e.context;
  exc.attr("worker_class") = e.worker_class.empty() ? nb::none() : nb::cast(e.worker_class);
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw nb::python_error();
}

void raise_invalid(const std::string& message) {
  raise(make_error(ErrorCode::kInvalidArgument, message));
}

void bind_errors(nb::module_& m) {
  nb::module_ builtins = nb::module_::import_("builtins");
  nb::object type = builtins.attr("type");
  nb::dict base_ns;
  base_ns["__module__"] = "kcv._core";
  base_ns["__doc__"] =
      "A kcv error. code: 'invalid_argument', 'not_found', 'io', 'parse', 'candidate' or "
      "'internal'; context: where (row id, gate, file) or ''; worker_class: the worker's error "
      "class or None.";
  nb::object base = type("Error", nb::make_tuple(builtins.attr("Exception")), base_ns);
  m.attr("Error") = base;
  for (const ErrorClass& c : kClasses) {
    nb::dict ns;
    ns["__module__"] = "kcv._core";
    ns["__doc__"] = c.doc;
    m.attr(c.name) = type(c.name, nb::make_tuple(base, builtins.attr(c.builtin)), ns);
  }
}

}  // namespace kcv::py
