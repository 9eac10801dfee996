// File: python/src/core_util.cpp
// Error mapping and JSON text <-> Python objects for the kcv._core bindings. JSON goes through
// Python's own json module, so dicts from and to Python keep exactly Python's types.
#include "core_common.hpp"

namespace kcv::py {

void raise(const Error& e) {
  if (e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kParse)
    throw nb::value_error(e.to_string().c_str());
  throw std::runtime_error(e.to_string());
}

std::string to_json_text(nb::handle obj) {
  return nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(obj));
}

nb::object from_json_text(const std::string& text) {
  return nb::module_::import_("json").attr("loads")(text);
}

}  // namespace kcv::py
