// File: src/oracle/op_base.hpp
// The common frame of every oracle op: an EvalContext (inputs read once as fp64 under the
// profile, sizes bound from the input shapes, params merged, output dtypes and precision models
// resolved) and TableOp, an Op made of a signature plus two functions. Op families only write
// the arithmetic; nothing here knows about a particular op.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kcv/op.hpp"

namespace kcv::oracle {

struct EvalContext {
  const OpSignature* sig = nullptr;
  const Contract* contract = nullptr;
  const Profile* profile = nullptr;
  std::map<std::string, int64_t> sizes;
  std::vector<std::vector<double>> in;  // row-major fp64 values (FTZ applied when flushing)
  std::vector<DType> in_dtypes;         // the tensors' own dtypes
  std::map<std::string, double> params;
  std::vector<DType> out_dtypes;
  std::vector<PrecisionModel> models;  // one per output

  int64_t size(const std::string& symbol) const;
  double param(const std::string& name) const;
  bool flush() const { return profile->flush_subnormals; }
  /// True when fp32 products may use TF32 inputs (conv: Profile::tf32_conv).
  bool tf32(bool conv) const;
};

/// Reads `inputs` for `sig` under `contract`; nullopt when their ranks or sizes do not fit.
std::optional<EvalContext> make_context(const OpSignature& sig, std::span<const HostTensor> inputs,
                                        const Contract& contract);

/// An output with dtype and shape from the context and value/tau/declared/n_terms sized.
OracleOutput make_output(const EvalContext& ctx, int output);

class TableOp final : public Op {
 public:
  using EvalFn = std::function<void(const EvalContext&, std::vector<OracleOutput>&)>;
  using ExactFn = std::function<std::optional<double>(const EvalContext&, int, int64_t)>;

  TableOp(OpSignature sig, EvalFn eval, ExactFn exact)
      : sig_(std::move(sig)), eval_(std::move(eval)), exact_(std::move(exact)) {}

  const OpSignature& signature() const override { return sig_; }
  OracleResult evaluate(std::span<const HostTensor> inputs, const Contract& contract) const override;
  std::optional<double> evaluate_exact(std::span<const HostTensor> inputs, const Contract& contract,
                                       int output, int64_t index) const override;
  std::vector<std::optional<double>> evaluate_exact_many(
      std::span<const HostTensor> inputs, const Contract& contract, int output,
      std::span<const int64_t> indices) const override;

 private:
  OpSignature sig_;
  EvalFn eval_;
  ExactFn exact_;
};

using OpList = std::vector<std::unique_ptr<Op>>;

/// Shorthand for building signatures.
TensorSig tensor(std::string name, std::vector<std::string> dims,
                 ValueDomain domain = ValueDomain::kAny);

}  // namespace kcv::oracle
