// File: src/gates/plan_common.hpp
// Building blocks of probe plans: size assignments (reference, tail, reduction sweeps with the
// other dims kept small), probes with the contract's input dtypes, element positions for
// injections, and per-probe seeds. Plans are deterministic functions of (signature, contract,
// seed): probe k of gate g gets seed mix(seed, g, k), so adding a probe at the end of a plan
// never changes the inputs of the probes before it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kcv/gate.hpp"

namespace kcv::gates {

using Sizes = std::map<std::string, int64_t>;

/// SplitMix64 over (seed, gate, k).
uint64_t probe_seed(uint64_t seed, GateId gate, std::size_t k);
/// Sets gate and seed of every probe from its position.
std::vector<Probe> number_probes(std::vector<Probe> probes, GateId gate, uint64_t seed);

/// Op reference sizes overridden by the contract's.
Sizes reference_sizes(const OpSignature& sig, const Contract& contract);
/// Kernel-size symbols R and S and the contract's fixed_dims never vary.
bool is_fixed(const Contract& contract, const std::string& dim);
/// The last dim of the first input: the one a kernel tiles innermost.
std::string innermost_dim(const OpSignature& sig);
/// Reference sizes with the innermost dim at tile + 1 (unless fixed): a partial last tile.
Sizes tail_sizes(const OpSignature& sig, const Contract& contract);
/// `sizes` with every varying dim other than `keep` set to 1, then doubled round-robin (output
/// dims only) until the outputs hold at least `min_outputs` elements.
Sizes spread_outputs(const OpSignature& sig, const Contract& contract, Sizes sizes,
                     const std::string& keep, int64_t min_outputs);

int64_t input_numel(const OpSignature& sig, std::size_t input, const Sizes& sizes);
int64_t total_input_numel(const OpSignature& sig, const Sizes& sizes);
int64_t output_numel(const OpSignature& sig, const Sizes& sizes);
/// True when inputs i and j have the same dim symbols (binary elementwise operands).
bool same_dims(const OpSignature& sig, std::size_t i, std::size_t j);

/// A probe over `sizes`, every input in the contract's dtype with distribution `dist` (integer
/// inputs: kSmallIndex), contiguous, one call.
Probe make_probe(const OpSignature& sig, const Contract& contract, Sizes sizes, Distribution dist,
                 std::string label);

/// Row-major index in input `input` of the element at position k along dim `dim`, on line
/// `line` (the coordinate of the first other dim of size >= 2, clamped; the rest 0); -1 when the
/// input has no such dim or k is out of range.
int64_t line_index(const OpSignature& sig, std::size_t input, const Sizes& sizes,
                   const std::string& dim, int64_t line, int64_t k);
/// Number of lines along `dim` of an input: its numel divided by the dim's size.
int64_t line_count(const OpSignature& sig, std::size_t input, const Sizes& sizes, const std::string& dim);

/// Ops whose intermediates never exceed their inputs' magnitude, so near-overflow inputs keep a
/// correct fp32 kernel finite (max/min selections, relu, clamp, sqrt).
bool near_overflow_safe(const OpSignature& sig);
/// Elementwise ops where one near-overflow operand gives the same class (finite or Inf) in any
/// correct evaluation order: all but gelu's forms (x*(1+t)*0.5 overflows where 0.5*x*(1+t) does not).
bool huge_safe_elementwise(const OpSignature& sig);
/// Last-dim reductions, scans and softmax-like ops that neither square nor rescale their inputs,
/// so one near-overflow element per line keeps a correct fp32 kernel's result class.
bool huge_safe_reduction(const OpSignature& sig);
/// Of those, the ones where two near-overflow elements in one line overflow in every order
/// (the result class is Inf in fp32 and in the fp64 oracle rounded to the output): not mean.
bool two_huge_safe(const OpSignature& sig);

}  // namespace kcv::gates
