// File: src/gen/shape_plan.cpp
// Shape plans: which size assignments a gate probes. One dimension is the "target" that the
// kernel tiles or reduces over (the op's reduction dim, else the first input's last dim); tile
// edge cases and primes land on it. Fixed dims (the contract's fixed_dims and the kernel-size
// symbols R, S) keep their reference value. Generated cases are kept under a budget so the
// whole suite runs on a 2-core CPU: the user's reference shape is taken as given, every other
// case is shrunk (largest non-target dim halved first) until it fits.
#include <algorithm>
#include <set>

#include "gen/sizes.hpp"
#include "kcv/generate.hpp"

namespace kcv {
namespace {

using Sizes = std::map<std::string, int64_t>;

constexpr int64_t kMaxCaseElements = int64_t{1} << 22;  // all inputs and outputs together
constexpr int64_t kMaxCaseWork = int64_t{1} << 24;      // multiply-adds (see work_estimate)
constexpr int64_t kLargeElements = int64_t{1} << 20;    // elementwise "large": one input
constexpr int64_t kLargeReduction = 8192;               // reduction "large": the summed dim
constexpr int64_t kLargeMatmulOther = 8;                // M = N = 8 next to K = 8192
constexpr int64_t kPrimeTarget = 127;
constexpr int64_t kPrimeOther = 13;
constexpr int64_t kSmallSizes[] = {2, 3, 7};

struct PlanContext {
  const OpSignature& sig;
  Sizes reference;
  std::vector<std::string> variable;  // in order of appearance
  std::string target;                 // empty when nothing may vary
};

std::string choose_target(const OpSignature& sig, const std::vector<std::string>& variable) {
  auto is_variable = [&variable](const std::string& d) {
    return std::find(variable.begin(), variable.end(), d) != variable.end();
  };
  if (!sig.reduction_dim.empty() && is_variable(sig.reduction_dim)) {
    return sig.reduction_dim;
  }
  if (!sig.inputs.empty() && !sig.inputs[0].dims.empty() && is_variable(sig.inputs[0].dims.back())) {
    return sig.inputs[0].dims.back();
  }
  return variable.empty() ? std::string() : variable.back();
}

PlanContext make_context(const OpSignature& sig, const Contract& contract) {
  PlanContext ctx{sig, gen::reference_sizes(sig, contract), {}, {}};
  std::set<std::string> fixed(contract.fixed_dims.begin(), contract.fixed_dims.end());
  fixed.insert("R");  // kernel sizes of the convolutions
  fixed.insert("S");
  for (const std::string& dim : gen::size_symbols(sig)) {
    if (fixed.count(dim) == 0) {
      ctx.variable.push_back(dim);
    }
  }
  ctx.target = choose_target(sig, ctx.variable);
  return ctx;
}

bool within_budget(const PlanContext& ctx, const Sizes& s) {
  return gen::total_elements(ctx.sig, s) <= kMaxCaseElements && gen::work_estimate(ctx.sig, s) <= kMaxCaseWork;
}

// Halves the largest variable dim other than `keep` (then `keep` itself) until within budget.
void fit_budget(const PlanContext& ctx, Sizes& s, const std::string& keep) {
  while (!within_budget(ctx, s)) {
    std::string victim;
    for (const std::string& dim : ctx.variable) {
      if (dim != keep && s[dim] > 1 && (victim.empty() || s[dim] > s[victim])) {
        victim = dim;
      }
    }
    if (victim.empty()) {
      if (keep.empty() || s[keep] <= 1) {
        return;  // only fixed dims left: nothing more to shrink
      }
      victim = keep;
    }
    s[victim] = (s[victim] + 1) / 2;
  }
}

Sizes with_variable(const PlanContext& ctx, int64_t value) {
  Sizes s = ctx.reference;
  for (const std::string& dim : ctx.variable) {
    s[dim] = value;
  }
  return s;
}

std::vector<ShapeCase> small_cases(const PlanContext& ctx) {
  std::vector<ShapeCase> cases;
  const std::size_t n_small = std::size(kSmallSizes);
  for (std::size_t rot = 0; rot < n_small; ++rot) {
    Sizes s = ctx.reference;
    for (std::size_t j = 0; j < ctx.variable.size(); ++j) {
      s[ctx.variable[j]] = kSmallSizes[(j + rot) % n_small];
    }
    cases.push_back({"small", s});
  }
  return cases;
}

std::vector<ShapeCase> tile_cases(const PlanContext& ctx, int64_t tile) {
  const std::pair<const char*, int64_t> edges[] = {
      {"tile-1", tile - 1}, {"tile+1", tile + 1}, {"2tile-1", 2 * tile - 1}};
  std::vector<ShapeCase> cases;
  for (const auto& [label, size] : edges) {
    Sizes s = ctx.reference;
    s[ctx.target] = std::max<int64_t>(size, 1);
    fit_budget(ctx, s, ctx.target);
    cases.push_back({label, s});
  }
  return cases;
}

ShapeCase large_case(const PlanContext& ctx) {
  Sizes s = ctx.reference;
  const bool reduces = ctx.target == ctx.sig.reduction_dim;
  if (reduces) {
    s[ctx.target] = std::max(s[ctx.target], kLargeReduction);
    if (ctx.sig.op_class == OpClass::kMatmul || ctx.sig.op_class == OpClass::kConvolution) {
      for (const std::string& dim : ctx.variable) {
        if (dim != ctx.target) {
          s[dim] = std::min(s[dim], kLargeMatmulOther);
        }
      }
    }
  } else {
    const Shape first = gen::shape_from_sizes(ctx.sig, ctx.sig.inputs.front(), s);
    const std::string& grow = ctx.sig.inputs.front().dims.front();
    const bool can_grow = std::find(ctx.variable.begin(), ctx.variable.end(), grow) != ctx.variable.end();
    const std::string& dim = can_grow ? grow : ctx.target;
    const int64_t rest = std::max<int64_t>(numel(first) / std::max<int64_t>(s[dim], 1), 1);
    s[dim] = std::max(s[dim], (kLargeElements + rest - 1) / rest);
  }
  fit_budget(ctx, s, ctx.target);
  return {"large", s};
}

void append_unique(std::vector<ShapeCase>& plan, ShapeCase c) {
  for (const ShapeCase& existing : plan) {
    if (existing.sizes == c.sizes) {
      return;
    }
  }
  plan.push_back(std::move(c));
}

}  // namespace

std::vector<ShapeCase> shape_plan(const OpSignature& sig, const Contract& contract, bool include_large) {
  const PlanContext ctx = make_context(sig, contract);
  std::vector<ShapeCase> plan = {{"reference", ctx.reference}};
  if (ctx.target.empty()) {
    return plan;  // every size is fixed
  }
  std::vector<ShapeCase> generated = {{"ones", with_variable(ctx, 1)}};
  for (ShapeCase& c : small_cases(ctx)) {
    generated.push_back(std::move(c));
  }
  Sizes prime = with_variable(ctx, kPrimeOther);
  prime[ctx.target] = kPrimeTarget;
  generated.push_back({"prime", prime});
  for (ShapeCase& c : tile_cases(ctx, contract.tile)) {
    generated.push_back(std::move(c));
  }
  if (include_large && !sig.inputs.empty() && !sig.inputs.front().dims.empty()) {
    generated.push_back(large_case(ctx));
  }
  for (ShapeCase& c : generated) {
    fit_budget(ctx, c.sizes, ctx.target);
    append_unique(plan, std::move(c));
  }
  return plan;
}

}  // namespace kcv
