// File: src/kernelbench/outcome.cpp
// Store records of a module's verdicts (outcome.hpp). The evidence keeps what a reader needs to
// see the counterexample without replaying it: the failing probe's label, the worst element,
// the candidate's and the oracle's values there, the ratio quantiles, and how many probes ran
// and how many the reference refused.
#include "kernelbench/outcome.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "kcv/worker.hpp"

namespace kcv::kb {
namespace {

constexpr std::size_t kMessageLimit = 4000;

nlohmann::json number(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}

std::string evidence_json(const GateResult& r, const Constants& shape) {
  const Evidence& e = r.evidence;
  nlohmann::json j{{"summary", e.summary},
                   {"probe", e.probe_label},
                   {"probes", r.probes_run},
                   {"probes_refused", r.probes_refused}};
  if (r.probes_not_run > 0) j["probes_not_run"] = r.probes_not_run;
  if (e.worst_index >= 0) {
    j["output"] = e.output;
    j["worst_index"] = e.worst_index;
    j["candidate_value"] = number(e.candidate_value);
    j["oracle_value"] = number(e.oracle_value);
  }
  if (!e.ratio_quantiles.empty()) {
    nlohmann::json q = nlohmann::json::array();
    for (double x : e.ratio_quantiles) q.push_back(number(x));
    j["ratio_quantiles"] = q;
  }
  if (e.violations > 0) j["violations"] = e.violations;
  if (r.failing_probe) j["shape"] = shape;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool contains_word(std::string_view text, std::string_view word) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower.find(word) != std::string::npos;
}

}  // namespace

std::vector<audit::VerdictRecord> verdict_records(const PipelineReport& report,
                                                  const Constants& base) {
  std::vector<audit::VerdictRecord> out;
  for (const ProfileResults& p : report.profiles) {
    for (const GateResult& r : p.results) {
      audit::VerdictRecord v;
      v.gate = std::string(gate_code(r.gate));
      v.profile = std::string(profile(p.profile).name);
      v.verdict = std::string(verdict_name(r.verdict));
      v.reason = r.reason;
      if (std::isfinite(r.evidence.worst_ratio) && r.verdict != Verdict::kNotApplicable)
        v.worst_ratio = r.evidence.worst_ratio;
      if (r.gate == GateId::kPrc01 || r.gate == GateId::kPrc02) {
        if (std::isfinite(r.evidence.bits_lost) && r.verdict != Verdict::kNotApplicable)
          v.bits_lost = r.evidence.bits_lost;
      }
      Constants shape = base;
      if (r.failing_probe) {
        for (const auto& [name, value] : r.failing_probe->sizes) shape[name] = value;
      }
      v.evidence_json = evidence_json(r, shape);
      if (r.verdict == Verdict::kFail) {
        v.finding = r.finding;
        v.scope = r.scope;  // the plan's first failing probe's, before shrinking
        if (r.failing_probe) {
          Probe whole = *r.failing_probe;
          whole.sizes = shape;
          v.probe_token = probe_to_token(whole);
        }
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

bool killed_by_sigkill(std::string_view message) {
  return contains_word(message, "died of signal 9 (sigkill");
}

audit::KernelStatus load_failure_status(const Error& error, bool reference) {
  // The out-of-memory killer took the worker (src/worker/oom_kills.hpp): the machine's limit.
  if (error.worker_class.empty() && out_of_memory(error)) return audit::KernelStatus::kOutOfMemory;
  // SIGKILL from outside kcv during a load (kcv's own kills read "killed by kcv"): the OOM
  // killer's signal, or an operator's; either side's worker. The orchestrator retries it once.
  if (error.worker_class.empty() && killed_by_sigkill(error.message))
    return audit::KernelStatus::kLoadKilled;
  if (reference) return audit::KernelStatus::kReferenceError;
  if (error.worker_class == "compile_error") return audit::KernelStatus::kCompileError;
  if (error.worker_class == "import_error") return audit::KernelStatus::kImportError;
  if (!error.worker_class.empty()) return audit::KernelStatus::kError;  // init, problem, request
  // No class: the executor's own words for a worker it had to stop or that died.
  if (contains_word(error.message, "no reply in time") ||
      contains_word(error.message, "no result within")) {
    return audit::KernelStatus::kTimeout;
  }
  if (contains_word(error.message, "died of signal")) return audit::KernelStatus::kCrash;
  return audit::KernelStatus::kError;
}

namespace {
constexpr std::string_view kCudaUnavailable = "cuda_unavailable";  // docs/06 §7.1

bool reply_cause_is(const CallRecord& call, std::string_view cause) {
  if (call.worker_reply.empty()) return false;
  const nlohmann::json reply = nlohmann::json::parse(call.worker_reply, nullptr, false);
  return reply.is_object() && reply.value("cause", std::string()) == cause;
}
}  // namespace

bool needs_a_gpu(const Error& load_failure) {
  return load_failure.worker_cause == kCudaUnavailable;
}

bool needs_a_gpu(const CallRecord& call) { return reply_cause_is(call, kCudaUnavailable); }

bool out_of_memory(const CallRecord& call) {
  return call.killed_out_of_memory || reply_cause_is(call, kCauseOutOfMemory);
}

bool out_of_memory(const Error& load_failure) {
  return load_failure.worker_cause == kCauseOutOfMemory;
}

bool mentions_out_of_memory(std::string_view message) {
  return contains_word(message, "out of memory") || contains_word(message, "outofmemoryerror") ||
         contains_word(message, "cudaerrormemoryallocation") ||
         contains_word(message, "cublas_status_alloc_failed");
}

std::string clip(std::string text) {
  if (text.size() > kMessageLimit) text = text.substr(0, kMessageLimit - 3) + "...";
  return text;
}

Contract declared_contract(const ModuleRow& row) {
  Contract c = row.contract.value_or(Contract{});
  c.op = "kernelbench";
  return c;
}

std::optional<DType> declared_precision(const Contract& c) {
  if (c.accumulator == DType::kF16 || c.accumulator == DType::kBF16) return c.accumulator;
  return std::nullopt;
}

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kReduction:
      return "reduction";
    case OpClass::kNormalization:
      return "normalization";
    case OpClass::kMatmul:
      return "matmul";
    case OpClass::kScan:
      return "scan";
    case OpClass::kConvolution:
      return "convolution";
  }
  return "elementwise";
}

}  // namespace kcv::kb
