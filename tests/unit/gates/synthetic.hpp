// File: tests/unit/gates/synthetic.hpp
// Hand-built judge inputs: a small signature, an oracle result with chosen values and bounds,
// and candidate calls with chosen outputs and audit flags. Judges are pure, so these are all a
// judge test needs; no op, generator or executor runs.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "kcv/gate.hpp"

namespace kcv::testing {

/// x[N] -> out[N] (elementwise) or x[M,N] -> out[M] (reduction over N), one output.
inline OpSignature synthetic_sig(std::string name = "add", bool reduction = false) {
  OpSignature sig;
  sig.name = std::move(name);
  sig.op_class = reduction ? OpClass::kReduction : OpClass::kElementwise;
  sig.inputs = {TensorSig{"x", {"M", "N"}, ValueDomain::kAny}};
  sig.outputs = {TensorSig{"out", reduction ? std::vector<std::string>{"M"} : std::vector<std::string>{"M", "N"},
                           ValueDomain::kAny}};
  sig.reference_sizes = {{"M", 1}, {"N", 4}};
  sig.reduction_dim = std::string(reduction ? 1 : 0, 'N');  // (not `= "N"`: GCC 12 -Wrestrict false positive)
  return sig;
}

/// One candidate call whose single output holds `values` exactly (as `dtype` bits).
inline CallRecord call_of(DType dtype, const std::vector<double>& values) {
  CallRecord call;
  call.outputs.push_back(make_tensor(dtype, Shape{static_cast<int64_t>(values.size())}, values));
  return call;
}

/// Tau of a single correctly rounded operation: u_out*|y|, the bound an exact op gets.
inline std::vector<double> rounding_taus(DType dtype, const std::vector<double>& y) {
  std::vector<double> tau;
  for (double v : y) tau.push_back(unit_roundoff(dtype) * std::fabs(v));
  return tau;
}

struct Synthetic {
  OpSignature sig = synthetic_sig();
  Contract contract;
  Probe probe;
  OracleResult oracle;
  ProbeOutcome outcome;
  std::vector<HostTensor> inputs;

  /// Oracle output of `dtype` with values y and bounds tau (same length).
  Synthetic& with_oracle(DType dtype, std::vector<double> y, std::vector<double> tau) {
    OracleOutput o;
    o.dtype = dtype;
    o.shape = Shape{static_cast<int64_t>(y.size())};
    o.value = std::move(y);
    o.tau = std::move(tau);
    o.n_terms.assign(o.value.size(), 1.0);
    oracle.outputs = {o};
    return *this;
  }
  Synthetic& with_call(CallRecord call) {
    outcome.calls.push_back(std::move(call));
    return *this;
  }
  Synthetic& with_call(const std::vector<double>& values) {
    return with_call(call_of(oracle.outputs.at(0).dtype, values));
  }
  Synthetic& for_gate(GateId g) {
    probe.gate = g;
    probe.label = "synthetic";
    return *this;
  }
  JudgeInput input() const { return JudgeInput{probe, sig, contract, oracle, outcome, inputs}; }
  GateResult judge(GateId g) {
    for_gate(g);
    return gate_def(g).judge(input());
  }
};

/// y + k*tau elementwise.
inline std::vector<double> offset_by(const std::vector<double>& y, const std::vector<double>& tau, double k) {
  std::vector<double> out;
  for (std::size_t i = 0; i < y.size(); ++i) out.push_back(y[i] + k * tau[i]);
  return out;
}

}  // namespace kcv::testing
