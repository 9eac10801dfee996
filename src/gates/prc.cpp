// File: src/gates/prc.cpp
// PRC family (research note §4, §6.5): storage/conversion precision (PRC-01) and accumulation
// precision (PRC-02), both decided by the bits-lost statistic
//   bits = log2(RMS_i(ŷ_i − y*_i) / RMS_i(d_i − y*_i)),
// where d is the oracle's simulation of a conforming implementation in the declared types. The
// statistic is an RMS over all outputs, so unlike a max-threshold test it does not depend on how
// many outputs are checked; fp16 vs fp32 accumulation differs by ~13 bits, bf16 by ~16. RMS(d) is
// floored at u_out·RMS(|y*|)/4 (a quarter of the output's unit roundoff, below the RMS of a
// correct rounding) so that exact declared results do not divide by zero. PRC-01 also checks
// conversion ties bitwise: at an exact tie, truncation errs by exactly half an ulp, which the
// bound admits; only the bits tell RN-even from truncation or round-away.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "gates/families.hpp"
#include "gates/judge_common.hpp"
#include "gates/parallel.hpp"
#include "gates/plan_common.hpp"

namespace kcv::gates {

namespace {

constexpr std::array<int64_t, 3> kPrc02Lengths = {256, 2048, 8192};
constexpr int64_t kPrc02MinOutputs = 32;  // an RMS over >= 32 outputs: P(F(32,32) > 16) ~ 3e-12
/// Relative slack for "tau is only the final rounding": tau and rounding_bound are the same fp64
/// formula, possibly summed in a different order.
constexpr double kSameBoundSlack = 0x1p-40;

bool named(const OpSignature& sig, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), sig.name) != names.end();
}

}  // namespace

double op_ulp_budget(const OpSignature& sig, const Contract& contract, double max_abs_x) {
  const Profile& p = profile(contract.profile);
  double b = 0;
  if (named(sig, {"div", "softmax", "layernorm", "rmsnorm", "mean", "sigmoid"})) b += p.ulp_div;
  if (named(sig, {"sqrt", "layernorm", "rmsnorm"})) b += p.ulp_sqrt;
  if (named(sig, {"gelu", "gelu_tanh", "log_softmax", "sigmoid"})) b += p.ulp_transcendental;
  if (op_ulp_budget_reads_inputs(sig)) {
    // Softmax-like ops take exp of x − max, up to twice the largest input magnitude.
    b += exp_ulp_budget(p, sig.reduction_dim.empty() ? max_abs_x : 2 * max_abs_x);
  }
  // TF32 under triton-default needs no budget: the oracle's declared simulation rounds the
  // inputs of fp32 dot products to TF32 when the profile allows it.
  return b;
}

bool op_ulp_budget_reads_inputs(const OpSignature& sig) {
  return sig.uses_exp && sig.name != "sigmoid";
}

double prc01_bits_threshold(double ulp_budget) { return 2.0 + std::log2(1.0 + ulp_budget); }

std::vector<Probe> plan_prc01(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  if (!prc01_not_applicable(sig, contract).empty()) return {};
  const Distribution d = Distribution::kLowBits;
  std::vector<Probe> probes;
  probes.push_back(make_probe(sig, contract, reference_sizes(sig, contract), d, "reference low-bits"));
  probes.push_back(make_probe(sig, contract, tail_sizes(sig, contract), d, "tile+1 low-bits"));
  probes.push_back(make_probe(sig, contract, reference_sizes(sig, contract), d, "reference low-bits #2"));
  return number_probes(std::move(probes), GateId::kPrc01, seed);
}

std::vector<Probe> plan_prc02(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  if (!prc02_not_applicable(sig, contract).empty()) return {};
  const std::string& red = sig.reduction_dim;
  std::vector<int64_t> lengths(kPrc02Lengths.begin(), kPrc02Lengths.end());
  if (is_fixed(contract, red)) lengths = {reference_sizes(sig, contract)[red]};
  std::vector<Probe> probes;
  for (int64_t k : lengths) {
    Sizes s = reference_sizes(sig, contract);
    s[red] = k;
    s = spread_outputs(sig, contract, s, red, kPrc02MinOutputs);
    for (Distribution d : {Distribution::kNormal, Distribution::kUniform01}) {
      probes.push_back(make_probe(sig, contract, s, d, fmt::format("{}={} {}", red, k, distribution_name(d))));
    }
  }
  return number_probes(std::move(probes), GateId::kPrc02, seed);
}

namespace {

struct SquareSums {
  double se = 0, sd = 0, sy = 0;
  int64_t n = 0;
};

}  // namespace

/// The statistic for one output; `declared` empty means "the correctly rounded y*". Summed in
/// blocks (reduce_blocks), so the same on any number of threads.
BitsLost bits_lost(const OracleOutput& want, const HostTensor& got, Split split) {
  const bool sim = want.declared.size() == want.value.size();
  SquareSums s;
  const auto sum = [&](std::size_t begin, std::size_t end, SquareSums& part) {
    for (std::size_t i = begin; i < end; ++i) {
      const double y = want.value[i];
      const double x = got.value_at(static_cast<int64_t>(i));
      const double d = sim ? want.declared[i] : round_to(want.dtype, y);
      if (!std::isfinite(y) || !std::isfinite(x) || !std::isfinite(d)) continue;
      part.se += (x - y) * (x - y);
      part.sd += (d - y) * (d - y);
      part.sy += y * y;
      ++part.n;
    }
  };
  const auto merge = [](SquareSums& total, const SquareSums& part) {
    total.se += part.se;
    total.sd += part.sd;
    total.sy += part.sy;
    total.n += part.n;
  };
  reduce_blocks(want.value.size(), split, s, sum, merge);
  BitsLost b;
  b.n = s.n;
  if (b.n == 0) return b;
  const auto n = static_cast<double>(b.n);
  b.rms_e = std::sqrt(s.se / n);
  b.rms_d = std::max(std::sqrt(s.sd / n), unit_roundoff(want.dtype) * std::sqrt(s.sy / n) / 4);
  const double floor_bits = -static_cast<double>(significand_bits(want.dtype));
  if (b.rms_e == 0) {
    b.bits = floor_bits;
  } else {
    b.bits = b.rms_d == 0 ? std::numeric_limits<double>::infinity()
                          : std::max(floor_bits, std::log2(b.rms_e / b.rms_d));
  }
  return b;
}

namespace {

struct TieCheck {
  int64_t ties = 0;
  int64_t wrong = 0;
  Comparison first;  // the first wrongly rounded tie
};

/// Ties are checked only where the bound is one correct rounding: the final rounding, plus at most
/// half an ulp of a compute type wider than the output (an exact tie has p_out + 1 significant
/// bits, so rounding it to the wider compute type first is exact and cannot move it off the tie).
double single_rounding_bound(const PrecisionModel& m, double y) {
  return rounding_bound(m, y, m.u_c < m.u_out ? 0.5 : 0.0) * (1 + kSameBoundSlack);
}

/// The elements of one output whose oracle value is a finite exact tie of the output type with a
/// positive bound, in index order: a function of the oracle result alone, so every call and
/// profile judged with that result reads one list (ComparisonMemo).
std::vector<int64_t> tie_elements(const OracleOutput& want) {
  std::vector<int64_t> ties;
  reduce_chunks(
      want.value.size(), Split{}, ties,
      [&](std::size_t begin, std::size_t end, std::vector<int64_t>& part) {
        for (std::size_t i = begin; i < end; ++i) {
          const double y = want.value[i];
          if (std::isfinite(y) && want.tau[i] > 0 && is_tie(want.dtype, y))
            part.push_back(static_cast<int64_t>(i));
        }
      },
      [](std::vector<int64_t>& total, const std::vector<int64_t>& part) {
        total.insert(total.end(), part.begin(), part.end());
      });
  return ties;
}

void check_ties(const OracleOutput& want, const std::vector<int64_t>& ties, const HostTensor& got,
                int output, const Contract& contract, TieCheck& t) {
  const PrecisionModel m = precision_model(contract, want.dtype);
  const bool ftz = m.profile != nullptr && m.profile->flush_subnormals;
  for (const int64_t idx : ties) {
    const auto i = static_cast<std::size_t>(idx);
    const double y = want.value[i];
    const double tau = want.tau[i];
    if (tau > single_rounding_bound(m, y)) continue;
    if (ftz && std::fabs(y) < min_normal(want.dtype)) continue;
    ++t.ties;
    if (got.bits_at(idx) == encode(want.dtype, y)) continue;
    if (t.wrong++ == 0) {
      t.first.worst_output = output;
      t.first.worst_index = idx;
      t.first.candidate = got.value_at(idx);
      t.first.oracle = y;
      t.first.tau = tau;
      t.first.worst_ratio = std::numeric_limits<double>::infinity();
    }
  }
}

double max_abs_input(const std::vector<HostTensor>& inputs) {
  double m = 0;
  const auto scan = [](const HostTensor& t) {
    return [&t](std::size_t begin, std::size_t end, double& part) {
      for (std::size_t i = begin; i < end; ++i) {  // no f64 copy: an input can be gigabytes
        const double x = t.value_at(static_cast<int64_t>(i));
        if (std::isfinite(x)) part = std::max(part, std::fabs(x));
      }
    };
  };
  for (const HostTensor& t : inputs) {
    if (!is_floating(t.dtype())) continue;
    reduce_chunks(static_cast<std::size_t>(t.numel()), Split{}, m, scan(t),
                  [](double& total, double part) { total = std::max(total, part); });
  }
  return m;
}

std::optional<std::string> missing_simulation(const JudgeInput& in) {
  if (in.sig.reduction_dim.empty()) return std::nullopt;  // elementwise: d = round(y*) suffices
  for (const OracleOutput& o : in.oracle.outputs) {
    if (is_floating(o.dtype) && o.declared.size() != o.value.size()) {
      return fmt::format("the oracle gives no declared-type simulation for '{}' (needed for the "
                         "bits-lost statistic of a reduction)", in.sig.name);
    }
  }
  return std::nullopt;
}

/// Worst bits lost over every call and floating output.
BitsLost worst_bits(const JudgeInput& in) {
  BitsLost worst;
  bool any = false;
  const std::size_t outputs = in.oracle.outputs.size();
  std::size_t k = 0;
  for (const CallRecord& call : in.calls) {
    for (std::size_t o = 0; o < outputs; ++o) {
      if (!is_floating(in.oracle.outputs[o].dtype)) continue;
      const BitsLost b = ComparisonMemo::pass<BitsLost>(
          ComparisonMemo::Pass::kBitsLost, &in.oracle, in.calls, k * outputs + o,
          [&] { return bits_lost(in.oracle.outputs[o], call.outputs[o]); });
      if (b.n > 0 && (!any || b.bits > worst.bits)) worst = b;
      any = any || b.n > 0;
    }
    ++k;
  }
  return worst;
}

GateResult judge_bits(const JudgeInput& in, double threshold, bool ties) {
  if (auto screened = screen_calls(in)) return *screened;
  if (auto why = missing_simulation(in)) return error_result(in, *why);
  const BitsLost b = worst_bits(in);
  TieCheck t;
  for (const CallRecord& call : in.calls) {
    for (std::size_t o = 0; ties && o < in.oracle.outputs.size(); ++o) {
      const OracleOutput& want = in.oracle.outputs[o];
      if (!is_floating(want.dtype)) continue;
      const std::vector<int64_t> at = ComparisonMemo::pass<std::vector<int64_t>>(
          ComparisonMemo::Pass::kTies, &in.oracle, in.calls, o, [&] { return tie_elements(want); });
      check_ties(want, at, call.outputs[o], static_cast<int>(o), in.contract, t);
    }
  }
  const WorstCall w = compare_all_calls(in);
  Evidence e = comparison_evidence(in, t.wrong > 0 ? t.first : w.comparison);
  e.ratio_quantiles = w.comparison.quantiles;
  e.bits_lost = b.bits;
  e.violations = t.wrong + (b.bits > threshold ? 1 : 0);
  e.summary = fmt::format("{:.2f} bits lost against the declared types (limit {:.2f}; RMS error {} vs "
                          "declared {} over {} elements)", b.bits, threshold, show(b.rms_e), show(b.rms_d), b.n);
  if (ties) {
    e.summary += fmt::format("; {} of {} exact ties not rounded to nearest-even", t.wrong, t.ties);
    if (t.wrong > 0) {
      e.summary += fmt::format(" (first {}: candidate {}, RN-even {})",
                               element_name(in.sig, t.first.worst_output, t.first.worst_index),
                               show(t.first.candidate), show(round_to(in.oracle.outputs[static_cast<std::size_t>(t.first.worst_output)].dtype, t.first.oracle)));
    }
  }
  GateResult r = make_result(in, e.violations == 0 ? Verdict::kPass : Verdict::kFail, std::move(e));
  if (r.verdict == Verdict::kFail) r.finding = Finding::kPrecisionLost;
  return r;
}

}  // namespace

GateResult judge_prc01(const JudgeInput& in) {
  // Only an exp budget reads the inputs; a caller may pass none otherwise (gate.hpp).
  const double max_abs = op_ulp_budget_reads_inputs(in.sig) ? max_abs_input(in.inputs) : 0.0;
  const double budget = op_ulp_budget(in.sig, in.contract, max_abs);
  return judge_bits(in, prc01_bits_threshold(budget), /*ties=*/true);
}

GateResult judge_prc02(const JudgeInput& in) { return judge_bits(in, kPrc02BitsThreshold, /*ties=*/false); }

}  // namespace kcv::gates
