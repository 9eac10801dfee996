// File: glr/verify/internal.hpp
// What the files of glr/verify share: the inputs of a case drawn as kcv tensors, their fp64
// Problem and Cotangents, and the fp64 references run per (sequence, value head) slice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kcv/glr/error_model.hpp"
#include "kcv/glr/verify.hpp"

namespace kcv::glr::verify_detail {

/// The inputs of `probe` (its case `c`) in the member's signature order, drawn from
/// CounterRng(seed, input index) by fla's recipes (gdn-spec.md §12): q, k l2-normalised Gaussian
/// rows, v, dO, dht Gaussian, beta = sigmoid(N(0,1)), h0 = N(0, 0.25), g per Case::decay; each
/// value rounded once to its dtype; then the probe's injections.
std::vector<HostTensor> make_tensors(const Case& c, const Probe& probe);

/// The fp64 problem and cotangents read back from the tensors (the rounded values).
struct Data {
  Problem problem;
  Cotangents cot;
};
Data data_of(const Case& c, const std::vector<HostTensor>& tensors);

/// Which fp64 reference a slice runs: the chunked reference or the token-serial oracle, forward
/// and backward, or the token-serial forward alone (a decode op; the gradients stay empty).
enum class Reference { kChunked, kTokenSerial, kTokenSerialForward };

/// The per-output values of one run, in output order (o, ht, dq, dk, dv, dg, dbeta, dh0 as the
/// member has them), plus the error model's per-element inputs.
struct Results {
  Outputs fwd;
  Gradients grads;
  std::vector<double> dg_scale;  ///< dg's ||p||₂ + |Σp| (gated members, chunked reference only)
  ForwardSigma sigma;            ///< the bf16 grade's declared-rounding σ (when asked)
  /// The same for the gradients (when asked).
  BackwardSigma grad_sigma;
};

/// What one run_sliced computes. `values`: the reference's outputs and gradients; `dg_scale`:
/// dg's terms (with values, chunked reference only); `sigma`: the bf16 grade's declared-rounding σ
/// of the outputs and gradients (chunked reference only). What is not asked for stays empty.
struct SliceRequest {
  Reference which = Reference::kChunked;
  bool values = true;
  bool dg_scale = false;
  bool sigma = false;
};

/// Runs `request` on every (sequence, value head) slice on `threads` threads and scatters the
/// results (dq, dk summed over each GVA group). Each slice's parts (the forward, the backward with
/// dg's terms, the forward's σ, the backward's σ) are tasks of their own on the pool, the longest
/// kind first, so that a problem of few long slices still fills the threads; every part is the
/// same function of the same slice as when one thread ran them in turn.
[[nodiscard]] Expected<Results> run_sliced(Member member, const Data& d, SliceRequest request,
                                           int threads);

/// The op's outputs as (error-model output, values) pairs in output order.
struct NamedOutput {
  std::string name;
  Output which;
  const std::vector<double>* values;
};
std::vector<NamedOutput> outputs_of(Member member, const Results& r, OpKind op = OpKind::kChunk);

/// dtype of each output of case `c`, in output order.
std::vector<DType> output_dtypes(const Case& c);
/// Shape of each output of case `c`, in output order.
std::vector<kcv::Shape> output_shapes(const Case& c);

}  // namespace kcv::glr::verify_detail
