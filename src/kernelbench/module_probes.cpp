// File: src/kernelbench/module_probes.cpp
// ModuleProbes: the gate plans for a KernelBench module, built from the facts the reference
// worker traced. Shapes come from the size constants get_inputs reads (one constant changed at a
// time: 1, 3, the largest prime below it, a power of two minus and plus one, half as large again),
// reductions from the traced reductions whose length a constant sets, values from transforms of
// the module's own draw. Every probe of a shape draws with the same seed, so one draw serves all
// of them. Plans list the most basic scope first (reference, values, repeat, shape, layout): a
// gate's first failing probe then tells the robustness table the most basic contract it breaks.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

constexpr std::size_t kMaxShapeConstants = 4;
constexpr std::size_t kMaxLayoutInputs = 4;
constexpr std::size_t kMaxInjectionInputs = 4;
constexpr std::size_t kMaxReductionConstants = 2;
constexpr int kMaxAutotuneConfigs = 8;
constexpr int kOrd02Calls = 4;
constexpr int kOrd03Concurrency = 4;
constexpr int kRes01Calls = 3;
constexpr int64_t kSmallBatch = 4;
constexpr int64_t kLayoutOffset = 3;
constexpr std::array<int64_t, 7> kOrd01Lengths = {1, 2, 31, 1024, 4096, 16384, 65536};
constexpr std::array<int64_t, 3> kPrc02Lengths = {256, 2048, 8192};
constexpr std::array<std::string_view, 11> kExpLike = {
    "exp", "softmax", "sigmoid", "tanh", "gelu", "silu", "elu", "softplus", "mish", "erf", "log"};

bool is_prime(int64_t n) {
  if (n < 2) return false;
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

int64_t prime_below(int64_t v) {
  for (int64_t n = v - 1; n >= 2; --n) {
    if (is_prime(n)) return n;
  }
  return 0;
}

int64_t power_of_two_at_most(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

struct ShapeCase {
  std::string label;
  Constants sizes;
};

OpClass class_of(const ProblemFacts& f) {
  auto has = [&](ReductionKind k) {
    return std::any_of(f.reductions.begin(), f.reductions.end(),
                       [&](const TracedReduction& r) { return r.kind == k; });
  };
  if (has(ReductionKind::kDot)) return OpClass::kMatmul;
  if (has(ReductionKind::kNorm)) return OpClass::kNormalization;
  if (has(ReductionKind::kSum) || has(ReductionKind::kCompare)) return OpClass::kReduction;
  if (has(ReductionKind::kScan)) return OpClass::kScan;
  return OpClass::kElementwise;
}

}  // namespace

ModuleProbes::ModuleProbes(const ModuleProblem& problem, Constants base, ModuleConfig config)
    : problem_(problem), base_(std::move(base)), config_(std::move(config)) {
  sig_.name = "kernelbench";
  sig_.summary = "a KernelBench module";
  sig_.op_class = class_of(problem.facts);
  int j = 0;
  for (const ModuleArg& a : problem.inputs) {
    if (!a.tensor) continue;
    TensorSig t;
    t.name = fmt::format("input{}", j++);
    for (std::size_t k = 0; k < a.shape.size(); ++k) t.dims.push_back(fmt::format("d{}", k));
    sig_.inputs.push_back(std::move(t));
  }
  bool all_index = !problem.outputs.empty();
  for (std::size_t o = 0; o < problem.outputs.size(); ++o) {
    TensorSig t;
    t.name = fmt::format("output{}", o);
    for (std::size_t k = 0; k < problem.outputs[o].shape.size(); ++k)
      t.dims.push_back(fmt::format("d{}", k));
    sig_.outputs.push_back(std::move(t));
    all_index = all_index && !is_floating(problem.outputs[o].dtype);
  }
  if (!problem.facts.reductions.empty()) sig_.reduction_dim = "K";
  sig_.index_output = all_index;
  sig_.uses_minmax = problem.facts.minmax;
  for (const std::string& op : problem.facts.ops) {
    for (std::string_view w : kExpLike)
      sig_.uses_exp = sig_.uses_exp || op.find(w) != std::string::npos;
  }
}

namespace {

struct PlanContext {
  const ModuleProblem& problem;
  uint64_t seed;

  std::vector<std::size_t> floating_inputs() const {
    std::vector<std::size_t> out;
    std::size_t j = 0;
    for (const ModuleArg& a : problem.inputs) {
      if (!a.tensor) continue;
      if (is_floating(a.dtype) && numel(a.shape) > 0) out.push_back(j);
      ++j;
    }
    return out;
  }

  std::vector<OutputSpec> tensors() const { return problem.tensor_inputs(); }

  Probe probe(GateId gate, std::string label, Constants sizes = {}) const {
    Probe p;
    p.gate = gate;
    p.label = std::move(label);
    p.seed = seed;
    p.sizes = std::move(sizes);
    for (const OutputSpec& t : tensors())
      p.inputs.push_back(InputSpec{t.dtype, Distribution::kDrawn, Layout{}});
    return p;
  }

  Probe with_dist(Probe p, Distribution d) const {
    for (std::size_t j : floating_inputs()) p.inputs[j].dist = d;
    p.label += fmt::format(" {}", distribution_name(d));
    return p;
  }

  // A constant is batch-like when it is the leading size of every tensor input and of every output
  // and no weight's shape reads it.
  bool batch_like(const SizeConstant& c) const {
    if (c.in_init) return false;
    for (const OutputSpec& t : tensors()) {
      if (t.shape.empty() || t.shape[0] != c.value) return false;
    }
    for (const OutputSpec& t : problem.outputs) {
      if (t.shape.empty() || t.shape[0] != c.value) return false;
    }
    return true;
  }

  // The size constants get_inputs reads, largest first (the dimensions a kernel tiles).
  std::vector<SizeConstant> shape_constants() const {
    std::vector<SizeConstant> out;
    for (const SizeConstant& c : problem.facts.constants) {
      if (c.in_get_inputs && c.value > 0) out.push_back(c);
    }
    std::stable_sort(out.begin(), out.end(), [](const SizeConstant& a, const SizeConstant& b) {
      return a.value > b.value;
    });
    if (out.size() > kMaxShapeConstants) out.resize(kMaxShapeConstants);
    return out;
  }

  std::vector<ShapeCase> shape_cases() const {
    std::vector<ShapeCase> out;
    std::set<Constants> seen;
    const auto add = [&](const SizeConstant& c, const std::string& what, int64_t v) {
      if (v < 1 || v == c.value) return;
      Constants s{{c.name, v}};
      if (!seen.insert(s).second) return;
      out.push_back(ShapeCase{fmt::format("{} {}={}", what, c.name, v), std::move(s)});
    };
    const std::vector<SizeConstant> cs = shape_constants();
    for (std::size_t k = 0; k < cs.size(); ++k) {
      const SizeConstant& c = cs[k];
      add(c, "ones", 1);
      add(c, "prime", prime_below(c.value));
      if (k > 0) continue;  // the largest constant gets the whole ladder
      add(c, "small", 3);
      const int64_t p = power_of_two_at_most(c.value);
      if (p >= 16) {
        add(c, "tile-1", p - 1);
        add(c, "tile+1", p + 1);
      }
      if (!batch_like(c)) add(c, "larger", (c.value + c.value / 2) | 1);
    }
    return out;
  }

  // Tail shapes for RES-01 and CMP-02: where a missing mask reads or writes past the end.
  std::vector<ShapeCase> tail_cases() const {
    std::vector<ShapeCase> out;
    for (ShapeCase& s : shape_cases()) {
      if (s.label.rfind("prime", 0) == 0 || s.label.rfind("tile+1", 0) == 0)
        out.push_back(std::move(s));
      if (out.size() == 2) break;
    }
    return out;
  }

  // Constants that set the length of a traced reduction of one of `kinds`.
  std::vector<SizeConstant> reduction_constants(std::initializer_list<ReductionKind> kinds) const {
    std::vector<SizeConstant> out;
    for (const TracedReduction& r : problem.facts.reductions) {
      if (r.constant.empty() || std::find(kinds.begin(), kinds.end(), r.kind) == kinds.end())
        continue;
      if (std::any_of(out.begin(), out.end(),
                      [&](const SizeConstant& c) { return c.name == r.constant; }))
        continue;
      for (const SizeConstant& c : problem.facts.constants) {
        if (c.name == r.constant) out.push_back(c);
      }
      if (out.size() == kMaxReductionConstants) break;
    }
    return out;
  }

  // `name` set to `n`, every other batch-like constant made small.
  Constants sweep(const std::string& name, int64_t n) const {
    Constants s{{name, n}};
    for (const SizeConstant& c : problem.facts.constants) {
      if (c.name != name && c.in_get_inputs && batch_like(c) && c.value > kSmallBatch)
        s[c.name] = kSmallBatch;
    }
    return s;
  }
};

std::vector<int64_t> positions(const OutputSpec& t) {
  const int64_t n = numel(t.shape);
  const int64_t row = t.shape.empty() ? n : t.shape.back();
  std::set<int64_t> at = {0, n / 2, n - 1, row - 1};
  std::erase_if(at, [&](int64_t i) { return i < 0 || i >= n; });
  return {at.begin(), at.end()};
}

void inject(Probe& p, std::size_t input, int64_t index, Special s) {
  p.injections.push_back(Injection{static_cast<int>(input), index, s});
}

std::vector<Probe> plan_cmp01(const PlanContext& c) {
  std::vector<Probe> out;
  out.push_back(c.with_dist(c.probe(GateId::kCmp01, "reference"), Distribution::kDrawn));
  for (Distribution d : {Distribution::kShiftedMean, Distribution::kParetoScaled,
                         Distribution::kWideScaled, Distribution::kLargeScaled}) {
    out.push_back(c.with_dist(c.probe(GateId::kCmp01, "reference"), d));
  }
  for (const ShapeCase& s : c.shape_cases())
    out.push_back(c.probe(GateId::kCmp01, s.label + " drawn", s.sizes));
  return out;
}

std::vector<Probe> plan_cmp02(const PlanContext& c) {
  std::vector<Probe> out;
  Probe p = c.probe(GateId::kCmp02, "reference drawn, random guards");
  p.randomize_guards = true;
  out.push_back(std::move(p));
  for (const ShapeCase& s : c.tail_cases()) {
    Probe t = c.probe(GateId::kCmp02, s.label + " drawn, random guards", s.sizes);
    t.randomize_guards = true;
    out.push_back(std::move(t));
    break;  // one tail shape: the structural facts do not need every tail
  }
  return out;
}

std::vector<Probe> plan_cmp03(const PlanContext& c) {
  std::vector<Probe> out;
  const std::vector<OutputSpec> ts = c.tensors();
  std::size_t inputs = 0;
  for (std::size_t j : c.floating_inputs()) {
    const Shape& shape = ts[j].shape;
    if (shape.empty() || numel(shape) < 2 || inputs++ == kMaxLayoutInputs) continue;
    std::vector<Layout> layouts;
    if (shape.size() >= 2 && shape[shape.size() - 1] > 1 && shape[shape.size() - 2] > 1) {
      layouts.push_back(Layout{LayoutKind::kTransposed, 2, 0, 0});
    }
    layouts.push_back(Layout{LayoutKind::kSliced, 2, 0, 0});
    if (shape.size() >= 2 && shape[0] > 1)
      layouts.push_back(Layout{LayoutKind::kBroadcast, 2, 0, 0});
    layouts.push_back(Layout{LayoutKind::kOffset, 2, kLayoutOffset, 0});
    for (const Layout& l : layouts) {
      Probe p = c.probe(GateId::kCmp03, fmt::format("input{} {} drawn", j, layout_name(l.kind)));
      p.inputs[j].layout = l;
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<Probe> plan_ord01(const PlanContext& c) {
  std::vector<Probe> out;
  for (const SizeConstant& k :
       c.reduction_constants({ReductionKind::kSum, ReductionKind::kDot, ReductionKind::kNorm})) {
    for (int64_t n : kOrd01Lengths) {
      for (Distribution d : {Distribution::kDrawn, Distribution::kShiftedMean}) {
        out.push_back(c.with_dist(
            c.probe(GateId::kOrd01, fmt::format("{}={}", k.name, n), c.sweep(k.name, n)), d));
      }
    }
  }
  return out;
}

std::vector<Probe> plan_prc02(const PlanContext& c) {
  std::vector<Probe> out;
  for (const SizeConstant& k :
       c.reduction_constants({ReductionKind::kSum, ReductionKind::kDot, ReductionKind::kNorm})) {
    for (int64_t n : kPrc02Lengths) {
      out.push_back(
          c.probe(GateId::kPrc02, fmt::format("{}={} drawn", k.name, n), c.sweep(k.name, n)));
    }
  }
  return out;
}

std::vector<Probe> plan_exc01(const PlanContext& c) {
  std::vector<Probe> out;
  const std::vector<OutputSpec> ts = c.tensors();
  const std::vector<std::size_t> fl = c.floating_inputs();
  for (std::size_t k = 0; k < fl.size() && k < kMaxInjectionInputs; ++k) {
    const std::size_t j = fl[k];
    for (Special s : {Special::kNaN, Special::kPosInf, Special::kNegInf}) {
      Probe p = c.probe(GateId::kExc01, fmt::format("{} at first/middle/last/row end of input{}",
                                                    special_name(s), j));
      for (int64_t i : positions(ts[j])) inject(p, j, i, s);
      out.push_back(std::move(p));
    }
  }
  if (!fl.empty() && numel(ts[fl[0]].shape) >= 2) {
    Probe p = c.probe(GateId::kExc01, fmt::format("+inf and -inf in one row of input{}", fl[0]));
    inject(p, fl[0], 0, Special::kPosInf);
    inject(p, fl[0], 1, Special::kNegInf);
    out.push_back(std::move(p));
  }
  if (fl.size() >= 2) {
    Probe p = c.probe(GateId::kExc01,
                      fmt::format("+inf in input{} where the other inputs hold 0", fl[0]));
    inject(p, fl[0], 0, Special::kPosInf);
    for (std::size_t k = 1; k < fl.size(); ++k) inject(p, fl[k], 0, Special::kPosZero);
    out.push_back(std::move(p));
  }
  if (!fl.empty())
    out.push_back(c.with_dist(c.probe(GateId::kExc01, "overflow"), Distribution::kHugeScaled));
  return out;
}

std::vector<Probe> plan_exc02(const PlanContext& c) {
  std::vector<Probe> out;
  const std::vector<std::size_t> fl = c.floating_inputs();
  if (fl.empty()) return out;
  out.push_back(
      c.with_dist(c.probe(GateId::kExc02, "subnormal inputs"), Distribution::kSubnormalScaled));
  out.push_back(
      c.with_dist(c.probe(GateId::kExc02, "underflowing products"), Distribution::kTinyScaled));
  if (fl.size() >= 2) {
    Probe p = c.probe(GateId::kExc02, fmt::format("subnormal input{}, the others drawn", fl[0]));
    p.inputs[fl[0]].dist = Distribution::kSubnormalScaled;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Probe> plan_res01(const PlanContext& c) {
  std::vector<Probe> out;
  const auto add = [&](std::string label, Constants sizes) {
    Probe p = c.probe(GateId::kRes01, label + fmt::format(" drawn x{}, random guards", kRes01Calls),
                      std::move(sizes));
    p.repetitions = kRes01Calls;
    p.randomize_guards = true;
    out.push_back(std::move(p));
  };
  add("reference", {});
  for (const ShapeCase& s : c.tail_cases()) add(s.label, s.sizes);
  return out;
}

}  // namespace

std::string ModuleProbes::not_applicable_reason(GateId id, const Contract& contract) const {
  const PlanContext c{problem_, 0};
  const bool any_floating = !c.floating_inputs().empty();
  switch (id) {
    case GateId::kCmp03:
      return any_floating
                 ? ""
                 : "no floating tensor input with more than one element to view differently";
    case GateId::kOrd01:
      if (c.reduction_constants({ReductionKind::kSum, ReductionKind::kDot, ReductionKind::kNorm})
              .empty()) {
        return "the traced reference has no sum, dot or norm reduction whose length a size "
               "constant sets";
      }
      return {};
    case GateId::kPrc02:
      if (sig_.index_output) return "the outputs are indices: no accumulator to downcast";
      if (c.reduction_constants({ReductionKind::kSum, ReductionKind::kDot, ReductionKind::kNorm})
              .empty()) {
        return "the traced reference accumulates no sum, dot product or norm whose length a size "
               "constant sets";
      }
      return {};
    case GateId::kOrd02:
      if (!contract.deterministic)
        return "the row declares the kernel non-deterministic (\"deterministic\": false)";
      if (problem_.facts.stochastic)
        return "the reference draws random numbers in its forward (a stochastic layer)";
      if (!problem_.facts.repeatable)
        return "the reference itself is not bitwise repeatable over three runs";
      return {};
    case GateId::kExc01:
      return any_floating ? "" : "no floating tensor input to inject NaN or Inf into";
    case GateId::kExc02:
      if (sig_.index_output) return "the outputs are indices: no subnormal result to keep or flush";
      return any_floating ? "" : "no floating tensor input: no subnormals";
    case GateId::kPrc01:
      return sig_.index_output
                 ? "the outputs are indices, compared exactly by CMP-01: no precision to lose"
                 : "";
    case GateId::kOrd03:
      if (!config_.no_concurrency.empty() && config_.autotune_configs <= 1)
        return config_.no_concurrency;
      return {};
    default:
      return {};
  }
}

std::vector<Probe> ModuleProbes::plan(GateId id, const Contract&, uint64_t seed) const {
  const PlanContext c{problem_, seed};
  switch (id) {
    case GateId::kCmp01:
      return plan_cmp01(c);
    case GateId::kCmp02:
      return plan_cmp02(c);
    case GateId::kCmp03:
      return plan_cmp03(c);
    case GateId::kOrd01:
      return plan_ord01(c);
    case GateId::kOrd02: {
      Probe p =
          c.probe(GateId::kOrd02,
                  fmt::format("reference drawn x{}, fresh addresses and contents", kOrd02Calls));
      p.repetitions = kOrd02Calls;
      p.shift_addresses = true;
      return {p};
    }
    case GateId::kOrd03: {
      std::vector<Probe> out;
      if (config_.no_concurrency.empty()) {
        Probe conc = c.probe(
            GateId::kOrd03, fmt::format("reference drawn, {} concurrent calls", kOrd03Concurrency));
        conc.concurrency = kOrd03Concurrency;
        out.push_back(std::move(conc));
      }
      if (config_.autotune_configs > 1) {
        Probe at = c.probe(GateId::kOrd03, "reference drawn, each autotune config forced");
        for (int k = 0; k < std::min(config_.autotune_configs, kMaxAutotuneConfigs); ++k)
          at.autotune_configs.push_back(k);
        out.push_back(std::move(at));
      }
      return out;
    }
    case GateId::kExc01:
      return plan_exc01(c);
    case GateId::kExc02:
      return plan_exc02(c);
    case GateId::kPrc01:
      return {c.probe(GateId::kPrc01, "reference drawn")};
    case GateId::kPrc02:
      return plan_prc02(c);
    case GateId::kRes01:
      return plan_res01(c);
    case GateId::kRes02:
      return {};
  }
  return {};
}

ProbeScope ModuleProbes::scope_of(const Probe& p) const {
  for (const InputSpec& in : p.inputs) {
    if (in.layout.kind != LayoutKind::kContiguous) return ProbeScope::kLayout;
  }
  for (const auto& [name, v] : p.sizes) {
    const auto it = base_.find(name);
    const auto ref = problem_.constants.find(name);
    const int64_t was =
        it != base_.end() ? it->second : (ref != problem_.constants.end() ? ref->second : -1);
    if (v != was) return ProbeScope::kShape;
  }
  if (p.repetitions > 1 || p.concurrency > 1 || !p.autotune_configs.empty() || p.shift_addresses) {
    return ProbeScope::kRepeat;
  }
  const bool drawn = std::all_of(p.inputs.begin(), p.inputs.end(), [](const InputSpec& in) {
    return in.dist == Distribution::kDrawn;
  });
  return drawn && p.injections.empty() ? ProbeScope::kReference : ProbeScope::kValues;
}

std::vector<Probe> ModuleProbes::simplifications(const Probe& best, const Contract&) const {
  // Same-shape simplifications first: they need no other worker load.
  std::vector<Probe> out =
      same_shape_simplifications(best, Distribution::kDrawn, Distribution::kDrawn);
  // Then smaller sizes of each constant get_inputs reads (each a reload of the other-shape pair).
  for (const SizeConstant& c : problem_.facts.constants) {
    if (!c.in_get_inputs) continue;
    const auto at = best.sizes.find(c.name);
    const auto base = base_.find(c.name);
    const int64_t v =
        at != best.sizes.end() ? at->second : (base != base_.end() ? base->second : c.value);
    std::set<int64_t> smaller;
    for (int64_t s : {int64_t{1}, int64_t{2}, int64_t{3}, v / 4, v / 2, v - 1}) {
      if (s >= 1 && s < v) smaller.insert(s);
    }
    for (int64_t s : smaller) {
      Probe p = best;
      p.sizes[c.name] = s;  // injections past a smaller tensor's end are skipped (transforms.cpp)
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace kcv::kb
