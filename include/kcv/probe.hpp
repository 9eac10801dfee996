// File: include/kcv/probe.hpp
// A probe is everything needed to regenerate one test input set bit for bit: gate, seed, size
// assignment, per-input dtype/layout/value distribution, injected special values, and how the
// candidate is to be called (repetitions, address shifts, launch configurations, concurrency).
// Probes serialize to one-line JSON tokens so `kcv replay` can rebuild them exactly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/expected.hpp"
#include "kcv/gate_id.hpp"
#include "kcv/tensor.hpp"

namespace kcv {

enum class Distribution {
  kNormal,        // N(0, 1)
  kUniform01,     // [0, 1): nonzero mean, errors follow partial sums
  kHeavyTail,     // lognormal(0, 2) with random sign
  kCancellation,  // pairs x, -x(1 + delta)
  kWideRange,     // random sign, exponents spread over +-20 (base 2)
  kNearOverflow,  // magnitudes near the dtype's largest finite value
  kSubnormal,     // random subnormal bit patterns of the dtype (and of fp32 for 16-bit types)
  kLowBits,       // values exact in the dtype but not in any narrower format (PRC-01)
  kPositive,      // uniform [0.5, 2)
  kSmallIndex,    // small integers in [0, 8) for integer inputs
  kExpUnderflow,  // uniform [-103, -88]: fp32 exp results are subnormal (EXC-02)
  kTiny,          // random sign, magnitudes in [2^-70, 2^-60]: products underflow (EXC-02)
  // Transforms of a base draw: the values of get_inputs() for a KernelBench module, N(0, 1) for
  // a registered op. Each keeps the base's signs and shape, so a module's input constraints
  // (positive scales, probabilities summing to one) are disturbed as little as possible.
  kDrawn,            // the base draw itself
  kShiftedMean,      // x + 1024 RMS(x): nonzero mean, small spread (cancellation)
  kParetoScaled,     // x * (1 - U)^(-2/3): Pareto(1.5) factors, heavy tails
  kWideScaled,       // x * 2^E, E uniform in [-20, 20]: wide dynamic range
  kLargeScaled,      // x * 128: exp overflows (|x| > 88.7) where a stable evaluation does not
  kHugeScaled,       // x * 2^100: products and squares overflow fp32
  kSubnormalScaled,  // x scaled into the dtype's subnormal range (fp32: 2^-130)
  kTinyScaled,       // x scaled so products underflow to subnormals (fp32: 2^-66)
};

enum class Special { kNaN, kPosInf, kNegInf, kPosZero, kNegZero, kSubnormal, kHuge };

struct Injection {
  int input = 0;
  int64_t index = 0;  // logical row-major element
  Special value = Special::kNaN;
  bool operator==(const Injection&) const = default;
};

enum class LayoutKind {
  kContiguous,
  kTransposed,  // last two dims stored transposed (column-major matrix)
  kSliced,      // every `step`-th element of the last dim of a larger tensor
  kBroadcast,   // dim 0 has stride 0 (one row repeated)
  kOffset,      // storage offset of `offset` elements
  kPaddedRows,  // row stride = row length + pad
};

struct Layout {
  LayoutKind kind = LayoutKind::kContiguous;
  int64_t step = 2;
  int64_t offset = 0;
  int64_t pad = 0;
  bool operator==(const Layout&) const = default;
};

struct InputSpec {
  DType dtype = DType::kF32;
  Distribution dist = Distribution::kNormal;
  Layout layout;
  bool operator==(const InputSpec&) const = default;
};

struct Probe {
  GateId gate = GateId::kCmp01;
  std::string label;                       // human description: "tile+1 N=257 normal"
  uint64_t seed = 0;
  std::map<std::string, int64_t> sizes;    // size assignment for the op signature
  std::vector<InputSpec> inputs;           // one per op input
  std::vector<Injection> injections;
  int repetitions = 1;                     // calls with the same inputs (ORD-02: K >= 8)
  bool shift_addresses = false;            // each repetition at a different address/alignment
  std::vector<LaunchConfig> launch_configs;  // ORD-03: one call per config; empty = default
  int concurrency = 1;                     // calls running at once on separate buffers
  bool randomize_guards = false;           // RES-01: guard contents differ between calls
  std::vector<int> autotune_configs;       // ORD-03 of a module: one call per forced Triton config
  /// Lengths of the sequences packed along a varlen dimension (a GLR probe's cu_seqlens as
  /// lengths); empty when the problem has none.
  std::vector<int64_t> segments;
  /// Named choices a probe source needs beyond sizes and distributions (a GLR probe's member,
  /// precision grade, decay regime, state layout); empty for registered ops and modules.
  std::map<std::string, std::string> tags;
  bool operator==(const Probe&) const = default;
};

/// Which contract choice a probe exercises beyond the reference input, in the order plans run
/// them (a gate's first failing probe then says the most basic scope that fails). The audit's
/// robustness table leaves failures of a scope out to show what that choice contributes.
enum class ProbeScope {
  kReference,  // the reference shape, the reference's own values, contiguous inputs, one call
  kValues,     // other value distributions or injected specials at the reference shape
  kRepeat,     // repeated or concurrent calls, schedules (determinism, schedule invariance)
  kShape,      // other sizes
  kLayout,     // non-contiguous, broadcast or offset views
};
std::string_view scope_name(ProbeScope s);
Expected<ProbeScope> parse_scope(std::string_view name);

std::string_view distribution_name(Distribution d);
std::string_view layout_name(LayoutKind k);
std::string_view special_name(Special s);
/// Inverses of the three name functions; the error names the unknown value.
Expected<Distribution> parse_distribution(std::string_view name);
Expected<LayoutKind> parse_layout_kind(std::string_view name);
Expected<Special> parse_special(std::string_view name);
/// True for the transforms of a base draw (kDrawn .. kTinyScaled).
bool is_transform(Distribution d);
/// Every enum value, in declaration order (for plans, tests and help texts).
std::vector<Distribution> all_distributions();
std::vector<LayoutKind> all_layout_kinds();
std::vector<Special> all_specials();

/// One-line JSON, stable field order.
std::string probe_to_token(const Probe& p);
Expected<Probe> probe_from_token(std::string_view token);

}  // namespace kcv
