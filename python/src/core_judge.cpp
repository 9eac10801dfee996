// File: python/src/core_judge.cpp
// kcv._core.judge: one gate's C++ judge (src/gates) on calls the orchestrator made. The C++
// judges expect an op signature and a probe from a gate plan; a KernelBench problem has neither,
// so this builds a synthetic one: an OpSignature of the given class with one TensorSig per input
// (dims named by position) and per oracle output, a reduction dimension for every class but
// elementwise (ORD-01/PRC-02 applicability, PRC's declared-type requirement), and a Probe with
// the gate, label, repetitions and injections. The contract's input dtypes default to those of
// `inputs` (they set the compute type of the precision model). Gates whose applicability rule
// rejects the synthetic op/contract return not_applicable with the rule's reason.
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core_common.hpp"
#include "core_oracle.hpp"
#include "kcv/gate.hpp"

namespace kcv::py {
namespace {

constexpr std::array<std::pair<std::string_view, OpClass>, 6> kClasses = {
    {{"elementwise", OpClass::kElementwise},
     {"reduction", OpClass::kReduction},
     {"normalization", OpClass::kNormalization},
     {"matmul", OpClass::kMatmul},
     {"scan", OpClass::kScan},
     {"convolution", OpClass::kConvolution}}};

OpClass op_class_from(std::string_view name) {
  for (const auto& [n, c] : kClasses)
    if (n == name) return c;
  raise_invalid(
      fmt::format("op_class: unknown class '{}' (elementwise, reduction, "
                  "normalization, matmul, scan, convolution)",
                  name));
}

TensorSig positional_sig(std::string name, std::size_t rank) {
  TensorSig t;
  t.name = std::move(name);
  for (std::size_t k = 0; k < rank; ++k) t.dims.push_back(fmt::format("d{}", k));
  return t;
}

Contract contract_from(const std::string& json_text, const std::vector<ArrayHeader>& inputs) {
  nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_object() && !doc.contains("inputs") && !inputs.empty()) {
    for (const ArrayHeader& t : inputs) doc["inputs"].push_back(std::string(dtype_name(t.dtype)));
  }
  auto c = parse_contract(doc.is_discarded() ? json_text : doc.dump());
  if (!c) raise(c.error(), "contract_json");
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
  d["finding"] = std::string(finding_name(r.finding));
  return d;
}

nb::dict judge(const std::string& gate, nb::handle calls, nb::handle oracle_entries,
               nb::handle input_pairs, const std::string& contract_json,
               const std::string& op_class, const std::string& label, int repetitions,
               nb::handle injections, bool uses_minmax, const std::string& op_name, bool uses_exp) {
  auto id = parse_gate(gate);
  if (!id) raise(id.error(), "gate");
  const GateDef& def = gate_def(*id);
  if (def.judge == nullptr)
    raise_invalid(fmt::format("gate: {} is not judged from calls", def.code));

  const std::vector<ArrayHeader> headers = headers_from_pairs(input_pairs, "inputs");
  OracleResult converted;
  const OracleResult& oracle = oracle_of(oracle_entries, converted);
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
  // Copied only for a judge that reads them (PRC-01 of an op with exp): a copy of every input
  // per judge call is gigabytes of fresh pages for a large KernelBench problem.
  const std::vector<HostTensor> inputs = judge_reads_input_values(*id, sig)
                                             ? tensors_from_pairs(input_pairs, "inputs")
                                             : std::vector<HostTensor>{};

  Probe probe;
  probe.gate = *id;
  probe.label = label;
  probe.repetitions = repetitions;
  for (const ArrayHeader& t : headers)
    probe.inputs.push_back(InputSpec{t.dtype, Distribution::kNormal, {}});
  std::size_t k = 0;
  for (nb::handle item : injections) {
    const auto [input, index, special] = nb::cast<std::tuple<int, int64_t, std::string>>(item);
    auto s = parse_special(special);
    if (!s) raise_invalid(fmt::format("injections[{}]: {}", k, s.error().to_string()));
    probe.injections.push_back(Injection{input, index, *s});
    ++k;
  }

  // The judge reads the records' outputs in place, without the GIL; `held` keeps the records
  // alive (`calls` may be any iterable), and `oracle` is kept by `oracle_entries`.
  std::vector<nb::object> held;
  std::vector<const CallRecord*> records;
  for (nb::handle c : calls) {
    records.push_back(&nb::cast<const CallRecord&>(c));
    held.push_back(nb::borrow(c));
  }

  GateResult result;
  {
    nb::gil_scoped_release unlocked;
    if (std::string why = def.not_applicable_reason(sig, contract); !why.empty()) {
      result.gate = *id;
      result.verdict = Verdict::kNotApplicable;
      result.reason = why;
      result.evidence.summary = why;
      result.evidence.probe_label = label;
    } else {
      result = def.judge(
          JudgeInput{probe, sig, contract, oracle, CallsView(std::move(records)), inputs});
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
        "`oracle`: a kcv._core.Oracle, or its list of entries, converted for this call only.\n"
        "Each oracle entry gives tau per element, or tau_rel and tau_abs (tau = tau_rel |value| +\n"
        "tau_abs, 0 where value is not finite), or tau_rel and tau_abs_steps ((frexp exponent,\n"
        "absolute term) pairs: the audit's banded error scale).");
}

}  // namespace kcv::py
