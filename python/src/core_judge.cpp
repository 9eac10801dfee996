// File: python/src/core_judge.cpp
// kcv._core.judge: one gate's C++ judge (src/gates) on calls the orchestrator made. The C++
// judges expect an op signature and a probe from a gate plan; a KernelBench problem has neither,
// so this builds a synthetic one: an OpSignature of the given class with one TensorSig per input
// (dims named by position) and per oracle output, a reduction dimension for every class but
// elementwise (ORD-01/PRC-02 applicability, PRC's declared-type requirement), and a Probe with
// the gate, label, repetitions and injections. The contract's input dtypes default to those of
// `inputs` (they set the compute type of the precision model). Gates whose applicability rule
// rejects the synthetic op/contract return not_applicable with the rule's reason.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "core_common.hpp"
#include "kcv/gate.hpp"

namespace kcv::py {
namespace {

constexpr std::array<std::pair<std::string_view, OpClass>, 6> kClasses = {{
    {"elementwise", OpClass::kElementwise}, {"reduction", OpClass::kReduction},
    {"normalization", OpClass::kNormalization}, {"matmul", OpClass::kMatmul},
    {"scan", OpClass::kScan}, {"convolution", OpClass::kConvolution}}};

OpClass op_class_from(std::string_view name) {
  for (const auto& [n, c] : kClasses)
    if (n == name) return c;
  throw nb::value_error(fmt::format("op_class: unknown class '{}' (elementwise, reduction, "
                                    "normalization, matmul, scan, convolution)", name).c_str());
}

constexpr int kZeroExponent = -1100;  // error_model.ZERO_EXPONENT

TensorSig positional_sig(std::string name, std::size_t rank) {
  TensorSig t;
  t.name = std::move(name);
  for (std::size_t k = 0; k < rank; ++k) t.dims.push_back(fmt::format("d{}", k));
  return t;
}

/// A contiguous float64 or float32 array is read in place (ascontiguousarray returns it itself)
/// and widened here; anything else is converted by numpy first. float32 is read as it is because
/// `declared`, the eager fp32 run, would otherwise cost a float64 temporary from numpy per judge
/// call besides this copy. The copy runs without the GIL (`a` keeps the buffer alive): it is
/// hundreds of megabytes for the audit's large outputs, and other slots wait on the GIL.
std::vector<double> f64_values(nb::handle values) {
  nb::object np = nb::module_::import_("numpy");
  nb::object a = np.attr("asarray")(values);
  const bool f32 = nb::cast<std::string>(a.attr("dtype").attr("str")) == "<f4";
  a = np.attr("ascontiguousarray")(a, f32 ? "float32" : "float64").attr("ravel")();
  nb::dict iface = nb::cast<nb::dict>(a.attr("__array_interface__"));
  const auto n = nb::cast<std::size_t>(a.attr("size"));
  const auto data = nb::cast<uintptr_t>(nb::cast<nb::tuple>(iface["data"])[0]);
  nb::gil_scoped_release unlocked;
  if (n == 0) return {};
  if (f32) {
    const auto* p = reinterpret_cast<const float*>(data);
    return std::vector<double>(p, p + n);  // float -> double is exact
  }
  const auto* p = reinterpret_cast<const double*>(data);
  return std::vector<double>(p, p + n);
}

/// tau = tau_rel |y*| + the absolute term of y*'s binade, 0 where y* is not finite (the audit's
/// banded error scale, kcv.audit.error_model.band_steps): `steps` is a list of (frexp exponent,
/// absolute term) pairs with increasing exponents; an element takes the first step whose exponent
/// is at least its own (y* = 0 counts as below every binade), the last step above them all.
std::vector<double> banded_tau(const std::vector<double>& value, double rel, nb::handle steps,
                               const std::string& what) {
  std::vector<std::pair<int, double>> table;
  for (nb::handle item : steps) {
    const auto [e, a] = nb::cast<std::tuple<int, double>>(item);
    if (!table.empty() && e <= table.back().first)
      throw nb::value_error(fmt::format("{}.tau_abs_steps: exponents must increase", what).c_str());
    table.emplace_back(e, a);
  }
  nb::gil_scoped_release unlocked;
  std::vector<double> tau(value.size(), 0.0);
  if (table.empty()) {
    for (std::size_t i = 0; i < value.size(); ++i)
      if (std::isfinite(value[i])) tau[i] = rel * std::fabs(value[i]);
    return tau;
  }
  // A dense lookup from exponent to term over the steps' range (at most ~2100 binades).
  const int lo = table.front().first, hi = table.back().first;
  std::vector<double> dense(static_cast<std::size_t>(hi - lo + 1));
  std::size_t j = 0;
  for (int e = lo; e <= hi; ++e) {
    while (table[j].first < e) ++j;
    dense[static_cast<std::size_t>(e - lo)] = table[j].second;
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const double y = value[i];
    if (!std::isfinite(y)) continue;
    int e = kZeroExponent;
    if (y != 0) std::frexp(y, &e);
    const double a = e <= lo ? table.front().second
                     : e >= hi ? table.back().second
                               : dense[static_cast<std::size_t>(e - lo)];
    tau[i] = rel * std::fabs(y) + a;
  }
  return tau;
}

OracleResult oracle_from(nb::handle entries) {
  OracleResult r;
  std::size_t o = 0;
  for (nb::handle item : entries) {
    const std::string what = fmt::format("oracle[{}]", o++);
    nb::dict d = nb::cast<nb::dict>(item);
    for (const char* key : {"dtype", "shape", "value"})
      if (!d.contains(key)) throw nb::value_error(fmt::format("{}: no \"{}\"", what, key).c_str());
    const bool affine =
        d.contains("tau_rel") && (d.contains("tau_abs") || d.contains("tau_abs_steps"));
    if (!d.contains("tau") && !affine)
      throw nb::value_error(fmt::format("{}: no \"tau\" (nor \"tau_rel\" with \"tau_abs\" or "
                                        "\"tau_abs_steps\")", what).c_str());
    OracleOutput out;
    out.dtype = dtype_from_string(nb::cast<std::string>(d["dtype"]), what + ".dtype");
    for (nb::handle s : d["shape"]) out.shape.push_back(nb::cast<int64_t>(s));
    out.value = f64_values(d["value"]);
    if (d.contains("tau")) {
      out.tau = f64_values(d["tau"]);
    } else if (d.contains("tau_abs_steps") && d.contains("tau_rel")) {
      out.tau = banded_tau(out.value, nb::cast<double>(d["tau_rel"]), d["tau_abs_steps"], what);
    } else {
      // tau = tau_rel |y*| + tau_abs, 0 where y* is not finite: built here so the caller keeps
      // no per-element tau array for every probe (the audit's host memory).
      const double rel = nb::cast<double>(d["tau_rel"]);
      const double abs = nb::cast<double>(d["tau_abs"]);
      nb::gil_scoped_release unlocked;
      out.tau.reserve(out.value.size());
      for (double y : out.value)
        out.tau.push_back(std::isfinite(y) ? rel * std::fabs(y) + abs : 0.0);
    }
    if (d.contains("declared") && !d["declared"].is_none())
      out.declared = f64_values(d["declared"]);
    if (d.contains("n_terms") && !d["n_terms"].is_none())
      out.n_terms = f64_values(d["n_terms"]);
    r.outputs.push_back(std::move(out));
  }
  return r;
}

Contract contract_from(const std::string& json_text, const std::vector<ArrayHeader>& inputs) {
  nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_object() && !doc.contains("inputs") && !inputs.empty()) {
    for (const ArrayHeader& t : inputs) doc["inputs"].push_back(std::string(dtype_name(t.dtype)));
  }
  auto c = parse_contract(doc.is_discarded() ? json_text : doc.dump());
  if (!c) throw nb::value_error(("contract_json: " + c.error().to_string()).c_str());
  return *c;
}

nb::dict result_dict(const GateResult& r) {
  nb::dict d;
  d["gate"] = std::string(gate_code(r.gate));
  d["verdict"] = std::string(verdict_name(r.verdict));
  d["reason"] = r.reason;
  d["summary"] = r.evidence.summary;
  d["probe_label"] = r.evidence.probe_label;
  d["output"] = r.evidence.output;
  d["worst_index"] = r.evidence.worst_index;
  d["worst_ratio"] = r.evidence.worst_ratio;
  d["candidate_value"] = r.evidence.candidate_value;
  d["oracle_value"] = r.evidence.oracle_value;
  d["ratio_quantiles"] = r.evidence.ratio_quantiles;
  d["bits_lost"] = r.evidence.bits_lost;
  d["violations"] = r.evidence.violations;
  return d;
}

nb::dict judge(const std::string& gate, nb::handle calls, nb::handle oracle_entries, nb::handle input_pairs,
               const std::string& contract_json, const std::string& op_class, const std::string& label,
               int repetitions, nb::handle injections, bool uses_minmax, const std::string& op_name,
               bool uses_exp) {
  auto id = parse_gate(gate);
  if (!id) throw nb::value_error(("gate: " + id.error().to_string()).c_str());
  const GateDef& def = gate_def(*id);
  if (def.judge == nullptr)
    throw nb::value_error(fmt::format("gate: {} is not judged from calls", def.code).c_str());

  const std::vector<ArrayHeader> headers = headers_from_pairs(input_pairs, "inputs");
  const std::vector<HostTensor> inputs = judge_reads_input_values(*id)
                                             ? tensors_from_pairs(input_pairs, "inputs")
                                             : std::vector<HostTensor>{};
  const OracleResult oracle = oracle_from(oracle_entries);
  const Contract contract = contract_from(contract_json, headers);

  OpSignature sig;
  sig.name = op_name;
  sig.op_class = op_class_from(op_class);
  for (std::size_t j = 0; j < headers.size(); ++j)
    sig.inputs.push_back(positional_sig(fmt::format("in{}", j), headers[j].shape.size()));
  bool all_index = !oracle.outputs.empty();
  for (std::size_t o = 0; o < oracle.outputs.size(); ++o) {
    sig.outputs.push_back(positional_sig(fmt::format("out{}", o), oracle.outputs[o].shape.size()));
    all_index = all_index && !is_floating(oracle.outputs[o].dtype);
  }
  if (sig.op_class != OpClass::kElementwise) sig.reduction_dim = "K";
  sig.index_output = all_index;
  sig.uses_minmax = uses_minmax;
  sig.uses_exp = uses_exp;

  Probe probe;
  probe.gate = *id;
  probe.label = label;
  probe.repetitions = repetitions;
  for (const ArrayHeader& t : headers) probe.inputs.push_back(InputSpec{t.dtype, Distribution::kNormal, {}});
  std::size_t k = 0;
  for (nb::handle item : injections) {
    const auto [input, index, special] = nb::cast<std::tuple<int, int64_t, std::string>>(item);
    auto s = parse_special(special);
    if (!s) throw nb::value_error(fmt::format("injections[{}]: {}", k, s.error().to_string()).c_str());
    probe.injections.push_back(Injection{input, index, *s});
    ++k;
  }

  // The calls' outputs are copied below without the GIL, as in f64_values; `held` keeps the
  // records alive (`calls` may be any iterable).
  std::vector<nb::object> held;
  std::vector<const CallRecord*> records;
  for (nb::handle c : calls) {
    records.push_back(&nb::cast<const CallRecord&>(c));
    held.push_back(nb::borrow(c));
  }

  GateResult result;
  {
    nb::gil_scoped_release unlocked;
    ProbeOutcome outcome;
    outcome.calls.reserve(records.size());
    for (const CallRecord* c : records) outcome.calls.push_back(*c);
    if (std::string why = def.not_applicable_reason(sig, contract); !why.empty()) {
      result.gate = *id;
      result.verdict = Verdict::kNotApplicable;
      result.reason = why;
      result.evidence.summary = why;
      result.evidence.probe_label = label;
    } else {
      result = def.judge(JudgeInput{probe, sig, contract, oracle, outcome, inputs});
    }
  }
  return result_dict(result);
}

}  // namespace

void bind_judge(nb::module_& m) {
  m.def("judge", &judge, nb::arg("gate"), nb::kw_only(), nb::arg("calls"), nb::arg("oracle"),
        nb::arg("inputs"), nb::arg("contract_json") = "{}", nb::arg("op_class") = "elementwise",
        nb::arg("label") = "", nb::arg("repetitions") = 1, nb::arg("injections") = nb::list(),
        nb::arg("uses_minmax") = false, nb::arg("op_name") = "kernelbench",
        nb::arg("uses_exp") = false,
        "Judges one probe's calls with the C++ judge of `gate`; returns the verdict and evidence.\n"
        "Each oracle entry gives tau per element, or tau_rel and tau_abs (tau = tau_rel |value| +\n"
        "tau_abs, 0 where value is not finite), or tau_rel and tau_abs_steps ((frexp exponent,\n"
        "absolute term) pairs: the audit's banded error scale).");
}

}  // namespace kcv::py
