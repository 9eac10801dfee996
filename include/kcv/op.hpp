// File: include/kcv/op.hpp
// The trusted oracle's view of an operator: its signature (tensors as lists of size symbols, so
// shape plans can vary sizes by name), and an fp64 reference that also returns, per output
// element, the derived error bound tau (from the inputs and the contract, never the candidate)
// and the value a conforming implementation in the declared types would produce (for the
// bits-lost statistic of PRC-01/02). Oracle code never sees candidate outputs.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/shared_doubles.hpp"
#include "kcv/tensor.hpp"
#include "kcv/tolerance.hpp"

namespace kcv {

enum class ValueDomain { kAny, kPositive, kNonZero };

struct TensorSig {
  std::string name;
  std::vector<std::string> dims;  // size symbols, e.g. {"M", "N"}
  ValueDomain domain = ValueDomain::kAny;
};

enum class OpClass { kElementwise, kReduction, kNormalization, kMatmul, kScan, kConvolution };

struct OpSignature {
  std::string name;
  std::string summary;
  OpClass op_class = OpClass::kElementwise;
  std::vector<TensorSig> inputs;
  std::vector<TensorSig> outputs;
  std::map<std::string, int64_t> reference_sizes;
  std::map<std::string, double> default_params;
  std::string reduction_dim;   // the summed size symbol; empty when nothing is summed
  bool index_output = false;   // outputs are indices (argmax): compared exactly
  bool uses_minmax = false;    // NaN semantics of max/min depend on the profile
  bool uses_exp = false;       // exp-based: EXC-02 probes with subnormal results apply
};

struct OracleOutput {
  DType dtype = DType::kF32;     // the output dtype the candidate must produce
  Shape shape;
  // value, declared and alternative are shared, not copied, by the results of one probe under
  // profiles that differ only in tau (SharedDoubles).
  SharedDoubles value;           // fp64 reference under the profile, row-major
  std::vector<double> tau;       // per-element absolute bound (0 where exactness is required)
  SharedDoubles declared;        // simulated conforming result in declared types; may be empty
  std::vector<double> n_terms;   // reduction length per element (1 for elementwise)
  /// A second sanctioned result, where the profile permits a relaxation (maxNum max/min, FTZ):
  /// the strict result when `value` is the relaxed one's, or the relaxed when `value` is strict.
  /// The class judges (EXC-01, EXC-02) accept either; empty when the profile permits none.
  SharedDoubles alternative;
};

struct OracleResult {
  std::vector<OracleOutput> outputs;
  bool escalated = false;  // some element was recomputed with MPFR
  /// Non-empty: the trusted reference refuses this probe's input (a view it does not take); the
  /// probe does not count, and the reason is recorded.
  std::string refused;
  /// Non-empty: no value claim can be made on this probe (fp32 eager itself is as far from fp64
  /// as the output is large); value-bound judges return not_applicable with this reason.
  std::string no_value_claim;
};

class Op {
 public:
  virtual ~Op() = default;
  virtual const OpSignature& signature() const = 0;
  /// @pre inputs have the signature's shapes for one size assignment; any layout and dtype.
  /// @post one OracleOutput per signature output, shapes from the same size assignment.
  virtual OracleResult evaluate(std::span<const HostTensor> inputs, const Contract& contract) const = 0;
  /// Recompute one output element with MPFR (correctly rounded to fp64); nullopt when the op
  /// has no MPFR path. Used when an observed error lies within 2x of its bound.
  virtual std::optional<double> evaluate_exact(std::span<const HostTensor> inputs,
                                               const Contract& contract, int output,
                                               int64_t index) const;
  /// evaluate_exact for several elements of one output, sharing the input conversion; one
  /// entry per index, in order.
  virtual std::vector<std::optional<double>> evaluate_exact_many(
      std::span<const HostTensor> inputs, const Contract& contract, int output,
      std::span<const int64_t> indices) const;
};

const Op* find_op(std::string_view name);
std::vector<const Op*> all_ops();
Shape shape_of(const TensorSig& sig, const std::map<std::string, int64_t>& sizes);
/// Op defaults overridden by the contract's params.
std::map<std::string, double> merged_params(const OpSignature& sig, const Contract& contract);
/// Input dtypes of a contract resolved against the signature (f32 default).
std::vector<DType> input_dtypes(const OpSignature& sig, const Contract& contract);
/// Output dtypes resolved (index outputs: i64; otherwise the first input's dtype).
std::vector<DType> output_dtypes(const OpSignature& sig, const Contract& contract);

// Added by the oracle module:
/// Size symbols bound from the inputs' shapes; an error naming the tensor and symbol when a
/// rank differs from the signature or one symbol gets two sizes.
Expected<std::map<std::string, int64_t>> bind_sizes(const OpSignature& sig,
                                                    std::span<const HostTensor> inputs);
/// Names of all ops, in registry order (for messages: "unknown op 'x' (known: ...)").
std::vector<std::string> op_names();
/// Adds an op defined outside the oracle module (the GLR ops, kcv/glr/verify.hpp) to the
/// registry: find_op, all_ops and candidate loading see it from then on. An error when the name
/// is empty or taken.
[[nodiscard]] Status register_op(std::unique_ptr<Op> op);

}  // namespace kcv
