// File: src/gates/cmp.cpp
// CMP family (research note §4): agreement with the oracle over the shape domain (CMP-01), the
// structural interface contract on strided views (CMP-02, tolerance-free on the buffers) and
// numeric agreement on mixed non-contiguous layouts (CMP-03). Distributions that would make a
// correct fp32 kernel overflow internally while the fp64 oracle stays finite are left out per op
// (near-overflow except for selection ops; wide range for exp, whose outputs would all be Inf).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "gates/families.hpp"
#include "gates/judge_common.hpp"
#include "gates/plan_common.hpp"
#include "kcv/generate.hpp"

namespace kcv::gates {

namespace {

constexpr std::array<Distribution, 6> kCmp01Distributions = {
    Distribution::kNormal,       Distribution::kUniform01, Distribution::kHeavyTail,
    Distribution::kCancellation, Distribution::kWideRange, Distribution::kNearOverflow};

constexpr std::array<Distribution, 4> kCmp03Distributions = {
    Distribution::kNormal, Distribution::kUniform01, Distribution::kHeavyTail,
    Distribution::kCancellation};

bool distribution_applies(const OpSignature& sig, Distribution d) {
  if (d == Distribution::kNearOverflow) return near_overflow_safe(sig);
  if (d == Distribution::kWideRange) return sig.name != "exp";
  return true;
}

std::string label_of(const std::string& shape, Distribution d) {
  return fmt::format("{} {}", shape, distribution_name(d));
}

}  // namespace

std::vector<Probe> plan_cmp01(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  std::vector<Probe> probes;
  for (const ShapeCase& sc : shape_plan(sig, contract, /*include_large=*/true)) {
    // Large shapes cost seconds per probe: the two distributions that bound all others suffice.
    const bool large = sc.label.find("large") != std::string::npos;
    for (Distribution d : kCmp01Distributions) {
      if (!distribution_applies(sig, d)) continue;
      if (large && d != Distribution::kNormal && d != Distribution::kUniform01) continue;
      probes.push_back(make_probe(sig, contract, sc.sizes, d, label_of(sc.label, d)));
    }
  }
  return number_probes(std::move(probes), GateId::kCmp01, seed);
}

std::vector<Probe> plan_cmp02(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  const Sizes sizes = reference_sizes(sig, contract);
  std::vector<Probe> probes;
  for (std::size_t j = 0; j < sig.inputs.size(); ++j) {
    for (const Layout& layout : layout_plan(shape_of(sig.inputs[j], sizes))) {
      Probe p = make_probe(sig, contract, sizes, Distribution::kNormal,
                           fmt::format("{} {}", sig.inputs[j].name, layout_name(layout.kind)));
      p.inputs[j].layout = layout;
      probes.push_back(std::move(p));
    }
  }
  // Every input at once: padded rows behind an odd storage offset (misaligned, not by stride 1).
  Probe padded =
      make_probe(sig, contract, sizes, Distribution::kNormal, "all inputs padded+offset");
  for (InputSpec& in : padded.inputs) in.layout = Layout{LayoutKind::kPaddedRows, 2, 5, 3};
  probes.push_back(std::move(padded));
  return number_probes(std::move(probes), GateId::kCmp02, seed);
}

std::vector<Probe> plan_cmp03(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  const Sizes sizes = tail_sizes(sig, contract);
  std::vector<std::vector<Layout>> layouts;
  std::size_t rounds = 0;
  for (const TensorSig& t : sig.inputs) {
    layouts.push_back(layout_plan(shape_of(t, sizes)));
    rounds = std::max(rounds, layouts.back().size());
  }
  std::vector<Probe> probes;
  for (std::size_t i = 0; i < rounds; ++i) {
    for (Distribution d : kCmp03Distributions) {
      Probe p = make_probe(sig, contract, sizes, d, "");
      std::string names;
      for (std::size_t j = 0; j < layouts.size(); ++j) {  // rotate: each input a different layout
        if (layouts[j].empty()) continue;
        p.inputs[j].layout = layouts[j][(i + j) % layouts[j].size()];
        names += fmt::format("{}{}={}", names.empty() ? "" : ",", sig.inputs[j].name,
                             layout_name(p.inputs[j].layout.kind));
      }
      p.label = label_of(names, d);
      probes.push_back(std::move(p));
    }
  }
  return number_probes(std::move(probes), GateId::kCmp03, seed);
}

GateResult judge_cmp01(const JudgeInput& in) { return judge_numeric(in); }

namespace {

struct Break {
  Finding finding;
  std::string what;
};

/// What broke in one call, tolerance-free facts of the buffer audit only.
std::vector<Break> structural_breaks(const JudgeInput& in, const CallRecord& call) {
  std::vector<Break> broke;
  if (!call.inputs_unchanged) {
    const auto j = static_cast<std::size_t>(std::max(call.mutated_input, 0));
    const std::string name =
        j < in.sig.inputs.size() ? in.sig.inputs[j].name : fmt::format("input {}", j);
    broke.push_back(
        {Finding::kInputModified, fmt::format("{} modified (first at storage element {})", name,
                                              call.first_mutated_input_elem)});
  }
  if (!call.guards_intact) {
    broke.push_back(
        {Finding::kWrittenOutside,
         fmt::format("written outside the outputs (guard byte offset {}){}",
                     call.first_guard_violation, call.message.empty() ? "" : ": " + call.message)});
  }
  if (!call.all_written) {
    broke.push_back(
        {Finding::kOutputUnwritten,
         fmt::format("{} never written (it still holds the call's sentinel)",
                     element_name(in.sig, call.unwritten_output, call.first_unwritten))});
  }
  return broke;
}

}  // namespace

// Structural and tolerance-free only: values are CMP-01's and CMP-03's business.
GateResult judge_cmp02(const JudgeInput& in) {
  if (auto screened = screen_calls(in)) return *screened;
  for (std::size_t k = 0; k < in.calls.size(); ++k) {
    const std::vector<Break> broke = structural_breaks(in, in.calls[k]);
    if (broke.empty()) continue;
    Evidence e;
    e.worst_ratio = std::numeric_limits<double>::infinity();
    e.violations = static_cast<int64_t>(broke.size());
    std::vector<std::string> words;
    for (const Break& b : broke) words.push_back(b.what);
    e.summary = fmt::format("call {}: {}", k, fmt::join(words, "; "));
    if (in.calls[k].unwritten_output >= 0) {
      e.output = in.calls[k].unwritten_output;
      e.worst_index = in.calls[k].first_unwritten;
    }
    GateResult r = make_result(in, Verdict::kFail, std::move(e));
    r.finding = broke.front().finding;
    return r;
  }
  Evidence e;
  e.summary = fmt::format(
      "{} call(s): outputs of the right count, shape and dtype; inputs and guard bands "
      "intact; every output element written",
      in.calls.size());
  return make_result(in, Verdict::kPass, std::move(e));
}

}  // namespace kcv::gates
