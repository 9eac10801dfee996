// File: glr/verify/verify.cpp
// The GLR ops in the op registry, and verify() / run_probe() for their candidates: the
// pipeline's run_pipeline and judge_probe with GlrProbes, GlrOracle and an ExecutorRunner. One
// GlrOracle serves every grade of a candidate, so the fp64 reference of a case runs once.
#include "kcv/glr/verify.hpp"

#include <fmt/format.h>

#include <cmath>

#include "glr/verify/internal.hpp"
#include "kcv/rng.hpp"

namespace kcv::glr {
namespace {

constexpr int kShrinkRuns = 64;

/// A GLR op as the registry sees it. evaluate() is GlrOracle's, for a case read from the
/// inputs' shapes, dtypes and cu_seqlens under the fp32 grade (params: scale is K^-1/2,
/// state_v_first).
class RegisteredOp final : public Op {
 public:
  RegisteredOp(Member m, OpKind op) : member_(m), op_(op) {}
  const OpSignature& signature() const override { return glr::signature(member_, op_); }

  OracleResult evaluate(std::span<const HostTensor> inputs,
                        const Contract& contract) const override {
    OracleResult bad;
    const auto at = [&](const char* name) -> const HostTensor* {
      const int i = input_index(member_, name, op_);
      return i < 0 || i >= std::ssize(inputs) ? nullptr : &inputs[static_cast<std::size_t>(i)];
    };
    const HostTensor* q = at("q");
    const HostTensor* v = at("v");
    const HostTensor* cu = at("cu_seqlens");
    if (q == nullptr || v == nullptr || cu == nullptr || q->ndim() != 3 || v->ndim() != 3) {
      bad.refused = "the inputs do not have the GLR op's shapes";
      return bad;
    }
    Case c;
    c.member = member_;
    c.op = op_;
    c.io = q->dtype();
    c.qk_heads = q->shape()[1];
    c.key_dim = q->shape()[2];
    c.v_heads = v->shape()[1];
    c.value_dim = v->shape()[2];
    c.lengths.clear();
    const std::vector<double> offsets = cu->to_f64();
    for (std::size_t i = 1; i < offsets.size(); ++i)
      c.lengths.push_back(static_cast<std::int64_t>(offsets[i] - offsets[i - 1]));
    if (const HostTensor* g = at("g")) c.gate_bf16 = g->dtype() == DType::kBF16;
    if (const HostTensor* b = at("beta")) c.beta_f32 = b->dtype() == DType::kF32;
    const auto vk = contract.params.find("state_v_first");
    if (vk != contract.params.end() && vk->second != 0) c.layout = StateLayout::kVK;
    GlrOracle oracle(GlrOptions{});
    ProbeInputs in;
    in.tensors.assign(inputs.begin(), inputs.end());
    auto r = oracle.evaluate_owned(probe_of(c, GateId::kCmp01, ""), in, contract);
    if (!r) {
      bad.refused = r.error().to_string();
      return bad;
    }
    return std::move(*r);
  }

 private:
  Member member_;
  OpKind op_;
};

VerifyReport report_of(Candidate& candidate, Executor& executor, const VerifyOptions& options,
                       Grade grade) {
  VerifyReport report;
  report.kernel = fmt::format("{} [{}]", candidate.name(), name(grade));
  report.op = candidate.op();
  report.contract = effective_contract(candidate, options.profile);
  report.seed = options.seed;
  report.generator_version = kGeneratorVersion;
  report.executor = std::string(executor.name());
  return report;
}

}  // namespace

Status register_ops() {
  for (OpKind op : {OpKind::kChunk, OpKind::kDecode}) {
    for (Member m : kAllMembers) {
      if (find_op(op_name(m, op)) != nullptr) continue;
      if (Status st = register_op(std::make_unique<RegisteredOp>(m, op)); !st) return st;
    }
  }
  return {};
}

CallPolicy call_policy(const GlrOptions& options) {
  CallPolicy policy;
  policy.timeout_ms = options.timeout_ms;
  policy.probe_params = [](const Probe& p) {
    std::map<std::string, double> params;
    auto c = case_of(p);
    if (!c) return params;
    params["scale"] = c->scale();
    params["varlen"] = c->packing == Packing::kBatch ? 0.0 : 1.0;
    params["cu_int32"] = c->packing == Packing::kVarlenI32 ? 1.0 : 0.0;
    params["state_v_first"] = c->layout == StateLayout::kVK ? 1.0 : 0.0;
    return params;
  };
  return policy;
}

Expected<std::vector<VerifyReport>> verify(Candidate& candidate, Executor& executor,
                                           const VerifyOptions& options, const GlrOptions& glr) {
  const std::optional<GlrOp> op = glr_op_of(candidate.op());
  if (!op) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("'{}' is not a GLR op", candidate.op()), candidate.name());
  }
  GlrOracle oracle(glr);
  ExecutorRunner runner(candidate, executor, options.resources, call_policy(glr));
  const std::vector<GateId> gates = {GateId::kCmp01, GateId::kOrd02, GateId::kExc01,
                                     GateId::kRes02};
  std::vector<VerifyReport> reports;
  const std::vector<Grade> grades =
      op->op == OpKind::kDecode ? std::vector<Grade>{Grade::kFp32} : glr.grades;
  for (Grade grade : grades) {
    VerifyReport report = report_of(candidate, executor, options, grade);
    GlrProbes source(op->member, op->op, grade, glr);
    run_verify_pipeline(source, oracle, runner, options, gates, kShrinkRuns, candidate.name(),
                        report);
    reports.push_back(std::move(report));
  }
  return reports;
}

GateResult run_probe(Candidate& candidate, Executor& executor, const Probe& probe,
                     const Contract& contract, const GlrOptions& glr) {
  GateResult bad;
  bad.gate = probe.gate;
  bad.verdict = Verdict::kError;
  const std::optional<GlrOp> op = glr_op_of(candidate.op());
  auto c = case_of(probe);
  if (!op || !c || c->member != op->member || c->op != op->op) {
    bad.reason = !c ? c.error().to_string()
                    : fmt::format("the probe is for {}, the candidate implements {}",
                                  op_name(c->member, c->op), candidate.op());
    bad.evidence.summary = bad.reason;
    return bad;
  }
  GlrProbes source(op->member, op->op, c->grade, glr);
  GlrOracle oracle(glr);
  ExecutorRunner runner(candidate, executor, std::nullopt, call_policy(glr));
  return judge_probe(source, oracle, runner, probe, contract);
}

}  // namespace kcv::glr
