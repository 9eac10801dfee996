// File: src/gates/ord.cpp
// ORD family (research note §4): reductions of every length within the declared accumulator's
// error model (ORD-01), bitwise determinism across repetitions at shifted addresses (ORD-02,
// tolerance-free, only for contracts that declare determinism) and schedule invariance across
// launch configurations and concurrent calls (ORD-03). ORD-03's pairwise criterion uses tau as
// τ = u_out|y| + τ_acc: two results each within τ of y* may differ by up to 2τ, never more.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "gates/families.hpp"
#include "gates/judge_common.hpp"
#include "gates/parallel.hpp"
#include "gates/plan_common.hpp"

namespace kcv::gates {

namespace {

constexpr std::array<int64_t, 7> kOrd01Lengths = {1, 2, 31, 1024, 4096, 16384, int64_t{1} << 20};
constexpr int64_t kLargeLength = 16384;          // longer reductions are labelled "large"
constexpr int64_t kMaxOrdInputElems = int64_t{1} << 23;  // 32 MiB of fp32 inputs per probe
constexpr int64_t kOrd01MinOutputs = 8;
constexpr int kOrd02Repetitions = 8;
constexpr int kOrd03Concurrency = 4;

std::vector<int64_t> reduction_lengths(const OpSignature& sig, const Contract& contract) {
  if (is_fixed(contract, sig.reduction_dim)) return {reference_sizes(sig, contract)[sig.reduction_dim]};
  return {kOrd01Lengths.begin(), kOrd01Lengths.end()};
}

std::vector<LaunchConfig> ord03_configs(const Contract& contract) {
  if (!contract.launch_configs.empty()) return contract.launch_configs;
  std::vector<LaunchConfig> configs;
  for (int32_t block : {0, 64, 96, 128, 1000}) {
    for (int32_t threads : {1, 2, 4}) configs.push_back(LaunchConfig{block, threads});
  }
  return configs;
}

/// The "one huge element among small ones" probe: a near-overflow value mid-line where that keeps
/// a correct kernel finite, else a wide dynamic range (exponents over +-20) for the same purpose.
Probe huge_element_probe(const OpSignature& sig, const Contract& contract, const Sizes& s,
                         const std::string& prefix) {
  if (!huge_safe_reduction(sig)) {
    return make_probe(sig, contract, s, Distribution::kWideRange,
                      fmt::format("{} {}", prefix, distribution_name(Distribution::kWideRange)));
  }
  Probe p = make_probe(sig, contract, s, Distribution::kNormal, prefix + " one huge element");
  const int64_t n = s.at(sig.reduction_dim);
  const int64_t at = line_index(sig, 0, s, sig.reduction_dim, 0, n / 2);
  if (at >= 0) p.injections.push_back(Injection{0, at, Special::kHuge});
  return p;
}

}  // namespace

std::vector<Probe> plan_ord01(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  if (!ord01_not_applicable(sig, contract).empty()) return {};
  std::vector<Probe> probes;
  for (int64_t n : reduction_lengths(sig, contract)) {
    const bool large = n > kLargeLength;
    Sizes s = reference_sizes(sig, contract);
    s[sig.reduction_dim] = n;
    s = spread_outputs(sig, contract, s, sig.reduction_dim, large ? 1 : kOrd01MinOutputs);
    if (total_input_numel(sig, s) > kMaxOrdInputElems) continue;
    const std::string prefix = fmt::format("{}={}{}", sig.reduction_dim, n, large ? " large" : "");
    for (Distribution d : {Distribution::kNormal, Distribution::kUniform01}) {
      probes.push_back(make_probe(sig, contract, s, d, fmt::format("{} {}", prefix, distribution_name(d))));
    }
    // The zero-mean and nonzero-mean cases bound the error growth at every N; heavy tails and the
    // huge element test dynamic range, which does not need 2^20 terms (and a tight ratio there
    // makes the verifier re-derive whole 2^20-term rows in MPFR).
    if (large) continue;
    probes.push_back(make_probe(sig, contract, s, Distribution::kHeavyTail,
                                fmt::format("{} {}", prefix, distribution_name(Distribution::kHeavyTail))));
    probes.push_back(huge_element_probe(sig, contract, s, prefix));
  }
  return number_probes(std::move(probes), GateId::kOrd01, seed);
}

std::vector<Probe> plan_ord02(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  if (!ord02_not_applicable(sig, contract).empty()) return {};
  std::vector<Probe> probes;
  for (Distribution d : {Distribution::kNormal, Distribution::kUniform01}) {
    Probe p = make_probe(sig, contract, reference_sizes(sig, contract), d,
                         fmt::format("reference {} x{} shifted", distribution_name(d), kOrd02Repetitions));
    p.repetitions = kOrd02Repetitions;
    p.shift_addresses = true;
    probes.push_back(std::move(p));
  }
  return number_probes(std::move(probes), GateId::kOrd02, seed);
}

std::vector<Probe> plan_ord03(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  const std::vector<LaunchConfig> configs = ord03_configs(contract);
  std::vector<Probe> probes;
  Probe ref = make_probe(sig, contract, reference_sizes(sig, contract), Distribution::kUniform01,
                         fmt::format("reference uniform01 {} configs", configs.size()));
  ref.launch_configs = configs;
  probes.push_back(std::move(ref));
  Probe tail = make_probe(sig, contract, tail_sizes(sig, contract), Distribution::kNormal,
                          fmt::format("tile+1 normal {} configs", configs.size()));
  tail.launch_configs = configs;
  probes.push_back(std::move(tail));
  Probe conc = make_probe(sig, contract, reference_sizes(sig, contract), Distribution::kNormal,
                          fmt::format("reference normal concurrency {}", kOrd03Concurrency));
  conc.concurrency = kOrd03Concurrency;
  probes.push_back(std::move(conc));
  return number_probes(std::move(probes), GateId::kOrd03, seed);
}

GateResult judge_ord01(const JudgeInput& in) { return judge_numeric(in); }

GateResult judge_ord02(const JudgeInput& in) {
  if (auto screened = screen_calls(in)) return *screened;
  const BitwiseDifference d =
      ComparisonMemo::pass<BitwiseDifference>(ComparisonMemo::Pass::kBitwise, nullptr, in.calls, 0,
                                              [&] { return first_bitwise_difference(in.calls); });
  Evidence e;
  e.violations = d.count;
  if (d.count == 0) {
    e.summary = fmt::format("{} calls bitwise identical", in.calls.size());
    return make_result(in, Verdict::kPass, std::move(e));
  }
  const auto o = static_cast<std::size_t>(d.output);
  const double first = in.calls.front().outputs[o].value_at(d.index);
  const double other = in.calls[d.call].outputs[o].value_at(d.index);
  e.output = d.output;
  e.worst_index = d.index;
  e.candidate_value = other;
  e.oracle_value = in.oracle.outputs[o].value[static_cast<std::size_t>(d.index)];
  e.worst_ratio = std::numeric_limits<double>::infinity();
  e.summary = fmt::format("call {} differs from call 0 at {}: {} vs {} (oracle {}); {} differing "
                          "elements over {} calls",
                          d.call, element_name(in.sig, d.output, d.index), show(other), show(first),
                          show(e.oracle_value), d.count, in.calls.size());
  GateResult r = make_result(in, Verdict::kFail, std::move(e));
  r.finding = Finding::kNondeterministic;
  return r;
}

namespace {

struct Spread {
  int64_t violations = 0;
  int output = 0;
  int64_t index = -1;
  double low = 0, high = 0, bound = 0, ratio = 0;
};

/// Spread of the calls' values per element against 2*tau (tau == 0: all calls equal). Elements
/// where a call is non-finite are left to the comparison with the oracle. A large output's
/// elements are spread on threads (gates/parallel.hpp) with the serial loop's result: counts
/// summed, the first of the widest elements kept.
Spread config_spread(const JudgeInput& in) {
  Spread s;
  const auto merge = [](Spread& total, const Spread& part) {
    total.violations += part.violations;
    if (part.index >= 0 && (total.index < 0 || part.ratio > total.ratio)) {
      const int64_t violations = total.violations;
      total = part;
      total.violations = violations;
    }
  };
  for (std::size_t o = 0; o < in.oracle.outputs.size(); ++o) {
    const OracleOutput& want = in.oracle.outputs[o];
    const TauFloor floor(want.dtype);
    const auto scan = [&](std::size_t begin, std::size_t end, Spread& part) {
      for (std::size_t i = begin; i < end; ++i) {
        const double tau = floor(want.value[i], want.tau[i]);
        if (!std::isfinite(want.value[i]) || std::isnan(tau)) continue;
        double lo = std::numeric_limits<double>::infinity();
        double hi = -lo;
        for (const CallRecord& call : in.calls) {
          const double x = call.outputs[o].value_at(static_cast<int64_t>(i));
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        }
        if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
        const double spread = hi - lo;
        const double ratio = tau == 0 ? (spread == 0 ? 0 : std::numeric_limits<double>::infinity())
                                      : spread / (2 * tau);
        if (ratio > 1) ++part.violations;
        if (part.index < 0 || ratio > part.ratio) {
          part.output = static_cast<int>(o);
          part.index = static_cast<int64_t>(i);
          part.low = lo;
          part.high = hi;
          part.bound = 2 * tau;
          part.ratio = ratio;
        }
      }
    };
    reduce_chunks(want.value.size(), Split{}, s, scan, merge);
  }
  return s;
}

std::string config_name(const LaunchConfig& c) {
  return fmt::format("{{block {}, threads {}}}", c.block, c.threads);
}

}  // namespace

GateResult judge_ord03(const JudgeInput& in) {
  if (auto screened = screen_calls(in)) return *screened;
  // Disagreement between schedules first: it names the defect (schedule dependence) better than
  // "call k is off"; calls that agree but are all wrong are caught against the oracle below.
  const Spread s = ComparisonMemo::pass<Spread>(ComparisonMemo::Pass::kSpread, &in.oracle, in.calls,
                                                0, [&] { return config_spread(in); });
  if (s.violations > 0) {
    Evidence e;
    e.output = s.output;
    e.worst_index = s.index;
    e.candidate_value = s.high;
    e.oracle_value = in.oracle.outputs[static_cast<std::size_t>(s.output)].value[static_cast<std::size_t>(s.index)];
    e.worst_ratio = s.ratio;
    e.violations = s.violations;
    e.summary = fmt::format("{} calls disagree at {}: values span [{}, {}], more than 2*tau = {} "
                            "(oracle {}); {} elements", in.calls.size(),
                            element_name(in.sig, s.output, s.index), show(s.low), show(s.high),
                            show(s.bound), show(e.oracle_value), s.violations);
    GateResult r = make_result(in, Verdict::kFail, std::move(e));
    r.finding = Finding::kScheduleDependent;
    return r;
  }
  const WorstCall w = compare_all_calls(in);
  Evidence e = comparison_evidence(in, w.comparison);
  e.violations = w.violations;
  const LaunchConfig& cfg = in.calls[static_cast<std::size_t>(w.call)].launch;
  e.summary = fmt::format("call {} {}: {}", w.call, config_name(cfg), comparison_summary(in, w.comparison));
  GateResult r = make_result(in, w.violations == 0 ? Verdict::kPass : Verdict::kFail, std::move(e));
  if (r.verdict == Verdict::kFail) r.finding = value_finding(w.comparison);
  return r;
}

}  // namespace kcv::gates
