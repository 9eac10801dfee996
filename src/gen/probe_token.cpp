// File: src/gen/probe_token.cpp
// Probe <-> one-line JSON token for `kcv replay`. Writing uses nlohmann::ordered_json so the
// field order is the struct's order and tokens are byte-stable. Reading is strict: unknown
// fields, wrong types and out-of-range values are errors that name the field by its path
// ("inputs[1].layout.step"), because a replay that silently dropped a field would not
// reproduce. The seed is a JSON unsigned integer, exact over the full uint64 range.
#include <nlohmann/json.hpp>

#include <initializer_list>
#include <limits>
#include <string>

#include "kcv/probe.hpp"

namespace kcv {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// ---------------------------------------------------------------- writing

ordered_json layout_json(const Layout& l) {
  ordered_json j;
  j["kind"] = layout_name(l.kind);
  j["step"] = l.step;
  j["offset"] = l.offset;
  j["pad"] = l.pad;
  return j;
}

ordered_json inputs_json(const std::vector<InputSpec>& inputs) {
  ordered_json arr = ordered_json::array();
  for (const InputSpec& in : inputs) {
    ordered_json j;
    j["dtype"] = dtype_name(in.dtype);
    j["dist"] = distribution_name(in.dist);
    j["layout"] = layout_json(in.layout);
    arr.push_back(std::move(j));
  }
  return arr;
}

ordered_json injections_json(const std::vector<Injection>& injections) {
  ordered_json arr = ordered_json::array();
  for (const Injection& inj : injections) {
    arr.push_back(ordered_json{{"input", inj.input}, {"index", inj.index}, {"value", special_name(inj.value)}});
  }
  return arr;
}

ordered_json launch_json(const std::vector<LaunchConfig>& configs) {
  ordered_json arr = ordered_json::array();
  for (const LaunchConfig& c : configs) {
    arr.push_back(ordered_json{{"block", c.block}, {"threads", c.threads}});
  }
  return arr;
}

// ---------------------------------------------------------------- reading

// Collects the first error; every getter returns a harmless default after an error.
class Reader {
 public:
  bool ok() const { return error_.empty(); }
  Error error() const { return make_error(ErrorCode::kParse, error_, "probe token"); }

  void fail(const std::string& path, const std::string& what) {
    if (ok()) {
      error_ = "field '" + path + "': " + what;
    }
  }

  bool check_object(const json& j, const std::string& path, std::initializer_list<std::string_view> known) {
    if (!j.is_object()) {
      fail(path, "expected an object");
      return false;
    }
    for (const auto& item : j.items()) {
      bool found = false;
      for (std::string_view k : known) {
        found = found || item.key() == k;
      }
      if (!found) {
        fail(join(path, item.key()), "unknown field");
      }
    }
    return ok();
  }

  const json* field(const json& obj, const std::string& path, const char* key, bool required) {
    const auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) {
        fail(join(path, key), "missing");
      }
      return nullptr;
    }
    return &*it;
  }

  int64_t integer(const json& obj, const std::string& path, const char* key, int64_t def,
                  int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max()) {
    const json* v = field(obj, path, key, false);
    if (v == nullptr) {
      return def;
    }
    if (!v->is_number_integer() || (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max))) {
      fail(join(path, key), "expected an integer");
      return def;
    }
    const int64_t x = v->get<int64_t>();
    if (x < min || x > max) {
      fail(join(path, key), "value " + std::to_string(x) + " out of range [" + std::to_string(min) + ", " +
                                std::to_string(max) + "]");
      return def;
    }
    return x;
  }

  bool boolean(const json& obj, const std::string& path, const char* key, bool def) {
    const json* v = field(obj, path, key, false);
    if (v == nullptr) {
      return def;
    }
    if (!v->is_boolean()) {
      fail(join(path, key), "expected true or false");
      return def;
    }
    return v->get<bool>();
  }

  std::string string(const json& obj, const std::string& path, const char* key, bool required) {
    const json* v = field(obj, path, key, required);
    if (v == nullptr) {
      return {};
    }
    if (!v->is_string()) {
      fail(join(path, key), "expected a string");
      return {};
    }
    return v->get<std::string>();
  }

  template <typename T>
  T parsed(Expected<T> e, const std::string& path, T def) {
    if (!e) {
      fail(path, e.error().message);
      return def;
    }
    return e.value();
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

 private:
  std::string error_;
};

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

Layout read_layout(Reader& r, const json& j, const std::string& path) {
  Layout l;
  if (!r.check_object(j, path, {"kind", "step", "offset", "pad"})) {
    return l;
  }
  l.kind = r.parsed(parse_layout_kind(r.string(j, path, "kind", true)), path + ".kind", LayoutKind::kContiguous);
  l.step = r.integer(j, path, "step", l.step, 1);
  l.offset = r.integer(j, path, "offset", l.offset, 0);
  l.pad = r.integer(j, path, "pad", l.pad, 0);
  return l;
}

InputSpec read_input(Reader& r, const json& j, const std::string& path) {
  InputSpec in;
  if (!r.check_object(j, path, {"dtype", "dist", "layout"})) {
    return in;
  }
  in.dtype = r.parsed(parse_dtype(r.string(j, path, "dtype", true)), path + ".dtype", DType::kF32);
  in.dist = r.parsed(parse_distribution(r.string(j, path, "dist", true)), path + ".dist", Distribution::kNormal);
  if (const json* l = r.field(j, path, "layout", false)) {
    in.layout = read_layout(r, *l, path + ".layout");
  }
  return in;
}

Injection read_injection(Reader& r, const json& j, const std::string& path) {
  Injection inj;
  if (!r.check_object(j, path, {"input", "index", "value"})) {
    return inj;
  }
  inj.input = static_cast<int>(r.integer(j, path, "input", 0, 0, kMaxInt32));
  inj.index = r.integer(j, path, "index", 0, 0);
  inj.value = r.parsed(parse_special(r.string(j, path, "value", true)), path + ".value", Special::kNaN);
  return inj;
}

LaunchConfig read_launch(Reader& r, const json& j, const std::string& path) {
  LaunchConfig c;
  if (!r.check_object(j, path, {"block", "threads"})) {
    return c;
  }
  c.block = static_cast<int32_t>(r.integer(j, path, "block", c.block, 0, kMaxInt32));
  c.threads = static_cast<int32_t>(r.integer(j, path, "threads", c.threads, 0, kMaxInt32));
  return c;
}

template <typename T, typename Fn>
std::vector<T> read_array(Reader& r, const json& obj, const char* key, bool required, Fn read_one) {
  std::vector<T> out;
  const json* arr = r.field(obj, "", key, required);
  if (arr == nullptr) {
    return out;
  }
  if (!arr->is_array()) {
    r.fail(key, "expected an array");
    return out;
  }
  for (std::size_t i = 0; i < arr->size() && r.ok(); ++i) {
    out.push_back(read_one(r, (*arr)[i], std::string(key) + "[" + std::to_string(i) + "]"));
  }
  return out;
}

uint64_t read_seed(Reader& r, const json& obj) {
  const json* v = r.field(obj, "", "seed", true);
  if (v == nullptr) {
    return 0;
  }
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0)) {
    r.fail("seed", "expected an unsigned 64-bit integer");
    return 0;
  }
  return v->get<uint64_t>();
}

std::map<std::string, int64_t> read_sizes(Reader& r, const json& obj) {
  std::map<std::string, int64_t> sizes;
  const json* v = r.field(obj, "", "sizes", true);
  if (v == nullptr) {
    return sizes;
  }
  if (!v->is_object()) {
    r.fail("sizes", "expected an object of size symbols");
    return sizes;
  }
  for (const auto& item : v->items()) {
    sizes[item.key()] = r.integer(*v, "sizes", item.key().c_str(), 0, 0);
  }
  return sizes;
}

Probe read_probe(Reader& r, const json& j) {
  Probe p;
  if (!r.check_object(j, "",
                      {"gate", "label", "seed", "sizes", "inputs", "injections", "repetitions",
                       "shift_addresses", "launch_configs", "concurrency", "randomize_guards",
                       "autotune_configs", "segments", "tags"})) {
    return p;
  }
  p.gate = r.parsed(parse_gate(r.string(j, "", "gate", true)), "gate", GateId::kCmp01);
  p.label = r.string(j, "", "label", false);
  p.seed = read_seed(r, j);
  p.sizes = read_sizes(r, j);
  p.inputs = read_array<InputSpec>(r, j, "inputs", true, read_input);
  p.injections = read_array<Injection>(r, j, "injections", false, read_injection);
  p.repetitions = static_cast<int>(r.integer(j, "", "repetitions", 1, 1, kMaxInt32));
  p.shift_addresses = r.boolean(j, "", "shift_addresses", false);
  p.launch_configs = read_array<LaunchConfig>(r, j, "launch_configs", false, read_launch);
  p.concurrency = static_cast<int>(r.integer(j, "", "concurrency", 1, 1, kMaxInt32));
  p.randomize_guards = r.boolean(j, "", "randomize_guards", false);
  if (const json* v = r.field(j, "", "autotune_configs", false); v != nullptr) {
    if (!v->is_array()) r.fail("autotune_configs", "expected an array of integers");
    for (std::size_t k = 0; v->is_array() && k < v->size(); ++k) {
      const json& x = (*v)[k];
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > kMaxInt32) {
        r.fail("autotune_configs[" + std::to_string(k) + "]", "expected an integer in [0, 2^31)");
        break;
      }
      p.autotune_configs.push_back(static_cast<int>(x.get<int64_t>()));
    }
  }
  if (const json* v = r.field(j, "", "segments", false); v != nullptr) {
    if (!v->is_array()) r.fail("segments", "expected an array of positive integers");
    for (std::size_t k = 0; v->is_array() && k < v->size(); ++k) {
      const json& x = (*v)[k];
      if (!x.is_number_integer() || x.get<int64_t>() < 1) {
        r.fail("segments[" + std::to_string(k) + "]", "expected a positive integer");
        break;
      }
      p.segments.push_back(x.get<int64_t>());
    }
  }
  if (const json* v = r.field(j, "", "tags", false); v != nullptr) {
    if (!v->is_object()) {
      r.fail("tags", "expected an object of strings");
      return p;
    }
    for (const auto& item : v->items()) {
      if (!item.value().is_string()) {
        r.fail("tags." + item.key(), "expected a string");
        break;
      }
      p.tags[item.key()] = item.value().get<std::string>();
    }
  }
  return p;
}

}  // namespace

std::string probe_to_token(const Probe& p) {
  ordered_json j;
  j["gate"] = gate_code(p.gate);
  j["label"] = p.label;
  j["seed"] = p.seed;
  j["sizes"] = ordered_json::object();
  for (const auto& [name, size] : p.sizes) {  // std::map: sorted, so stable
    j["sizes"][name] = size;
  }
  j["inputs"] = inputs_json(p.inputs);
  j["injections"] = injections_json(p.injections);
  j["repetitions"] = p.repetitions;
  j["shift_addresses"] = p.shift_addresses;
  j["launch_configs"] = launch_json(p.launch_configs);
  j["concurrency"] = p.concurrency;
  j["randomize_guards"] = p.randomize_guards;
  if (!p.autotune_configs.empty()) j["autotune_configs"] = p.autotune_configs;  // module probes only
  if (!p.segments.empty()) j["segments"] = p.segments;                          // GLR probes only
  if (!p.tags.empty()) {
    j["tags"] = ordered_json::object();
    for (const auto& [name, value] : p.tags) j["tags"][name] = value;  // sorted: stable
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Expected<Probe> probe_from_token(std::string_view token) {
  const json j = json::parse(token.begin(), token.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return make_error(ErrorCode::kParse, "not valid JSON", "probe token");
  }
  Reader r;
  Probe p = read_probe(r, j);
  if (!r.ok()) {
    return r.error();
  }
  return p;
}

}  // namespace kcv
