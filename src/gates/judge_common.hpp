// File: src/gates/judge_common.hpp
// What every judge does the same way: screen the calls (a crash, a timeout, an exception, a
// kernel error or a malformed output is a failure of the gate being probed, with the status in
// the evidence), build results and evidence, and the numeric agreement judge shared by CMP-01,
// CMP-03 and ORD-01.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gates/compare.hpp"
#include "kcv/gate.hpp"

namespace kcv::gates {

/// A result for the probe's gate; failing_probe is set on kFail; probes_run = 1.
GateResult make_result(const JudgeInput& in, Verdict v, Evidence e);
/// kError: kcv could not decide (an oracle inconsistency, a missing simulation).
GateResult error_result(const JudgeInput& in, std::string reason);

/// kFail when a call did not return normally or its outputs do not match the oracle's; kError
/// when there is no call or the oracle is inconsistent; nullopt when every call can be judged.
std::optional<GateResult> screen_calls(const JudgeInput& in);


/// Shortest exact-enough rendering of a value for evidence ("1.00000012", "inf", "nan").
std::string show(double x);
/// "out[17]" with the output's signature name (or out0[17] when the signature has none).
std::string element_name(const OpSignature& sig, int output, int64_t index);

/// Evidence fields (not the summary) from a comparison.
Evidence comparison_evidence(const JudgeInput& in, const Comparison& c);
/// "3 of 1024 elements over the bound; worst out[17]: candidate 1.5 vs oracle 1.25 (tau 1e-07, ratio 2.5e+06)"
std::string comparison_summary(const JudgeInput& in, const Comparison& c);

/// The worst comparison over every call of the outcome, with the call it came from.
struct WorstCall {
  Comparison comparison;
  int call = 0;
  int64_t violations = 0;  // summed over calls
};
/// The worst of per-call comparisons (index k is call k), violations summed.
WorstCall worst_of(std::vector<Comparison> comparisons);
/// @pre screen_calls(in) returned nullopt.
WorstCall compare_all_calls(const JudgeInput& in);

/// Elements whose bits differ between call 0 and a later call (NaN payloads and the sign of zero
/// included), and the first of them.
struct BitwiseDifference {
  int64_t count = 0;
  std::size_t call = 0;
  int output = 0;
  int64_t index = -1;
};
/// @pre screen_calls(in) returned nullopt for the judge input of these calls.
BitwiseDifference first_bitwise_difference(const CallsView& calls);

/// Numeric agreement with the oracle: every element of every call within tau. A failure's
/// finding is value_finding() of the worst call.
GateResult judge_numeric(const JudgeInput& in);
/// kClassMismatch when some violation is a non-finite candidate where the oracle (and, where the
/// oracle judged it, the declared-type run) is finite: no tolerance excuses that; else
/// kValueOverBound.
Finding value_finding(const Comparison& c);

}  // namespace kcv::gates
