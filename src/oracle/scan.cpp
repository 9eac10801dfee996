// File: src/oracle/scan.cpp
// cumsum: inclusive prefix sums of x[M, N] along N. Element j is a sum of j + 1 terms, so its
// bound is the sum bound with N = j + 1 and S over the prefix (running Sum2 and running norm
// statistics, O(N) per row). Declared: one sequential accumulator in the declared type, each
// prefix rounded to the output type. Any summation tree (a parallel scan) stays within the
// model because adding the zeros a work-efficient scan introduces is exact.
#include <cmath>

#include "oracle/compensated.hpp"
#include "oracle/declared.hpp"
#include "oracle/families.hpp"
#include "oracle/mpfr_exact.hpp"
#include "oracle/semantics.hpp"

namespace kcv::oracle {

namespace {

void evaluate(const EvalContext& ctx, std::vector<OracleOutput>& outs) {
  OracleOutput& out = outs[0];
  const PrecisionModel& m = ctx.models[0];
  const Profile& p = *ctx.profile;
  const int64_t rows = ctx.size("M");
  const int64_t n = ctx.size("N");
  for (int64_t r = 0; r < rows; ++r) {
    CompensatedSum acc;
    DeclaredSum decl = declared_sum(m);
    for (int64_t j = 0; j < n; ++j) {
      const auto i = static_cast<std::size_t>(r * n + j);
      acc.add(ctx.in[0][i]);
      decl.add(ctx.in[0][i]);
      const double s = acc.sum();
      const auto terms = static_cast<double>(j + 1);
      out.value[i] = finish_value(s, out.dtype, p);
      out.tau[i] = std::isfinite(out.value[i])
                       ? rounding_bound(m, s, 0.0) +
                             accumulation_bound(m, terms, acc.l2(), std::fabs(s), acc.sum_abs())
                       : 0.0;
      out.declared[i] = finish_declared(decl.value(), out.dtype, p);
      out.n_terms[i] = terms;
    }
  }
}

std::optional<double> exact(const EvalContext& ctx, int64_t index) {
  const int64_t n = ctx.size("N");
  const auto begin = static_cast<std::size_t>((index / n) * n);
  const auto len = static_cast<std::size_t>(index % n + 1);
  const auto x = std::span<const double>(ctx.in[0]).subspan(begin, len);
  for (double v : x) {
    if (!std::isfinite(v)) return std::nullopt;
  }
  return exact_sum(x);
}

}  // namespace

void add_scan_ops(OpList& ops) {
  OpSignature s;
  s.name = "cumsum";
  s.summary = "inclusive prefix sums along N";
  s.op_class = OpClass::kScan;
  s.inputs = {tensor("x", {"M", "N"})};
  s.outputs = {tensor("out", {"M", "N"})};
  s.reference_sizes = {{"M", 16}, {"N", 1024}};
  s.reduction_dim = std::string("N");
  ops.push_back(std::make_unique<TableOp>(
      std::move(s), evaluate, [](const EvalContext& ctx, int, int64_t i) { return exact(ctx, i); }));
}

}  // namespace kcv::oracle
