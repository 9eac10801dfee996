// File: python/src/core_util.cpp
// JSON text <-> Python objects for the kcv._core bindings. JSON goes through
// Python's own json module, so dicts from and to Python keep exactly Python's types.
#include "core_common.hpp"

namespace kcv::py {

std::string to_json_text(nb::handle obj) {
  return nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(obj));
}

nb::object from_json_text(const std::string& text) {
  return nb::module_::import_("json").attr("loads")(text);
}

}  // namespace kcv::py
