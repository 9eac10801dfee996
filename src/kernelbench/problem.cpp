// File: src/kernelbench/problem.cpp
// Reading the reference worker's description of a problem (docs/06 §7.1-7.2). Strict on types,
// so a worker bug is an Error naming the field rather than a plan built on a default; fields a
// newer worker adds are ignored.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

using nlohmann::json;

Error bad(const std::string& field, const std::string& what) {
  return make_error(ErrorCode::kParse, fmt::format("problem.{}: {}", field, what),
                    "reference worker");
}

Expected<Shape> shape_of_json(const json& j, const std::string& field) {
  if (!j.is_array()) return bad(field, "expected an array of sizes");
  Shape s;
  for (const json& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      return bad(field, "expected non-negative integers");
    s.push_back(d.get<int64_t>());
  }
  return s;
}

Expected<OutputSpec> tensor_of_json(const json& j, const std::string& field) {
  if (!j.is_object() || !j.contains("dtype") || !j["dtype"].is_string() || !j.contains("shape")) {
    return bad(field, "expected {\"dtype\", \"shape\"}");
  }
  auto dtype = parse_dtype(j["dtype"].get<std::string>());
  if (!dtype) return bad(field + ".dtype", dtype.error().message);
  auto shape = shape_of_json(j["shape"], field + ".shape");
  if (!shape) return shape.error();
  return OutputSpec{*dtype, std::move(*shape)};
}

Expected<ReductionKind> kind_of(const std::string& name) {
  constexpr std::array<std::pair<std::string_view, ReductionKind>, 5> kKinds = {
      {{"sum", ReductionKind::kSum},
       {"dot", ReductionKind::kDot},
       {"norm", ReductionKind::kNorm},
       {"compare", ReductionKind::kCompare},
       {"scan", ReductionKind::kScan}}};
  for (const auto& [n, k] : kKinds) {
    if (n == name) return k;
  }
  return bad("facts.reductions.kind", fmt::format("unknown kind '{}'", name));
}

bool flag(const json& f, const char* key, bool fallback) {
  return f.contains(key) && f[key].is_boolean() ? f[key].get<bool>() : fallback;
}

Expected<ProblemFacts> facts_of(const json& f) {
  ProblemFacts facts;
  if (!f.is_object()) return bad("facts", "expected an object");
  facts.json = f.dump();
  for (const json& c : f.value("constants", json::array())) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("value") ||
        !c["value"].is_number_integer()) {
      return bad("facts.constants", "expected {\"name\", \"value\", \"get_inputs\", \"init\"}");
    }
    facts.constants.push_back(SizeConstant{c["name"].get<std::string>(), c["value"].get<int64_t>(),
                                           flag(c, "get_inputs", false), flag(c, "init", false)});
  }
  for (const json& r : f.value("reductions", json::array())) {
    if (!r.is_object() || !r.contains("length") || !r["length"].is_number_integer()) {
      return bad("facts.reductions", "expected {\"op\", \"kind\", \"length\", \"constant\"}");
    }
    auto kind = kind_of(r.value("kind", std::string("sum")));
    if (!kind) return kind.error();
    facts.reductions.push_back(TracedReduction{r.value("op", std::string()), *kind,
                                               r["length"].get<int64_t>(),
                                               r.value("constant", std::string())});
  }
  facts.minmax = flag(f, "minmax", false);
  facts.stochastic = flag(f, "stochastic", false);
  facts.repeatable = flag(f, "repeatable", true);
  for (const json& op : f.value("ops", json::array())) {
    if (op.is_string()) facts.ops.push_back(op.get<std::string>());
  }
  for (const json& s : f.value("trial_seeds", json::array())) {
    if (!s.is_number_unsigned() && !s.is_number_integer())
      return bad("facts.trial_seeds", "expected integers");
    facts.trial_seeds.push_back(s.get<uint64_t>());
  }
  return facts;
}

}  // namespace

std::string_view reduction_kind_name(ReductionKind k) {
  constexpr std::array<std::string_view, 5> kNames = {"sum", "dot", "norm", "compare", "scan"};
  return kNames[static_cast<std::size_t>(k)];
}

std::vector<OutputSpec> ModuleProblem::tensor_inputs() const {
  std::vector<OutputSpec> out;
  for (const ModuleArg& a : inputs) {
    if (a.tensor) out.push_back(OutputSpec{a.dtype, a.shape});
  }
  return out;
}

int64_t ModuleProblem::io_bytes() const {
  int64_t total = 0;
  for (const OutputSpec& t : tensor_inputs())
    total += numel(t.shape) * static_cast<int64_t>(dtype_size(t.dtype));
  for (const OutputSpec& t : outputs)
    total += numel(t.shape) * static_cast<int64_t>(dtype_size(t.dtype));
  return total;
}

Expected<ModuleProblem> parse_problem(std::string_view load_reply_json) {
  const json reply = json::parse(load_reply_json, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    return bad("", "the load reply is not a JSON object");
  if (!reply.contains("problem") || !reply["problem"].is_object())
    return bad("", "the load reply has no problem");
  const json& p = reply["problem"];
  ModuleProblem out;
  out.device = reply.value("device", std::string("cpu"));
  out.sized_on_meta = p.value("sized_on_meta", false);
  for (const json& in : p.value("inputs", json::array())) {
    ModuleArg arg;
    arg.tensor = in.is_object() && in.value("kind", std::string()) == "tensor";
    if (arg.tensor) {
      auto t = tensor_of_json(in, "inputs");
      if (!t) return t.error();
      arg.dtype = t->dtype;
      arg.shape = t->shape;
    }
    out.inputs.push_back(std::move(arg));
  }
  for (const json& o : p.value("outputs", json::array())) {
    auto t = tensor_of_json(o, "outputs");
    if (!t) return t.error();
    out.outputs.push_back(std::move(*t));
  }
  if (out.outputs.empty() && !out.sized_on_meta)
    return bad("outputs", "the reference returns no tensor output");
  const json constants = p.value("constants", json::object());  // items() must not outlive it
  for (const auto& [name, v] : constants.items()) {
    if (v.is_number_integer()) out.constants[name] = v.get<int64_t>();
  }
  if (p.contains("facts")) {
    auto facts = facts_of(p["facts"]);
    if (!facts) return facts.error();
    out.facts = std::move(*facts);
  }
  return out;
}

}  // namespace kcv::kb
