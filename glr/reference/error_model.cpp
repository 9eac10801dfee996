// File: glr/reference/error_model.cpp
// The fp32 terms of include/kcv/glr/error_model.hpp (N, G, the slice scale, tau) and the forward
// bound that adds the declared-rounding σ. The formulas and their derivation are
// docs/glr/precision-contract.md §2; nothing here reads a candidate's output.
#include "kcv/glr/error_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "glr/oracle/validate.hpp"
#include "glr/reference/chunk_io.hpp"

namespace kcv::glr {
namespace {

// Calls f(first element, stride-free count) for every (sequence, head) slice of an output.
template <typename F>
void for_each_slice(const OutputSlices& o, const Shape& s, F&& f) {
  for (std::int64_t n = 0; n < s.sequences(); ++n) {
    for (std::int64_t h = 0; h < o.heads; ++h) {
      if (!o.per_token) {
        f([&](auto&& visit) {
          const std::int64_t base = (n * o.heads + h) * o.width;
          for (std::int64_t i = 0; i < o.width; ++i) visit(base + i);
        });
        continue;
      }
      f([&](auto&& visit) {
        for (std::int64_t t = s.seq_begin(n); t < s.seq_end(n); ++t)
          for (std::int64_t i = 0; i < o.width; ++i) visit((t * o.heads + h) * o.width + i);
      });
    }
  }
}

std::int64_t output_size(const OutputSlices& o, const Shape& s) {
  return (o.per_token ? s.tokens : s.sequences()) * o.heads * o.width;
}

}  // namespace

ModelScale model_scale(const Problem& p, ChunkOptions options) {
  const Shape& s = p.shape;
  std::int64_t longest = 0;
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    longest = std::max(longest, s.seq_end(n) - s.seq_begin(n));
  ModelScale m;
  m.depth = longest + s.key_dim + s.value_dim + options.chunk_size;
  if (p.g.empty() || s.tokens == 0) return m;
  const std::int64_t width = static_cast<std::int64_t>(p.g.size()) / (s.tokens * s.v_heads);
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (detail::ChunkRange r : detail::chunks_of(s, n, options.chunk_size))
      for (std::int64_t col = 0; col < s.v_heads * width; ++col) {
        double cum = 0.0;
        for (std::int64_t t = r.begin; t < r.end; ++t) {
          cum += p.g[static_cast<std::size_t>(t * s.v_heads * width + col)];
          m.log_decay = std::max(m.log_decay, std::fabs(cum));
        }
      }
  return m;
}

ModelScale decode_model_scale(const Problem& p) {
  const Shape& s = p.shape;
  std::int64_t longest = 0;
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    longest = std::max(longest, s.seq_end(n) - s.seq_begin(n));
  ModelScale m;
  m.depth = 2 * (longest + s.key_dim);
  return m;
}

double accumulation_term(const ModelScale& m) {
  return kConfidence * kUnitFp32 * (std::sqrt(static_cast<double>(m.depth)) + m.log_decay);
}

std::string describe(const ModelScale& m) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "N=%lld, sqrt(N)=%.1f, G=%.2f: accumulation term %.2e x RMS(slice)",
                static_cast<long long>(m.depth), std::sqrt(static_cast<double>(m.depth)),
                m.log_decay, 2.0 * accumulation_term(m));
  return buf;
}

double output_unit_roundoff(Output out) {
  switch (out) {
    case Output::kFinalState:
    case Output::kDh0:
    case Output::kDg:
      return kUnitFp32;
    default:
      return 0x1p-8;
  }
}

OutputSlices output_slices(Output out, const Shape& s, std::int64_t gate_width) {
  switch (out) {
    case Output::kFinalState:
    case Output::kDh0:
      return {false, s.v_heads, s.key_dim * s.value_dim};
    case Output::kDq:
    case Output::kDk:
      return {true, s.qk_heads, s.key_dim};
    case Output::kDg:
      return {true, s.v_heads, gate_width};
    case Output::kDbeta:
      return {true, s.v_heads, 1};
    case Output::kO:
    case Output::kDv:
      break;
  }
  return {true, s.v_heads, s.value_dim};
}

std::vector<double> slice_scale(Output out, std::span<const double> ref, const Shape& s,
                                std::int64_t gate_width) {
  const OutputSlices o = output_slices(out, s, gate_width);
  std::vector<double> scale(ref.size(), 0.0);
  for_each_slice(o, s, [&](auto&& each) {
    double sum = 0.0;
    std::int64_t count = 0;
    each([&](std::int64_t i) {
      if (!std::isfinite(ref[i])) return;
      sum += ref[i] * ref[i];
      ++count;
    });
    const double two_rms =
        2.0 * std::sqrt(sum / static_cast<double>(std::max<std::int64_t>(count, 1)));
    each([&](std::int64_t i) { scale[i] = two_rms; });
  });
  return scale;
}

Expected<std::vector<double>> tau(Output out, std::span<const double> ref, const Shape& s,
                                  std::int64_t gate_width, const ModelScale& m, double u_out,
                                  std::span<const double> terms, std::span<const double> sigma) {
  if (!terms.empty() && (out != Output::kDg || terms.size() != ref.size()))
    return detail::invalid_argument("terms: only for dg, one per element");
  const std::int64_t want = output_size(output_slices(out, s, gate_width), s);
  if (static_cast<std::int64_t>(ref.size()) != want)
    return detail::invalid_argument("ref: expected " + std::to_string(want) + " values, got " +
                                    std::to_string(ref.size()));
  if (!sigma.empty() && sigma.size() != ref.size())
    return detail::invalid_argument("sigma: one per element of ref");
  std::vector<double> scale = slice_scale(out, ref, s, gate_width);
  const double acc = accumulation_term(m);
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!terms.empty() && std::isfinite(terms[i])) scale[i] = std::max(scale[i], terms[i]);
    const double mag = std::isfinite(ref[i]) ? std::fabs(ref[i]) : 0.0;
    scale[i] = u_out * mag + acc * scale[i] + (sigma.empty() ? 0.0 : kConfidence * sigma[i]);
  }
  return scale;
}

Expected<ForwardBounds> forward_bounds(Member member, const Problem& p, const Outputs& ref,
                                       const PrecisionContract& contract, ChunkOptions options) {
  Expected<ForwardSigma> sigma = declared_rounding_sigma(member, p, contract, options);
  if (!sigma) return sigma.error();
  const ModelScale m = model_scale(p, options);
  const std::int64_t gw = gate_width(traits(member).gate, p.shape.key_dim);
  Expected<std::vector<double>> o =
      tau(Output::kO, ref.o, p.shape, gw, m, output_unit_roundoff(Output::kO), {}, sigma->o);
  if (!o) return o.error();
  Expected<std::vector<double>> ht =
      tau(Output::kFinalState, ref.final_state, p.shape, gw, m,
          output_unit_roundoff(Output::kFinalState), {}, sigma->final_state);
  if (!ht) return ht.error();
  return ForwardBounds{std::move(*o), std::move(*ht)};
}

}  // namespace kcv::glr
