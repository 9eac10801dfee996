// File: src/gates/exc.cpp
// EXC family (research note §4): the NaN/+Inf/−Inf mask of every output equals the oracle's
// under the declared profile (EXC-01), and subnormals are kept or flushed as the profile says
// (EXC-02). Injections sit where kernels go wrong: first/middle/last elements, the partial last
// tile, inside one reduction line, both operands of a binary op at once, fully −Inf softmax rows,
// and near-overflow values only for ops where every correct evaluation order agrees on the class.
// EXC-01 judges the mask only: finite-in-both elements are CMP-01's business (a masked softmax
// that treats −Inf as 0 keeps the mask and gets the values wrong, which CMP-01's probes see).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "gates/families.hpp"
#include "gates/judge_common.hpp"
#include "gates/parallel.hpp"
#include "gates/plan_common.hpp"

namespace kcv::gates {

namespace {

constexpr int64_t kMaskedRowLength = 37;  // short rows keep a fully −Inf row's injection list small

/// Adds an injection unless that element of that input already has one.
void inject(Probe& p, int input, int64_t index, Special s) {
  if (index < 0) return;
  for (const Injection& inj : p.injections) {
    if (inj.input == input && inj.index == index) return;
  }
  p.injections.push_back(Injection{input, index, s});
}

/// first, middle, last, and the last element of row 1 (in the partial last tile of a tail shape).
std::vector<int64_t> spread_positions(int64_t numel, int64_t row) {
  std::set<int64_t> at = {0, numel / 2, numel - 1};
  at.insert(numel >= 2 * row ? 2 * row - 1 : row - 1);
  std::erase_if(at, [&](int64_t i) { return i < 0 || i >= numel; });
  return {at.begin(), at.end()};
}

void add_position_probes(const OpSignature& sig, const Contract& c, const Sizes& s,
                         std::vector<Probe>& out) {
  const int64_t numel0 = input_numel(sig, 0, s);
  const int64_t row = s.at(innermost_dim(sig));
  for (Special sp : {Special::kNaN, Special::kPosInf, Special::kNegInf}) {
    Probe p = make_probe(
        sig, c, s, Distribution::kNormal,
        fmt::format("{} at first/middle/last/tail of {}", special_name(sp), sig.inputs[0].name));
    for (int64_t i : spread_positions(numel0, row)) inject(p, 0, i, sp);
    out.push_back(std::move(p));
  }
}

void add_operand_probes(const OpSignature& sig, const Contract& c, const Sizes& s,
                        std::vector<Probe>& out) {
  using Pair = std::pair<std::optional<Special>, std::optional<Special>>;
  const std::array<Pair, 6> pairs = {{{Special::kNaN, Special::kNaN},
                                      {Special::kPosInf, Special::kNegInf},
                                      {Special::kNaN, std::nullopt},
                                      {std::nullopt, Special::kNaN},
                                      {Special::kPosZero, Special::kPosInf},
                                      {Special::kNegInf, Special::kNegInf}}};
  for (std::size_t j = 1; j < sig.inputs.size(); ++j) {
    const int64_t n = input_numel(sig, j, s);
    Probe p = make_probe(sig, c, s, Distribution::kNormal, "");
    if (same_dims(sig, 0, j)) {  // both operands of a binary op at the same index
      p.label = fmt::format("specials in {} and {} at the same index", sig.inputs[0].name,
                            sig.inputs[j].name);
      for (std::size_t k = 0; k < pairs.size(); ++k) {
        const int64_t at = n * static_cast<int64_t>(k) / static_cast<int64_t>(pairs.size());
        if (pairs[k].first) inject(p, 0, at, *pairs[k].first);
        if (pairs[k].second) inject(p, static_cast<int>(j), at, *pairs[k].second);
      }
    } else {
      p.label = fmt::format("NaN/+Inf/-Inf in {}", sig.inputs[j].name);
      inject(p, static_cast<int>(j), 0, Special::kNaN);
      inject(p, static_cast<int>(j), n / 2, Special::kNegInf);
      inject(p, static_cast<int>(j), n - 1, Special::kPosInf);
    }
    out.push_back(std::move(p));
  }
}

/// The first input that carries the reduction dim (matmul: a; conv: x).
int reduced_input(const OpSignature& sig) {
  for (std::size_t j = 0; j < sig.inputs.size(); ++j) {
    const auto& d = sig.inputs[j].dims;
    if (std::find(d.begin(), d.end(), sig.reduction_dim) != d.end()) return static_cast<int>(j);
  }
  return -1;
}

void add_line_probes(const OpSignature& sig, const Contract& c, const Sizes& s,
                     std::vector<Probe>& out) {
  const int j = reduced_input(sig);
  if (j < 0) return;
  const auto ju = static_cast<std::size_t>(j);
  const std::string& red = sig.reduction_dim;
  const int64_t len = s.at(red);
  const auto at = [&](int64_t line, int64_t k) { return line_index(sig, ju, s, red, line, k); };
  const bool two_lines = line_count(sig, ju, s, red) >= 2;

  Probe nan =
      make_probe(sig, c, s, Distribution::kNormal, fmt::format("NaN inside one {} line", red));
  inject(nan, j, at(0, len / 3), Special::kNaN);
  out.push_back(std::move(nan));
  if (len >= 2) {
    Probe both = make_probe(sig, c, s, Distribution::kNormal,
                            fmt::format("+Inf and -Inf in one {} line", red));
    inject(both, j, at(two_lines ? 1 : 0, len >= 3 ? 1 : 0), Special::kPosInf);
    inject(both, j, at(two_lines ? 1 : 0, len - (len >= 3 ? 2 : 1)), Special::kNegInf);
    out.push_back(std::move(both));
  }
  if (two_lines) {
    Probe split = make_probe(sig, c, s, Distribution::kNormal,
                             fmt::format("+Inf in one {} line, -Inf in the next", red));
    inject(split, j, at(0, len / 2), Special::kPosInf);
    inject(split, j, at(1, len / 2), Special::kNegInf);
    out.push_back(std::move(split));
  }
}

void add_masked_row_probe(const OpSignature& sig, const Contract& c, Sizes s,
                          std::vector<Probe>& out) {
  const std::string& red = sig.reduction_dim;
  if (!is_fixed(c, red)) s[red] = std::min<int64_t>(s[red], kMaskedRowLength);
  const int64_t len = s.at(red);
  Probe p = make_probe(sig, c, s, Distribution::kNormal,
                       fmt::format("fully -Inf {} line; one finite in the next", red));
  for (int64_t k = 0; k < len; ++k)
    inject(p, 0, line_index(sig, 0, s, red, 0, k), Special::kNegInf);
  if (line_count(sig, 0, s, red) >= 2) {
    for (int64_t k = 0; k < len; ++k) {
      if (k != len / 2) inject(p, 0, line_index(sig, 0, s, red, 1, k), Special::kNegInf);
    }
  }
  out.push_back(std::move(p));
}

void add_overflow_probe(const OpSignature& sig, const Contract& c, const Sizes& s,
                        std::vector<Probe>& out) {
  Probe p = make_probe(sig, c, s, Distribution::kNormal, "near-overflow values");
  if (huge_safe_elementwise(sig)) {
    const int64_t n = input_numel(sig, 0, s);
    inject(p, 0, 0, Special::kHuge);
    inject(p, 0, n / 2, Special::kHuge);
    if (sig.inputs.size() >= 2 && same_dims(sig, 0, 1)) {
      inject(p, 0, n - 1, Special::kHuge);
      inject(p, 1, n - 1, Special::kHuge);
    }
  } else if (huge_safe_reduction(sig)) {
    const std::string& red = sig.reduction_dim;
    const int64_t len = s.at(red);
    inject(p, 0, line_index(sig, 0, s, red, 0, len / 2), Special::kHuge);
    if (two_huge_safe(sig) && line_count(sig, 0, s, red) >= 2 && len >= 2) {
      inject(p, 0, line_index(sig, 0, s, red, 1, 0), Special::kHuge);
      inject(p, 0, line_index(sig, 0, s, red, 1, len - 1), Special::kHuge);
    }
  } else {
    return;
  }
  out.push_back(std::move(p));
}

bool softmax_like(const OpSignature& sig) { return sig.uses_exp && !sig.reduction_dim.empty(); }

}  // namespace

std::vector<Probe> plan_exc01(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  if (sig.inputs.empty()) return {};
  const Sizes s = tail_sizes(sig, contract);
  std::vector<Probe> probes;
  add_position_probes(sig, contract, s, probes);
  add_operand_probes(sig, contract, s, probes);
  if (!sig.reduction_dim.empty()) add_line_probes(sig, contract, s, probes);
  if (softmax_like(sig)) add_masked_row_probe(sig, contract, s, probes);
  add_overflow_probe(sig, contract, s, probes);
  return number_probes(std::move(probes), GateId::kExc01, seed);
}

std::vector<Probe> plan_exc02(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  if (!exc02_not_applicable(sig, contract).empty()) return {};
  const Sizes s = reference_sizes(sig, contract);
  std::vector<Probe> probes;
  probes.push_back(make_probe(sig, contract, s, Distribution::kSubnormal, "subnormal inputs"));
  if (sig.inputs.size() >= 2) {
    Probe p = make_probe(sig, contract, s, Distribution::kNormal,
                         fmt::format("subnormal {}, normal other inputs", sig.inputs[0].name));
    p.inputs[0].dist = Distribution::kSubnormal;
    probes.push_back(std::move(p));
  }
  const bool products = sig.name == "mul" || sig.op_class == OpClass::kMatmul ||
                        sig.op_class == OpClass::kConvolution;
  if (products)
    probes.push_back(make_probe(sig, contract, s, Distribution::kTiny, "underflowing products"));
  if (sig.uses_exp) {
    Probe p =
        make_probe(sig, contract, s, Distribution::kNormal, "exp results in the subnormal range");
    p.inputs[0].dist = Distribution::kExpUnderflow;
    probes.push_back(std::move(p));
  }
  return number_probes(std::move(probes), GateId::kExc02, seed);
}

namespace {

enum class Mask { kFinite, kNaN, kPosInf, kNegInf };

Mask mask_of_value(double x) {
  if (std::isnan(x)) return Mask::kNaN;
  if (std::isinf(x)) return x > 0 ? Mask::kPosInf : Mask::kNegInf;
  return Mask::kFinite;
}

std::string_view mask_name(Mask m) {
  constexpr std::array<std::string_view, 4> kNames = {"finite", "NaN", "+Inf", "-Inf"};
  return kNames[static_cast<std::size_t>(m)];
}

struct MaskCheck {
  int64_t mismatches = 0;
  int64_t ambiguous = 0;  // the declared-type run disagrees with every sanctioned class
  std::size_t call = 0;
  int output = 0;
  int64_t index = -1;
  double candidate = 0, oracle = 0;
};

/// Per element: the candidate's class must equal the oracle's or, where the profile sanctions a
/// second result, the alternative's. Where the declared-type run (a module's own fp32 eager, an
/// op's simulation in the declared types) has a class neither result has, no correct evaluation
/// in the declared types is bound to the fp64 class (an intermediate overflows in fp32, say): the
/// element is ambiguous and not judged. Index outputs compare values exactly.
MaskCheck check_masks(const JudgeInput& in) {
  MaskCheck m;
  const auto merge = [](MaskCheck& total, const MaskCheck& part) {
    const int64_t ambiguous = total.ambiguous + part.ambiguous;
    if (total.mismatches == 0) {
      total = part;
    } else {
      total.mismatches += part.mismatches;
    }
    total.ambiguous = ambiguous;
  };
  for (std::size_t k = 0; k < in.calls.size(); ++k) {
    for (std::size_t o = 0; o < in.oracle.outputs.size(); ++o) {
      const OracleOutput& want = in.oracle.outputs[o];
      const HostTensor& got = in.calls[k].outputs[o];
      const bool exact = !is_floating(want.dtype);
      const bool has_alt = want.alternative.size() == want.value.size();
      const bool has_decl = want.declared.size() == want.value.size();
      const auto scan = [&](std::size_t begin, std::size_t end, MaskCheck& part) {
        for (std::size_t i = begin; i < end; ++i) {
          const double x = got.value_at(static_cast<int64_t>(i));
          const double y = want.value[i];
          const auto same = [&](double ref) {
            return exact ? (x == ref || (std::isnan(x) && std::isnan(ref)))
                         : mask_of_value(x) == mask_of_value(ref);
          };
          if (same(y) || (has_alt && same(want.alternative[i]))) continue;
          if (!exact && has_decl) {
            const Mask d = mask_of_value(want.declared[i]);
            if (d != mask_of_value(y) && (!has_alt || d != mask_of_value(want.alternative[i]))) {
              ++part.ambiguous;
              continue;
            }
          }
          if (part.mismatches++ == 0) {
            part.call = k;
            part.output = static_cast<int>(o);
            part.index = static_cast<int64_t>(i);
            part.candidate = x;
            part.oracle = y;
          }
        }
      };
      reduce_chunks(want.value.size(), Split{}, m, scan, merge);
    }
  }
  return m;
}

}  // namespace

// The mask only: finite elements are CMP-01's business (a NaN changes the elements it reaches,
// and judging the others by value here would count one value defect twice).
GateResult judge_exc01(const JudgeInput& in) {
  if (auto screened = screen_calls(in)) return *screened;
  const MaskCheck m = ComparisonMemo::pass<MaskCheck>(ComparisonMemo::Pass::kMasks, &in.oracle,
                                                      in.calls, 0, [&] { return check_masks(in); });
  const std::string ambiguous =
      m.ambiguous == 0
          ? ""
          : fmt::format("; {} element(s) not judged (the declared-type run has another class)",
                        m.ambiguous);
  Evidence e;
  if (m.mismatches > 0) {
    e.output = m.output;
    e.worst_index = m.index;
    e.candidate_value = m.candidate;
    e.oracle_value = m.oracle;
    e.worst_ratio = std::numeric_limits<double>::infinity();
    e.violations = m.mismatches;
    e.summary = fmt::format(
        "call {}: {} is {} ({}) where the oracle is {} ({}); {} element(s) differ "
        "in class{}",
        m.call, element_name(in.sig, m.output, m.index), mask_name(mask_of_value(m.candidate)),
        show(m.candidate), mask_name(mask_of_value(m.oracle)), show(m.oracle), m.mismatches,
        ambiguous);
    GateResult r = make_result(in, Verdict::kFail, std::move(e));
    r.finding = Finding::kClassMismatch;
    return r;
  }
  e.summary = fmt::format("{} call(s): the NaN/+Inf/-Inf mask equals the oracle's{}",
                          in.calls.size(), ambiguous);
  return make_result(in, Verdict::kPass, std::move(e));
}

namespace {

struct SubnormalCheck {
  int64_t flushed = 0;  // zero where every sanctioned result is a nonzero subnormal beyond tau
  Comparison worst;     // the first such element
};

bool flushed_to_zero(DType dtype, double x, double y, double tau) {
  if (x != 0 || y == 0 || !(std::fabs(y) < min_normal(dtype))) return false;
  const double t = effective_tau(dtype, y, tau);
  return std::isnan(t) || std::fabs(y) > t;  // the bound does not admit the zero
}

void check_subnormal_output(const OracleOutput& want, const HostTensor& got, int output,
                            SubnormalCheck& s) {
  const bool has_alt = want.alternative.size() == want.value.size();
  const auto scan = [&](std::size_t begin, std::size_t end, SubnormalCheck& part) {
    for (std::size_t i = begin; i < end; ++i) {
      const auto idx = static_cast<int64_t>(i);
      const double x = got.value_at(idx);
      if (!flushed_to_zero(want.dtype, x, want.value[i], want.tau[i])) continue;
      if (has_alt && !flushed_to_zero(want.dtype, x, want.alternative[i], want.tau[i])) continue;
      if (part.flushed++ == 0) {
        part.worst.worst_output = output;
        part.worst.worst_index = idx;
        part.worst.candidate = x;
        part.worst.oracle = want.value[i];
        part.worst.tau = want.tau[i];
        part.worst.worst_ratio = std::numeric_limits<double>::infinity();
      }
    }
  };
  const auto merge = [](SubnormalCheck& total, const SubnormalCheck& part) {
    if (total.flushed == 0) total.worst = part.worst;
    total.flushed += part.flushed;
  };
  reduce_chunks(want.value.size(), Split{}, s, scan, merge);
}

}  // namespace

// By class: a subnormal result (or the effect of a subnormal input) read as zero where the
// profile keeps subnormals. Under an FTZ profile the flushed result is the alternative, so
// flushing and keeping both pass there; values are CMP-01's business.
GateResult judge_exc02(const JudgeInput& in) {
  if (auto screened = screen_calls(in)) return *screened;
  SubnormalCheck s;
  const std::size_t outputs = in.oracle.outputs.size();
  std::size_t k = 0;
  for (const CallRecord& call : in.calls) {
    for (std::size_t o = 0; o < outputs; ++o) {
      if (!is_floating(in.oracle.outputs[o].dtype)) continue;
      const SubnormalCheck part = ComparisonMemo::pass<SubnormalCheck>(
          ComparisonMemo::Pass::kSubnormals, &in.oracle, in.calls, k * outputs + o, [&] {
            SubnormalCheck c;
            check_subnormal_output(in.oracle.outputs[o], call.outputs[o], static_cast<int>(o), c);
            return c;
          });
      if (s.flushed == 0) s.worst = part.worst;  // the first call's and output's first flush
      s.flushed += part.flushed;
    }
    ++k;
  }
  const std::string_view name = profile(in.contract.profile).name;
  if (s.flushed == 0) {
    Evidence e;
    e.summary = fmt::format("{} call(s): no subnormal flushed against {}", in.calls.size(), name);
    return make_result(in, Verdict::kPass, std::move(e));
  }
  Evidence e = comparison_evidence(in, s.worst);
  e.violations = s.flushed;
  e.summary = fmt::format(
      "{} subnormal result(s) read as zero, which {} keeps; first {}: candidate {} vs "
      "oracle {}",
      s.flushed, name, element_name(in.sig, s.worst.worst_output, s.worst.worst_index),
      show(s.worst.candidate), show(s.worst.oracle));
  GateResult r = make_result(in, Verdict::kFail, std::move(e));
  r.finding = Finding::kSubnormalFlushed;
  return r;
}

}  // namespace kcv::gates
