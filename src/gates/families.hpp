// File: src/gates/families.hpp
// The plans, judges and applicability rules of the five gate families (cmp, ord, exc, prc, res),
// as the registry wires them into GateDef. Declared here, not in the public header, because users
// reach them only through gate_def(); tests call them directly to judge synthetic outcomes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gates/parallel.hpp"
#include "kcv/gate.hpp"

namespace kcv::gates {

// CMP: comparison with the oracle across shapes, layouts and value distributions.
std::vector<Probe> plan_cmp01(const OpSignature& sig, const Contract& contract, uint64_t seed);
std::vector<Probe> plan_cmp02(const OpSignature& sig, const Contract& contract, uint64_t seed);
std::vector<Probe> plan_cmp03(const OpSignature& sig, const Contract& contract, uint64_t seed);
GateResult judge_cmp01(const JudgeInput& in);  // also CMP-03: numeric agreement within tau
GateResult judge_cmp02(const JudgeInput& in);  // structural: status, inputs, guards, values

// ORD: reduction order, determinism, schedule invariance.
std::vector<Probe> plan_ord01(const OpSignature& sig, const Contract& contract, uint64_t seed);
std::vector<Probe> plan_ord02(const OpSignature& sig, const Contract& contract, uint64_t seed);
std::vector<Probe> plan_ord03(const OpSignature& sig, const Contract& contract, uint64_t seed);
GateResult judge_ord01(const JudgeInput& in);
GateResult judge_ord02(const JudgeInput& in);
GateResult judge_ord03(const JudgeInput& in);

// EXC: non-finite and subnormal semantics.
std::vector<Probe> plan_exc01(const OpSignature& sig, const Contract& contract, uint64_t seed);
std::vector<Probe> plan_exc02(const OpSignature& sig, const Contract& contract, uint64_t seed);
GateResult judge_exc01(const JudgeInput& in);
GateResult judge_exc02(const JudgeInput& in);

// PRC: storage/conversion and accumulation precision (bits-lost statistic).
std::vector<Probe> plan_prc01(const OpSignature& sig, const Contract& contract, uint64_t seed);
std::vector<Probe> plan_prc02(const OpSignature& sig, const Contract& contract, uint64_t seed);
GateResult judge_prc01(const JudgeInput& in);
GateResult judge_prc02(const JudgeInput& in);
/// Extra ulps (beyond correct rounding) the profile grants the op, at input magnitude max_abs_x.
double op_ulp_budget(const OpSignature& sig, const Contract& contract, double max_abs_x);
/// Whether op_ulp_budget reads max_abs_x (an exp budget); where it does not, PRC-01 never reads
/// the input values.
bool op_ulp_budget_reads_inputs(const OpSignature& sig);
/// The bits-lost statistic of one output, log2(RMS(candidate - y*) / RMS(declared - y*)), and its
/// parts; `split` is for tests (the sums come out the same on any number of threads).
struct BitsLost {
  double bits = 0;
  double rms_e = 0;
  double rms_d = 0;
  int64_t n = 0;
};
BitsLost bits_lost(const OracleOutput& want, const HostTensor& got, Split split = {});
/// PRC-01's threshold in bits: 2 + log2(1 + budget).
double prc01_bits_threshold(double ulp_budget);
/// PRC-02's threshold in bits.
inline constexpr double kPrc02BitsThreshold = 2.0;

// RES: memory safety (probed) and resources (judged from a ResourceReport, see gate.hpp).
std::vector<Probe> plan_res01(const OpSignature& sig, const Contract& contract, uint64_t seed);
GateResult judge_res01(const JudgeInput& in);

// Applicability: empty when the gate applies, else the reason it does not.
std::string applies_always(const OpSignature& sig, const Contract& contract);
std::string ord01_not_applicable(const OpSignature& sig, const Contract& contract);
std::string ord02_not_applicable(const OpSignature& sig, const Contract& contract);
std::string exc02_not_applicable(const OpSignature& sig, const Contract& contract);
std::string prc01_not_applicable(const OpSignature& sig, const Contract& contract);
std::string prc02_not_applicable(const OpSignature& sig, const Contract& contract);

}  // namespace kcv::gates
