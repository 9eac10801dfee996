// File: src/gates/registry.cpp
// The table of the twelve gates: code, one-line title (`kcv gates`), the explanation printed by
// `kcv explain` (property, probes, pass criterion, defects caught, error model), the plan, the
// judge and the applicability rule. The table is the only place that wires families to IDs.
#include <fmt/format.h>

#include <array>

#include "gates/families.hpp"

namespace kcv {

namespace gates {

std::string applies_always(const OpSignature&, const Contract&) { return {}; }

/// RES-02 has no probes: it is judged from a ResourceReport (judge_resources).
std::vector<Probe> plan_none(const OpSignature&, const Contract&, uint64_t) { return {}; }

std::string ord01_not_applicable(const OpSignature& sig, const Contract&) {
  if (sig.reduction_dim.empty()) return fmt::format("'{}' reduces over no dimension (no reduction_dim)", sig.name);
  return {};
}

std::string ord02_not_applicable(const OpSignature&, const Contract& contract) {
  if (!contract.deterministic) return "the contract does not declare determinism (\"deterministic\": false)";
  return {};
}

std::string exc02_not_applicable(const OpSignature& sig, const Contract& contract) {
  if (sig.index_output) return fmt::format("'{}' outputs indices: no subnormal result to keep or flush", sig.name);
  bool any_float = false;
  for (DType t : input_dtypes(sig, contract)) any_float = any_float || is_floating(t);
  if (!any_float) return fmt::format("'{}' has integer inputs only: no subnormals", sig.name);
  return {};
}

std::string prc01_not_applicable(const OpSignature& sig, const Contract&) {
  if (sig.index_output) {
    return fmt::format("'{}' outputs indices, compared exactly by CMP-01: no precision to lose", sig.name);
  }
  return {};
}

std::string prc02_not_applicable(const OpSignature& sig, const Contract& contract) {
  if (sig.reduction_dim.empty()) return fmt::format("'{}' accumulates nothing (no reduction_dim)", sig.name);
  if (sig.index_output || sig.uses_minmax) {
    return fmt::format("'{}' reduces by comparison (max/argmax): no accumulator to downcast", sig.name);
  }
  return prc01_not_applicable(sig, contract);
}

}  // namespace gates

namespace {

using namespace gates;  // NOLINT(google-build-using-namespace): the table names every family

const std::array<GateDef, 12> kGates = {{
    {GateId::kCmp01, "CMP-01", "agreement with the oracle over the shape domain and value distributions",
     "Property: for every admissible shape the output agrees with the fp64 oracle within the derived bound.\n"
     "Probes: shape plan (reference, ones, small, primes, tile-1/tile+1, 2*tile-1, large) x distributions\n"
     "  normal, uniform[0,1), heavy tail, cancellation, wide range, near-overflow (selection ops only).\n"
     "Pass: every call returns normally and max_i |y^_i - y*_i| / tau_i <= 1 (tau_i == 0: exact).\n"
     "Error model: tau = u_out|y*| + b_op u_c|y*| + c u_acc sqrt(N) (||p||_2 + |sum p|), c = 4 (strict:\n"
     "  gamma_{N-1} sum|p|); computed from the inputs, never from the candidate.\n"
     "Catches: missing tail masks, hard-coded shapes, wrong broadcasting, off-by-one reduction bounds,\n"
     "  constant or cached outputs that are right for one input.",
     false, plan_cmp01, judge_cmp01, applies_always},
    {GateId::kCmp02, "CMP-02", "interface contract: outputs as declared, inputs untouched, nothing written outside, every output written",
     "Property: the kernel respects the tensor interface: outputs of the declared count, shape and dtype,\n"
     "  inputs (and their padding) unmodified, nothing written outside the outputs, every output element written.\n"
     "Probes: each layout of the layout plan applied to each input in turn, plus every input padded behind\n"
     "  an odd storage offset; guard bands and padding hold a sentinel NaN pattern, outputs a fresh sentinel.\n"
     "Pass (tolerance-free, structural only): status ok, outputs as declared, inputs bitwise unchanged, guards\n"
     "  intact, no output element still holding the sentinel. Values on these views are CMP-03's business.\n"
     "Catches: input mutation, scratch space in an input's padding, writes past the row end, skipped elements.",
     true, plan_cmp02, judge_cmp02, applies_always},
    {GateId::kCmp03, "CMP-03", "numeric agreement on non-contiguous, broadcast and mixed-layout inputs",
     "Property: as CMP-01, over mixed layouts: each input gets a different view of the layout plan.\n"
     "Probes: layouts (rotated across inputs) x normal, uniform[0,1), heavy tail, cancellation, on a tail shape\n"
     "  (innermost dim tile+1), in the contract's input dtypes (16-bit where declared).\n"
     "Pass: every element within tau, as CMP-01.\n"
     "Catches: contiguity assumed (row*ncols+col on a strided view), ignored storage offsets, a separate\n"
     "  strided code path that accumulates in lower precision or casts to bf16, wrong type promotion,\n"
     "  vectorized loads that assume alignment.",
     false, plan_cmp03, judge_cmp01, applies_always},
    {GateId::kOrd01, "ORD-01", "reductions of every length within the declared accumulator's error model",
     "Property: any summation order is allowed; the result lies within the accumulation bound of the\n"
     "  declared accumulator around the exact result (compared with the oracle, not another order).\n"
     "Probes: reduction length N in {1, 2, 31, 1024, 4096, 16384, 2^20} with the other dims small; zero-mean\n"
     "  normal, uniform[0,1) (nonzero mean), heavy tail, one near-overflow element among small ones.\n"
     "Pass: |s^ - s| <= tau with tau_acc = 4 u_acc sqrt(N) (||x||_2 + |sum x|) (strict: gamma_{N-1} sum|x|).\n"
     "Catches: bf16/fp16 partial sums disguised as reordering, dropped or duplicated tail elements,\n"
     "  wrong combination of per-block partials, skipped warp-shuffle steps.",
     false, plan_ord01, judge_ord01, ord01_not_applicable},
    {GateId::kOrd02, "ORD-02", "bitwise determinism across repetitions and buffer addresses",
     "Property: a kernel that declares determinism gives bit-identical outputs for identical inputs,\n"
     "  whatever the buffer addresses and alignment, and whatever the output buffers held before.\n"
     "Probes: 8 repetitions at shifted addresses (r*8+4 bytes), fresh poisoned outputs per call.\n"
     "Pass (tolerance-free): every output bit (NaN payloads, signs of zero) equal to the first call's.\n"
     "  Not applicable when the contract declares \"deterministic\": false.\n"
     "Catches: float atomics, split-K with atomics, accumulators that depend on previous buffer contents,\n"
     "  races whose outcome depends on timing.",
     true, plan_ord02, judge_ord02, ord02_not_applicable},
    {GateId::kOrd03, "ORD-03", "schedule invariance across launch configurations and concurrent calls",
     "Property: results do not depend on launch configuration or concurrency beyond the error model.\n"
     "Probes: the contract's launch configs (default: block {0,64,96,128,1000} x threads {1,2,4}) on the\n"
     "  reference shape (uniform[0,1)) and a tile+1 shape (normal); plus 4 concurrent calls.\n"
     "Pass: pairwise differences between calls <= 2 tau (two results each within tau of y*), and every\n"
     "  call within tau of the oracle.\n"
     "Catches: missing barriers, grids of floor(N/BLOCK) that skip work, configs that accumulate in bf16,\n"
     "  shared scratch state between concurrent calls.",
     false, plan_ord03, judge_ord03, applies_always},
    {GateId::kExc01, "EXC-01", "NaN/+Inf/-Inf propagation: the output's non-finite mask equals the oracle's",
     "Property: the set of output positions that are NaN, +Inf, -Inf (with class) equals the oracle's\n"
     "  under the declared profile (maximum vs maxNum, clamp, argmax with NaN). A profile's relaxation is a\n"
     "  permission: under maxNum profiles the NaN-propagating and the NaN-dropping class both pass.\n"
     "Probes: NaN/+Inf/-Inf at first, middle, last and tail positions; both operands of binary ops at once\n"
     "  (NaN,NaN), (+Inf,-Inf), one-sided NaN, 0*Inf; inside one reduction line; +Inf and -Inf in one line;\n"
     "  fully -Inf softmax rows; near-overflow values where every correct evaluation order agrees.\n"
     "Pass (tolerance-free, the mask only): exact class equality per element (index outputs: exact values);\n"
     "  elements where the declared-type run has another class than every sanctioned result are not judged.\n"
     "  Finite values are CMP-01's business.\n"
     "Catches: NaN-dropping max/min/clamp, unstabilized softmax overflow, masked rows that give 0 or\n"
     "  garbage, argmax ignoring NaN.",
     true, plan_exc01, judge_exc01, applies_always},
    {GateId::kExc02, "EXC-02", "subnormals kept, or flushed only where the profile permits it",
     "Property: results whose exact value or inputs lie in the subnormal range are kept (strict,\n"
     "  cuda-default, triton-default, pytorch-eager); fast-math permits flushing them to signed zeros.\n"
     "Probes: subnormal inputs; one subnormal operand; tiny operands whose products underflow (mul,\n"
     "  matmul, conv); exp arguments in [-103, -88] (subnormal exp results).\n"
     "Pass (tolerance-free, by class): no zero where every sanctioned result is a nonzero subnormal that\n"
     "  the bound does not admit. Values are CMP-01's business.\n"
     "Catches: --use_fast_math / --ftz=true builds under a keeping contract, libdevice FTZ paths, DAZ\n"
     "  loads that read subnormal inputs as zero.",
     true, plan_exc02, judge_exc02, exc02_not_applicable},
    {GateId::kPrc01, "PRC-01", "storage and conversion precision: no silent downcast, RN-even conversions",
     "Property: inputs, declared intermediates and outputs are stored in the declared types and\n"
     "  conversions round to nearest-even.\n"
     "Probes: values exact in the declared dtype but not in any narrower one (low mantissa bits set).\n"
     "Pass: bits lost = log2(RMS(y^ - y*) / RMS(d - y*)) <= 2 + log2(1 + b_op), where d is the oracle's\n"
     "  simulation in the declared types (RMS(d) floored at u_out RMS(|y*|)/4) and b_op the profile's ulp\n"
     "  budget for the op; and every exact tie whose bound is a single rounding equals RN-even bitwise.\n"
     "Catches: fp32 paths silently in TF32/bf16/fp16, truncating conversions (bits >> 16), intermediate\n"
     "  statistics kept in bf16.",
     false, plan_prc01, judge_prc01, prc01_not_applicable},
    {GateId::kPrc02, "PRC-02", "accumulation precision: reductions accumulate in the declared accumulator",
     "Property: sums and dot products accumulate in the declared accumulator (fp32 unless declared).\n"
     "Probes: reduction length K in {256, 2048, 8192}, other dims small but >= 32 outputs; zero-mean\n"
     "  normal (hardest to detect) and uniform[0,1).\n"
     "Pass: bits lost against the oracle's simulated declared accumulation <= 2. The statistic is an RMS\n"
     "  over all outputs, so it does not depend on the output count; fp16 vs fp32 accumulation differs\n"
     "  by ~13 bits, bf16 by ~16.\n"
     "Catches: fp16/bf16 accumulators, reduced-precision split-K, CUBLAS_COMPUTE_16F-style paths.",
     false, plan_prc02, judge_prc02, prc02_not_applicable},
    {GateId::kRes01, "RES-01", "memory safety: no out-of-bounds access, every output written, inputs intact",
     "Property: no write outside the outputs, every output element written, inputs unchanged, no\n"
     "  out-of-bounds read that influences the result.\n"
     "Probes: tail shapes (tile-1, tile+1, a prime, all ones, all primes), 3 calls each with fresh random\n"
     "  guard and padding contents and a fresh random output sentinel per call.\n"
     "Pass (tolerance-free): every call returns normally; guards intact; no element left holding the\n"
     "  sentinel; inputs bitwise unchanged; results identical across calls (bitwise when deterministic,\n"
     "  else within 2 tau) although only guard contents changed.\n"
     "Catches: missing tail masks on loads or stores, off-by-one masks, skipped last blocks, stale results\n"
     "  reused from an earlier call, crashes and hangs.",
     true, plan_res01, judge_res01, applies_always},
    {GateId::kRes02, "RES-02", "resources within declared budgets and architecture limits (registers, shared, TMEM)",
     "Property: registers per thread, spill bytes, shared memory per block, threads per block and\n"
     "  Blackwell tensor memory stay within the contract's budgets and the architecture's limits.\n"
     "Measured statically from ptxas -v, cuobjdump --dump-resource-usage and PTX (tcgen05.alloc/dealloc).\n"
     "Pass (tolerance-free): each measure <= budget (else the arch limit: 255 registers, 227 KiB shared,\n"
     "  1024 threads); every TMEM allocation a power of two in [32, 512] columns, their sum <= budget or\n"
     "  512, and one dealloc per alloc. Not applicable without device code.\n"
     "Catches: TMEM over-allocation (deadlock when a second CTA waits) and leaks, spills where none are\n"
     "  allowed, shared-memory requests above the opt-in limit.",
     true, plan_none, nullptr, applies_always},
}};

}  // namespace

const GateDef& gate_def(GateId id) { return kGates[static_cast<std::size_t>(id)]; }

bool judge_reads_input_values(GateId id, const OpSignature& sig) {
  return id == GateId::kPrc01 && gates::op_ulp_budget_reads_inputs(sig);
}

bool judge_reads_bound(GateId id) { return id != GateId::kExc01; }

}  // namespace kcv
