// File: glr/tests/support/problems.hpp
// Random GLR problems for the tests, as a strategy: ProblemSpec says what is valid (sequence
// lengths, heads, dims, decay regime, layout, which optional tensors exist), the seed fixes the
// draw. Inputs follow fla's test recipe (gdn-spec.md §12): q, k l2-normalised Gaussian rows,
// v Gaussian, β = σ(N(0,1)), h0 = N(0, 0.25), dO and dht Gaussian, and
//   weak decay     g = logsigmoid(U(0,1)) / 10     (≈ −0.05 per token)
//   moderate decay g = logsigmoid(N(0,1) + 2), one g in ten set to 0 (fla's zero-masking)
//   strong decay   g = logsigmoid(U(0,1)) / 0.01   (≈ −50 per token: e^{G} underflows in a chunk)
// `quantize` rounds every input to a multiple of 2^-30 so that x ± 2^-17 is exact (finite
// differences with an exactly symmetric step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kcv/glr/oracle.hpp"

namespace kcv::glr::testing {

enum class Decay { kWeak, kModerate, kStrong };

struct ProblemSpec {
  std::vector<std::int64_t> lengths = {32};  ///< one entry: a single sequence, no cu_seqlens
  std::int64_t qk_heads = 1;
  std::int64_t v_heads = 1;
  std::int64_t key_dim = 16;
  std::int64_t value_dim = 16;
  Decay decay = Decay::kModerate;
  bool initial_state = true;
  bool final_state_grad = true;
  StateLayout layout = StateLayout::kKV;
  bool quantize = false;
  std::uint64_t seed = 1;
};

struct Case {
  Problem problem;
  Cotangents cot;
};

/// A member problem and its cotangents; scale = K^-1/2.
Case make_case(Member member, const ProblemSpec& spec);

/// A general recurrence with erase strengths in [0, 1] and write strengths in [0, 2] per channel.
Recurrence make_recurrence(GateKind gate, const ProblemSpec& spec);

/// "gdn/T=65/H=1/HV=2/K=16/V=24/strong/kv" — for failure messages.
std::string describe(Member member, const ProblemSpec& spec);

}  // namespace kcv::glr::testing
