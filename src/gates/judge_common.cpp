// File: src/gates/judge_common.cpp
// Call screening, evidence text and the shared numeric judge. A misbehaving candidate is data:
// every non-ok status becomes a kFail with that status and the executor's message, never an Error.
#include "gates/judge_common.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "gates/parallel.hpp"

namespace kcv::gates {

GateResult make_result(const JudgeInput& in, Verdict v, Evidence e) {
  GateResult r;
  r.gate = in.probe.gate;
  r.verdict = v;
  if (e.probe_label.empty()) e.probe_label = in.probe.label;
  r.evidence = std::move(e);
  r.probes_run = 1;
  if (v == Verdict::kFail) r.failing_probe = in.probe;
  return r;
}

GateResult error_result(const JudgeInput& in, std::string reason) {
  Evidence e;
  e.summary = reason;
  GateResult r = make_result(in, Verdict::kError, std::move(e));
  r.reason = std::move(reason);
  return r;
}

std::string show(double x) { return fmt::format("{:.9g}", x); }

std::string element_name(const OpSignature& sig, int output, int64_t index) {
  const auto o = static_cast<std::size_t>(output);
  if (o < sig.outputs.size() && !sig.outputs[o].name.empty()) {
    return fmt::format("{}[{}]", sig.outputs[o].name, index);
  }
  return fmt::format("out{}[{}]", output, index);
}


namespace {

GateResult call_failure(const JudgeInput& in, std::size_t k, std::string what, Finding finding) {
  Evidence e;
  e.summary = fmt::format("call {} of {}: {}", k, in.calls.size(), what);
  e.worst_ratio = std::numeric_limits<double>::infinity();
  e.violations = 1;
  GateResult r = make_result(in, Verdict::kFail, std::move(e));
  r.finding = finding;
  return r;
}

std::optional<std::string> oracle_problem(const OracleResult& oracle) {
  if (oracle.outputs.empty()) return std::string("the oracle produced no output");
  for (std::size_t o = 0; o < oracle.outputs.size(); ++o) {
    const auto& out = oracle.outputs[o];
    if (out.tau.size() != out.value.size() || numel(out.shape) != static_cast<int64_t>(out.value.size())) {
      return fmt::format("oracle output {} is inconsistent: {} values, {} bounds, shape of {} elements",
                         o, out.value.size(), out.tau.size(), numel(out.shape));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<GateResult> screen_calls(const JudgeInput& in) {
  if (auto why = oracle_problem(in.oracle)) return error_result(in, *why);
  if (in.calls.empty()) return error_result(in, "the executor recorded no call for this probe");
  for (std::size_t k = 0; k < in.calls.size(); ++k) {
    const CallRecord& call = in.calls[k];
    if (call.status != CallStatus::kOk) {
      const std::string msg = call.message.empty() ? "" : ": " + call.message;
      const Finding f = call.status == CallStatus::kBadOutput ? Finding::kBadOutput : Finding::kCallFailed;
      return call_failure(in, k, fmt::format("status {}{}", call_status_name(call.status), msg), f);
    }
    if (!outputs_match(in.oracle, call)) {
      return call_failure(in, k, fmt::format("returned {} output(s) that do not match the oracle's "
                                             "{} in count, dtype or element count",
                                             call.outputs.size(), in.oracle.outputs.size()),
                          Finding::kBadOutput);
    }
  }
  return std::nullopt;
}

Evidence comparison_evidence(const JudgeInput& in, const Comparison& c) {
  Evidence e;
  e.probe_label = in.probe.label;
  e.output = c.worst_output;
  e.worst_index = c.worst_index;
  e.candidate_value = c.candidate;
  e.oracle_value = c.oracle;
  e.worst_ratio = c.worst_ratio;
  e.ratio_quantiles = c.quantiles;
  e.violations = c.violations;
  return e;
}

std::string comparison_summary(const JudgeInput& in, const Comparison& c) {
  if (c.worst_index < 0) return "no finite oracle element to compare";
  const std::string where = element_name(in.sig, c.worst_output, c.worst_index);
  const std::string worst = fmt::format("{}: candidate {} vs oracle {} (tau {}, ratio {})", where,
                                        show(c.candidate), show(c.oracle), show(c.tau),
                                        show(c.worst_ratio));
  if (c.violations == 0) return fmt::format("all {} elements within the bound; tightest {}", c.judged, worst);
  std::string s = fmt::format("{} of {} elements over the bound", c.violations, c.judged);
  if (c.nonfinite > 0) s += fmt::format(" ({} non-finite where the oracle is finite)", c.nonfinite);
  return s + "; worst " + worst;
}

WorstCall worst_of(std::vector<Comparison> comparisons) {
  WorstCall w;
  for (std::size_t k = 0; k < comparisons.size(); ++k) {
    Comparison& c = comparisons[k];
    w.violations += c.violations;
    const bool worse = c.worst_index >= 0 &&
                       (w.comparison.worst_index < 0 || c.worst_ratio > w.comparison.worst_ratio);
    if (k == 0 || worse) {
      w.comparison = std::move(c);
      w.call = static_cast<int>(k);
    }
  }
  return w;
}

WorstCall compare_all_calls(const JudgeInput& in) {
  std::vector<Comparison> comparisons;
  comparisons.reserve(in.calls.size());
  for (const CallRecord& call : in.calls) comparisons.push_back(compare_call(in.oracle, call));
  return worst_of(std::move(comparisons));
}

BitwiseDifference first_bitwise_difference(const CallsView& calls) {
  BitwiseDifference d;
  const CallRecord& base = calls.front();
  const auto merge = [](BitwiseDifference& total, const BitwiseDifference& part) {
    if (total.count == 0) {
      total = part;
    } else {
      total.count += part.count;
    }
  };
  for (std::size_t k = 1; k < calls.size(); ++k) {
    for (std::size_t o = 0; o < base.outputs.size(); ++o) {
      const HostTensor& a = base.outputs[o];
      const HostTensor& b = calls[k].outputs[o];
      const auto scan = [&](std::size_t begin, std::size_t end, BitwiseDifference& part) {
        for (auto i = static_cast<int64_t>(begin); i < static_cast<int64_t>(end); ++i) {
          if (a.bits_at(i) == b.bits_at(i)) continue;
          if (part.count++ == 0) part = BitwiseDifference{1, k, static_cast<int>(o), i};
        }
      };
      reduce_chunks(static_cast<std::size_t>(a.numel()), Split{}, d, scan, merge);
    }
  }
  return d;
}

GateResult judge_numeric(const JudgeInput& in) {
  if (auto screened = screen_calls(in)) return *screened;
  const WorstCall w = compare_all_calls(in);
  Evidence e = comparison_evidence(in, w.comparison);
  e.violations = w.violations;
  e.summary = comparison_summary(in, w.comparison);
  if (in.calls.size() > 1) e.summary = fmt::format("call {}: {}", w.call, e.summary);
  GateResult r = make_result(in, w.violations == 0 ? Verdict::kPass : Verdict::kFail, std::move(e));
  if (r.verdict == Verdict::kFail) r.finding = value_finding(w.comparison);
  return r;
}

Finding value_finding(const Comparison& c) {
  return c.nonfinite > 0 ? Finding::kClassMismatch : Finding::kValueOverBound;
}

}  // namespace kcv::gates
