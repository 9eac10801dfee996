// File: src/contract/contract.cpp
// Contract JSON <-> Contract. Strict on purpose: an unknown field (at any level) or a value of
// the wrong type is an error naming the field by its path ("budgets.shared_bytes",
// "launch_configs[1].threads"), because a typo that silently falls back to a default would
// weaken the contract the kernel is judged by. Absent fields keep the Contract defaults, except
// the accumulator, which defaults to f64 when the first input is f64 (f32 otherwise).
#include "kcv/contract.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <nlohmann/json.hpp>

namespace kcv {

namespace {

using Json = nlohmann::json;

Error field_error(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, "contract field '" + path + "': " + what);
}

Error type_error(const std::string& path, const char* expected, const Json& got) {
  return field_error(path, std::string("expected ") + expected + ", got " + got.type_name() +
                               " " + got.dump());
}

/// Rejects any key of `obj` not in `known`.
Status check_keys(const Json& obj, const std::string& prefix,
                  std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return field_error(prefix + key, "unknown field");
    }
  }
  return {};
}

Expected<int64_t> get_int(const Json& v, const std::string& path, int64_t min_value) {
  if (!v.is_number_integer()) return type_error(path, "an integer", v);
  const int64_t x = v.get<int64_t>();
  if (x < min_value) {
    return field_error(path, "must be >= " + std::to_string(min_value) + ", got " +
                                 std::to_string(x));
  }
  return x;
}

Expected<std::string> get_string(const Json& v, const std::string& path) {
  if (!v.is_string()) return type_error(path, "a string", v);
  return v.get<std::string>();
}

Expected<bool> get_bool(const Json& v, const std::string& path) {
  if (!v.is_boolean()) return type_error(path, "true or false", v);
  return v.get<bool>();
}

Expected<DType> get_dtype(const Json& v, const std::string& path) {
  auto name = get_string(v, path);
  if (!name) return name.error();
  auto t = parse_dtype(*name);
  if (!t) return field_error(path, t.error().message);
  return *t;
}

Expected<std::vector<DType>> get_dtypes(const Json& v, const std::string& path) {
  if (!v.is_array()) return type_error(path, "an array of dtype names", v);
  std::vector<DType> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto t = get_dtype(v[i], path + "[" + std::to_string(i) + "]");
    if (!t) return t.error();
    out.push_back(*t);
  }
  return out;
}

Status parse_params(const Json& v, Contract& c) {
  if (!v.is_object()) return type_error("params", "an object of numbers", v);
  for (const auto& [key, value] : v.items()) {
    if (!value.is_number()) return type_error("params." + key, "a number", value);
    c.params[key] = value.get<double>();
  }
  return {};
}

Status parse_sizes(const Json& v, Contract& c) {
  if (!v.is_object()) return type_error("reference_sizes", "an object of integers", v);
  for (const auto& [key, value] : v.items()) {
    auto n = get_int(value, "reference_sizes." + key, 1);
    if (!n) return n.error();
    c.reference_sizes[key] = *n;
  }
  return {};
}

Status parse_fixed_dims(const Json& v, Contract& c) {
  if (!v.is_array()) return type_error("fixed_dims", "an array of size symbols", v);
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto s = get_string(v[i], "fixed_dims[" + std::to_string(i) + "]");
    if (!s) return s.error();
    c.fixed_dims.push_back(*s);
  }
  return {};
}

Status parse_launch_configs(const Json& v, Contract& c) {
  if (!v.is_array()) return type_error("launch_configs", "an array of {block, threads}", v);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string path = "launch_configs[" + std::to_string(i) + "]";
    if (!v[i].is_object()) return type_error(path, "an object {block, threads}", v[i]);
    if (Status s = check_keys(v[i], path + ".", {"block", "threads"}); !s) return s;
    LaunchConfig lc;
    if (v[i].contains("block")) {
      auto b = get_int(v[i]["block"], path + ".block", 0);
      if (!b) return b.error();
      lc.block = static_cast<int32_t>(*b);
    }
    if (v[i].contains("threads")) {
      auto t = get_int(v[i]["threads"], path + ".threads", 1);
      if (!t) return t.error();
      lc.threads = static_cast<int32_t>(*t);
    }
    c.launch_configs.push_back(lc);
  }
  return {};
}

struct BudgetField {
  std::string_view name;
  std::optional<int64_t> Budgets::*member;
};

constexpr std::array<BudgetField, 7> kBudgetFields = {{
    {"registers_per_thread", &Budgets::registers_per_thread},
    {"spill_bytes", &Budgets::spill_bytes},
    {"stack_bytes", &Budgets::stack_bytes},
    {"shared_bytes", &Budgets::shared_bytes},
    {"threads_per_block", &Budgets::threads_per_block},
    {"tmem_columns", &Budgets::tmem_columns},
    {"workspace_bytes", &Budgets::workspace_bytes},
}};

Status parse_budgets(const Json& v, Contract& c) {
  if (!v.is_object()) return type_error("budgets", "an object", v);
  for (const auto& [key, value] : v.items()) {
    const auto* f = std::find_if(kBudgetFields.begin(), kBudgetFields.end(),
                                 [&](const BudgetField& b) { return b.name == key; });
    if (f == kBudgetFields.end()) return field_error("budgets." + key, "unknown field");
    auto n = get_int(value, "budgets." + key, 0);
    if (!n) return n.error();
    c.budgets.*(f->member) = *n;
  }
  return {};
}

/// One handler per top-level field; the table is also the list of known fields.
using Handler = std::function<Status(const Json&, Contract&)>;

template <typename T, typename Get>
Handler scalar(T Contract::*member, Get get, const char* name) {
  return [member, get, name](const Json& v, Contract& c) -> Status {
    auto x = get(v, std::string(name));
    if (!x) return x.error();
    c.*member = *x;
    return {};
  };
}

const std::vector<std::pair<std::string_view, Handler>>& handlers() {
  static const std::vector<std::pair<std::string_view, Handler>> kHandlers = {
      {"op", scalar(&Contract::op, get_string, "op")},
      {"inputs", scalar(&Contract::input_dtypes, get_dtypes, "inputs")},
      {"outputs", scalar(&Contract::output_dtypes, get_dtypes, "outputs")},
      {"accumulator", scalar(&Contract::accumulator, get_dtype, "accumulator")},
      {"profile",
       [](const Json& v, Contract& c) -> Status {
         auto s = get_string(v, "profile");
         if (!s) return s.error();
         auto p = parse_profile(*s);
         if (!p) return field_error("profile", p.error().message);
         c.profile = *p;
         return {};
       }},
      {"deterministic", scalar(&Contract::deterministic, get_bool, "deterministic")},
      {"in_place", scalar(&Contract::in_place, get_bool, "in_place")},
      {"layout_invariant", scalar(&Contract::layout_invariant, get_bool, "layout_invariant")},
      {"params", parse_params},
      {"reference_sizes", parse_sizes},
      {"fixed_dims", parse_fixed_dims},
      {"tile",
       [](const Json& v, Contract& c) -> Status {
         auto t = get_int(v, "tile", 1);
         if (!t) return t.error();
         c.tile = *t;
         return {};
       }},
      {"launch_configs", parse_launch_configs},
      {"budgets", parse_budgets},
      {"arch", scalar(&Contract::arch, get_string, "arch")},
  };
  return kHandlers;
}

Status apply_op_argument(Contract& c, std::string_view op) {
  if (op.empty()) return {};
  if (c.op.empty()) {
    c.op = std::string(op);
    return {};
  }
  if (c.op != op) {
    return field_error("op", "the contract is for '" + c.op + "' but the op is '" +
                                 std::string(op) + "'");
  }
  return {};
}

}  // namespace

Expected<Contract> parse_contract(std::string_view json, std::string_view op) {
  const Json doc = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return make_error(ErrorCode::kParse, "contract is not valid JSON");
  }
  if (!doc.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("contract must be a JSON object, got ") + doc.type_name());
  }
  Contract c;
  bool accumulator_given = false;
  for (const auto& [key, value] : doc.items()) {
    const auto& table = handlers();
    const auto it = std::find_if(table.begin(), table.end(),
                                 [&](const auto& h) { return h.first == key; });
    if (it == table.end()) return field_error(key, "unknown field");
    if (Status s = it->second(value, c); !s) return s.error();
    accumulator_given = accumulator_given || key == "accumulator";
  }
  if (!accumulator_given && !c.input_dtypes.empty() && c.input_dtypes.front() == DType::kF64) {
    c.accumulator = DType::kF64;
  }
  if (Status s = apply_op_argument(c, op); !s) return s.error();
  return c;
}

namespace {

Json dtypes_json(const std::vector<DType>& ts) {
  Json a = Json::array();
  for (DType t : ts) a.push_back(std::string(dtype_name(t)));
  return a;
}

Json budgets_json(const Budgets& b) {
  Json o = Json::object();
  for (const BudgetField& f : kBudgetFields) {
    if ((b.*(f.member)).has_value()) o[std::string(f.name)] = *(b.*(f.member));
  }
  return o;
}

}  // namespace

std::string contract_to_json(const Contract& c) {
  Json j = Json::object();
  j["op"] = c.op;
  j["inputs"] = dtypes_json(c.input_dtypes);
  j["outputs"] = dtypes_json(c.output_dtypes);
  j["accumulator"] = std::string(dtype_name(c.accumulator));
  j["profile"] = std::string(profile(c.profile).name);
  j["deterministic"] = c.deterministic;
  j["in_place"] = c.in_place;
  j["layout_invariant"] = c.layout_invariant;
  j["params"] = Json(c.params);
  j["reference_sizes"] = Json(c.reference_sizes);
  j["fixed_dims"] = Json(c.fixed_dims);
  j["tile"] = c.tile;
  Json configs = Json::array();
  for (const LaunchConfig& lc : c.launch_configs) {
    configs.push_back({{"block", lc.block}, {"threads", lc.threads}});
  }
  j["launch_configs"] = configs;
  j["budgets"] = budgets_json(c.budgets);
  j["arch"] = c.arch;
  return j.dump();
}

}  // namespace kcv
