// File: src/oracle/matmul.cpp
// matmul a[M,K] x b[K,N] and batched bmm a[B,M,K] x b[B,K,N]: every output element is one
// DotElement over k (Dot2 value, declared sequential sum in k order, bound of dot_product.hpp).
// evaluate_exact gathers the row and column and takes MPFR's correctly rounded dot product.
#include <cmath>

#include "oracle/dot_product.hpp"
#include "oracle/families.hpp"
#include "oracle/mpfr_exact.hpp"

namespace kcv::oracle {

namespace {

struct Dims {
  int64_t batch, m, k, n;
};

Dims dims_of(const EvalContext& ctx, bool batched) {
  return Dims{batched ? ctx.size("B") : 1, ctx.size("M"), ctx.size("K"), ctx.size("N")};
}

/// Calls f(a_value, b_value) for k = 0..K-1 of output (batch, i, j).
template <typename F>
void for_terms(const EvalContext& ctx, const Dims& d, int64_t bt, int64_t i, int64_t j, F f) {
  const auto& a = ctx.in[0];
  const auto& b = ctx.in[1];
  const int64_t a0 = bt * d.m * d.k + i * d.k;
  const int64_t b0 = bt * d.k * d.n + j;
  for (int64_t k = 0; k < d.k; ++k) {
    f(a[static_cast<std::size_t>(a0 + k)], b[static_cast<std::size_t>(b0 + k * d.n)]);
  }
}

void evaluate(bool batched, const EvalContext& ctx, std::vector<OracleOutput>& outs) {
  const Dims d = dims_of(ctx, batched);
  OracleOutput& out = outs[0];
  std::size_t idx = 0;
  for (int64_t bt = 0; bt < d.batch; ++bt) {
    for (int64_t i = 0; i < d.m; ++i) {
      for (int64_t j = 0; j < d.n; ++j) {
        DotElement el(ctx, false);
        for_terms(ctx, d, bt, i, j, [&](double x, double y) { el.add(x, y); });
        el.write(out, idx++);
      }
    }
  }
}

std::optional<double> exact(bool batched, const EvalContext& ctx, int64_t index) {
  const Dims d = dims_of(ctx, batched);
  const int64_t j = index % d.n;
  const int64_t i = (index / d.n) % d.m;
  const int64_t bt = index / (d.n * d.m);
  std::vector<double> as, bs;
  bool finite = true;
  for_terms(ctx, d, bt, i, j, [&](double x, double y) {
    finite = finite && std::isfinite(x) && std::isfinite(y);
    as.push_back(x);
    bs.push_back(y);
  });
  if (!finite) return std::nullopt;
  return exact_dot(as, bs);
}

OpSignature named_sig(std::string name, std::string summary) {
  OpSignature s;
  s.name = std::move(name);
  s.summary = std::move(summary);
  return s;
}

OpSignature matmul_sig(bool batched) {
  OpSignature s = batched ? named_sig("bmm", "batched matrix product a[B,M,K] x b[B,K,N]")
                          : named_sig("matmul", "matrix product a[M,K] x b[K,N]");
  s.op_class = OpClass::kMatmul;
  if (batched) {
    s.inputs = {tensor("a", {"B", "M", "K"}), tensor("b", {"B", "K", "N"})};
    s.outputs = {tensor("out", {"B", "M", "N"})};
    s.reference_sizes = {{"B", 4}, {"M", 16}, {"K", 128}, {"N", 16}};
  } else {
    s.inputs = {tensor("a", {"M", "K"}), tensor("b", {"K", "N"})};
    s.outputs = {tensor("out", {"M", "N"})};
    s.reference_sizes = {{"M", 32}, {"K", 256}, {"N", 32}};
  }
  s.reduction_dim = std::string("K");
  return s;
}

}  // namespace

void add_matmul_ops(OpList& ops) {
  for (bool batched : {false, true}) {
    ops.push_back(std::make_unique<TableOp>(
        matmul_sig(batched),
        [batched](const EvalContext& ctx, std::vector<OracleOutput>& outs) {
          evaluate(batched, ctx, outs);
        },
        [batched](const EvalContext& ctx, int, int64_t i) { return exact(batched, ctx, i); }));
  }
}

}  // namespace kcv::oracle
