// File: src/oracle/conv.cpp
// conv1d x[B,C,L] * w[O,C,R] -> out[B,O,L] and conv2d x[B,C,H,W] * w[O,C,R,S] -> out[B,O,H,W]:
// stride 1, zero padding R/2 (and S/2), cross-correlation as torch computes it. conv1d is the
// conv2d geometry with H = 1 and a kernel of one row. Each output element is a DotElement over
// the in-bounds taps in (c, r, s) order; padded taps contribute exact zeros and are not counted
// in n_terms. TF32 permission comes from Profile::tf32_conv (cuDNN allow_tf32, tl.dot).
#include <cmath>

#include "oracle/dot_product.hpp"
#include "oracle/families.hpp"
#include "oracle/mpfr_exact.hpp"

namespace kcv::oracle {

namespace {

struct Geom {
  int64_t b, c, o, h, w, r, s;
};

Geom geom_of(const EvalContext& ctx, bool two_d) {
  if (two_d) {
    return Geom{ctx.size("B"), ctx.size("C"), ctx.size("O"), ctx.size("H"),
                ctx.size("W"), ctx.size("R"), ctx.size("S")};
  }
  return Geom{ctx.size("B"), ctx.size("C"), ctx.size("O"), 1, ctx.size("L"), 1, ctx.size("R")};
}

/// Calls f(x, w) for the in-bounds taps of output (bi, oi, hi, wi).
template <typename F>
void for_taps(const EvalContext& ctx, const Geom& g, int64_t bi, int64_t oi, int64_t hi,
              int64_t wi, F f) {
  const auto& x = ctx.in[0];
  const auto& w = ctx.in[1];
  for (int64_t ci = 0; ci < g.c; ++ci) {
    for (int64_t ri = 0; ri < g.r; ++ri) {
      const int64_t y = hi + ri - g.r / 2;
      if (y < 0 || y >= g.h) continue;
      for (int64_t si = 0; si < g.s; ++si) {
        const int64_t xx = wi + si - g.s / 2;
        if (xx < 0 || xx >= g.w) continue;
        const int64_t xi = ((bi * g.c + ci) * g.h + y) * g.w + xx;
        const int64_t wk = ((oi * g.c + ci) * g.r + ri) * g.s + si;
        f(x[static_cast<std::size_t>(xi)], w[static_cast<std::size_t>(wk)]);
      }
    }
  }
}

void evaluate(bool two_d, const EvalContext& ctx, std::vector<OracleOutput>& outs) {
  const Geom g = geom_of(ctx, two_d);
  OracleOutput& out = outs[0];
  std::size_t idx = 0;
  for (int64_t bi = 0; bi < g.b; ++bi) {
    for (int64_t oi = 0; oi < g.o; ++oi) {
      for (int64_t hi = 0; hi < g.h; ++hi) {
        for (int64_t wi = 0; wi < g.w; ++wi) {
          DotElement el(ctx, true);
          for_taps(ctx, g, bi, oi, hi, wi, [&](double x, double w) { el.add(x, w); });
          el.write(out, idx++);
        }
      }
    }
  }
}

std::optional<double> exact(bool two_d, const EvalContext& ctx, int64_t index) {
  const Geom g = geom_of(ctx, two_d);
  const int64_t wi = index % g.w;
  const int64_t hi = (index / g.w) % g.h;
  const int64_t oi = (index / (g.w * g.h)) % g.o;
  const int64_t bi = index / (g.w * g.h * g.o);
  std::vector<double> xs, ws;
  bool finite = true;
  for_taps(ctx, g, bi, oi, hi, wi, [&](double x, double w) {
    finite = finite && std::isfinite(x) && std::isfinite(w);
    xs.push_back(x);
    ws.push_back(w);
  });
  if (!finite) return std::nullopt;
  return exact_dot(xs, ws);
}

OpSignature named_sig(std::string name, std::string summary) {
  OpSignature s;
  s.name = std::move(name);
  s.summary = std::move(summary);
  return s;
}

OpSignature conv_sig(bool two_d) {
  OpSignature s = two_d ? named_sig("conv2d", "2-D cross-correlation, stride 1, zero padding R/2, S/2")
                        : named_sig("conv1d", "1-D cross-correlation, stride 1, zero padding R/2");
  s.op_class = OpClass::kConvolution;
  s.reduction_dim = std::string("C");
  if (two_d) {
    s.inputs = {tensor("x", {"B", "C", "H", "W"}), tensor("w", {"O", "C", "R", "S"})};
    s.outputs = {tensor("out", {"B", "O", "H", "W"})};
    s.reference_sizes = {{"B", 1}, {"C", 4}, {"H", 16}, {"W", 16}, {"O", 4}, {"R", 3}, {"S", 3}};
  } else {
    s.inputs = {tensor("x", {"B", "C", "L"}), tensor("w", {"O", "C", "R"})};
    s.outputs = {tensor("out", {"B", "O", "L"})};
    s.reference_sizes = {{"B", 2}, {"C", 8}, {"L", 128}, {"O", 8}, {"R", 5}};
  }
  return s;
}

}  // namespace

void add_conv_ops(OpList& ops) {
  for (bool two_d : {false, true}) {
    ops.push_back(std::make_unique<TableOp>(
        conv_sig(two_d),
        [two_d](const EvalContext& ctx, std::vector<OracleOutput>& outs) {
          evaluate(two_d, ctx, outs);
        },
        [two_d](const EvalContext& ctx, int, int64_t i) { return exact(two_d, ctx, i); }));
  }
}

}  // namespace kcv::oracle
