// File: glr/check/inputs.cpp
// Draws the inputs of inputs.hpp. Each value is drawn in fp64, rounded once to its device dtype,
// and the rounded value is what both the GPU and the reference see.
#include "check/inputs.hpp"

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "check/bf16.hpp"

namespace kcv::glr::check {
namespace {

class Draw {
 public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  double normal() { return std::normal_distribution<double>(0.0, 1.0)(rng_); }
  double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }
  double log_decay(Decay decay) {
    const auto logsigmoid = [](double x) { return -std::log1p(std::exp(-x)); };
    switch (decay) {
      case Decay::kWeak:
        return logsigmoid(uniform()) / 10.0;
      case Decay::kStrong:
        return logsigmoid(uniform()) / 0.01;
      case Decay::kModerate:
        break;
    }
    const double g = logsigmoid(normal() + 2.0);
    return uniform() < 0.1 ? 0.0 : g;
  }

 private:
  std::mt19937_64 rng_;
};

// Rounds to bf16: returns the bits, stores the widened value.
std::uint16_t bf16_of(double x, double& widened) {
  const std::uint16_t b = float_to_bf16(static_cast<float>(x));
  widened = bf16_to_float(b);
  return b;
}

// Appends x in `type` to bytes; returns the value the device will read.
double push_value(gpu::DType type, double x, std::vector<std::uint8_t>& bytes) {
  double widened = 0.0;
  if (type == gpu::DType::kBFloat16) {
    const std::uint16_t b = bf16_of(x, widened);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&b);
    bytes.insert(bytes.end(), p, p + 2);
  } else {
    const float f = static_cast<float>(x);
    widened = f;
    const auto* p = reinterpret_cast<const std::uint8_t*>(&f);
    bytes.insert(bytes.end(), p, p + 4);
  }
  return widened;
}

void bf16_tensor(Draw& draw, std::int64_t n, std::vector<std::uint16_t>& bits,
                 std::vector<double>& values) {
  bits.resize(static_cast<std::size_t>(n));
  values.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) bits[i] = bf16_of(draw.normal(), values[i]);
}

// Rows of length dim with unit 2-norm (before rounding), as bf16.
void unit_rows(Draw& draw, std::int64_t rows, std::int64_t dim, std::vector<std::uint16_t>& bits,
               std::vector<double>& values) {
  bits.resize(static_cast<std::size_t>(rows * dim));
  values.resize(static_cast<std::size_t>(rows * dim));
  std::vector<double> row(static_cast<std::size_t>(dim));
  for (std::int64_t r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (double& x : row) {
      x = draw.normal();
      ss += x * x;
    }
    const double inv = 1.0 / std::sqrt(ss);
    for (std::int64_t d = 0; d < dim; ++d)
      bits[r * dim + d] = bf16_of(row[d] * inv, values[r * dim + d]);
  }
}

void fp32_tensor(Draw& draw, std::int64_t n, double sd, std::vector<float>& f,
                 std::vector<double>& values) {
  f.resize(static_cast<std::size_t>(n));
  values.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    f[i] = static_cast<float>(sd * draw.normal());
    values[i] = f[i];
  }
}

Shape make_shape(const CaseSpec& spec) {
  Shape s;
  s.tokens = std::accumulate(spec.lengths.begin(), spec.lengths.end(), std::int64_t{0});
  s.qk_heads = spec.qk_heads;
  s.v_heads = spec.v_heads;
  s.key_dim = spec.key_dim;
  s.value_dim = spec.value_dim;
  s.cu_seqlens.push_back(0);
  for (std::int64_t len : spec.lengths) s.cu_seqlens.push_back(s.cu_seqlens.back() + len);
  return s;
}

}  // namespace

HostInputs make_inputs(Member member, const CaseSpec& spec) {
  Draw draw(spec.seed * 1000003u + static_cast<std::uint64_t>(member));
  const MemberTraits tr = traits(member);
  HostInputs in;
  in.member = member;
  Problem& p = in.problem;
  p.shape = make_shape(spec);
  const Shape& s = p.shape;
  p.layout = spec.layout;
  p.scale = static_cast<double>(1.0f / std::sqrt(static_cast<float>(s.key_dim)));

  in.dims.batch = spec.varlen ? 1 : static_cast<std::int64_t>(spec.lengths.size());
  in.dims.seq_len = spec.varlen ? s.tokens : spec.lengths.front();
  in.dims.qk_heads = s.qk_heads;
  in.dims.v_heads = s.v_heads;
  in.dims.key_dim = s.key_dim;
  in.dims.value_dim = s.value_dim;
  in.dims.num_seqs = spec.varlen ? s.sequences() : 0;
  in.cfg.member = member;
  in.cfg.scale = static_cast<float>(p.scale);
  in.cfg.layout = spec.layout;
  in.cfg.gate_dtype = spec.gate_dtype;
  in.cfg.beta_dtype = spec.beta_dtype;
  in.cfg.cu_seqlens_type = spec.index_type;
  if (spec.varlen) {
    in.cu64 = s.cu_seqlens;
    for (std::int64_t x : s.cu_seqlens) in.cu32.push_back(static_cast<std::int32_t>(x));
  }

  unit_rows(draw, s.tokens * s.qk_heads, s.key_dim, in.q, p.q);
  unit_rows(draw, s.tokens * s.qk_heads, s.key_dim, in.k, p.k);
  bf16_tensor(draw, s.v_size(), in.v, p.v);
  const std::int64_t gates = s.tokens * s.v_heads * gate_width(tr.gate, s.key_dim);
  for (std::int64_t i = 0; i < gates; ++i)
    p.g.push_back(push_value(spec.gate_dtype, draw.log_decay(spec.decay), in.g));
  if (tr.delta_rule)
    for (std::int64_t i = 0; i < s.tokens * s.v_heads; ++i)
      p.beta.push_back(
          push_value(spec.beta_dtype, 1.0 / (1.0 + std::exp(-draw.normal())), in.beta));
  if (spec.initial_state) fp32_tensor(draw, s.state_size(), 0.5, in.h0, p.h0);
  bf16_tensor(draw, s.v_size(), in.d_o, in.cot.d_o);
  if (spec.final_state_grad)
    fp32_tensor(draw, s.state_size(), 1.0, in.d_final, in.cot.d_final_state);
  return in;
}

}  // namespace kcv::glr::check
