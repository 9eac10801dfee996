// File: src/oracle/op_base.cpp
// EvalContext construction and the TableOp adapter. Exact recomputation (evaluate_exact) runs
// on the same context as evaluate, so FTZ of inputs and the params are identical in both tiers,
// and its result is finished (overflow, FTZ) exactly as evaluate finishes its values.
#include "oracle/op_base.hpp"

#include <cmath>

#include "oracle/semantics.hpp"

namespace kcv::oracle {

int64_t EvalContext::size(const std::string& symbol) const {
  const auto it = sizes.find(symbol);
  return it == sizes.end() ? 0 : it->second;
}

double EvalContext::param(const std::string& name) const {
  const auto it = params.find(name);
  return it == params.end() ? std::nan("") : it->second;
}

bool EvalContext::tf32(bool conv) const {
  const bool allowed = conv ? profile->tf32_conv : profile->tf32_dot;
  return allowed && compute_dtype(*contract) == DType::kF32 &&
         (in_dtypes.empty() || in_dtypes.front() == DType::kF32);
}

std::optional<EvalContext> make_context(const OpSignature& sig, std::span<const HostTensor> inputs,
                                        const Contract& contract) {
  auto sizes = bind_sizes(sig, inputs);
  if (!sizes) return std::nullopt;
  EvalContext ctx;
  ctx.sig = &sig;
  ctx.contract = &contract;
  ctx.profile = &profile(contract.profile);
  ctx.sizes = std::move(*sizes);
  for (const HostTensor& t : inputs) {
    ctx.in.push_back(read_values(t, ctx.profile->flush_subnormals));
    ctx.in_dtypes.push_back(t.dtype());
  }
  ctx.params = merged_params(sig, contract);
  ctx.out_dtypes = output_dtypes(sig, contract);
  for (DType t : ctx.out_dtypes) ctx.models.push_back(precision_model(contract, t));
  return ctx;
}

OracleOutput make_output(const EvalContext& ctx, int output) {
  OracleOutput out;
  out.dtype = ctx.out_dtypes[static_cast<std::size_t>(output)];
  out.shape = shape_of(ctx.sig->outputs[static_cast<std::size_t>(output)], ctx.sizes);
  const auto n = static_cast<std::size_t>(numel(out.shape));
  out.value.assign(n, 0.0);
  out.tau.assign(n, 0.0);
  out.declared.assign(n, 0.0);
  out.n_terms.assign(n, 1.0);
  return out;
}

OracleResult TableOp::evaluate(std::span<const HostTensor> inputs, const Contract& contract) const {
  OracleResult result;
  auto ctx = make_context(sig_, inputs, contract);
  if (!ctx) return result;  // @pre violated: shapes do not fit the signature
  for (std::size_t o = 0; o < sig_.outputs.size(); ++o) {
    result.outputs.push_back(make_output(*ctx, static_cast<int>(o)));
  }
  eval_(*ctx, result.outputs);
  return result;
}

std::optional<double> TableOp::evaluate_exact(std::span<const HostTensor> inputs,
                                              const Contract& contract, int output,
                                              int64_t index) const {
  const int64_t one[] = {index};
  return evaluate_exact_many(inputs, contract, output, one).front();
}

std::vector<std::optional<double>> TableOp::evaluate_exact_many(
    std::span<const HostTensor> inputs, const Contract& contract, int output,
    std::span<const int64_t> indices) const {
  std::vector<std::optional<double>> out(indices.size());
  if (!exact_ || output < 0 || output >= static_cast<int>(sig_.outputs.size())) return out;
  auto ctx = make_context(sig_, inputs, contract);  // once for all indices: it converts every input
  if (!ctx) return out;
  const auto o = static_cast<std::size_t>(output);
  const int64_t n = numel(shape_of(sig_.outputs[o], ctx->sizes));
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] < 0 || indices[k] >= n) continue;
    if (auto y = exact_(*ctx, output, indices[k])) {
      out[k] = finish_value(*y, ctx->out_dtypes[o], *ctx->profile);
    }
  }
  return out;
}

TensorSig tensor(std::string name, std::vector<std::string> dims, ValueDomain domain) {
  return TensorSig{std::move(name), std::move(dims), domain};
}

}  // namespace kcv::oracle
