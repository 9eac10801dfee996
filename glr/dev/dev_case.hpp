// File: glr/dev/dev_case.hpp
// What the checks of the tensor-core forward share (the CPU test and the H200 check): a problem
// turned into the kernel's input dtypes, the fp64 chunked reference and the bf16-grade bound on
// the same inputs (include/kcv/glr/error_model.hpp: forward_bounds under contract_for(kBf16)),
// and the judgement of a candidate's o and final state against them: worst |y − y*| / tau, and
// whether every element is finite (the outputs start poisoned with NaN); and the same for the
// backward's dq, dk, dv, dg, dh0 against chunked_backward under backward_bounds.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "glr/dev/chunked_mma_forward.hpp"
#include "kcv/glr/chunked.hpp"
#include "kcv/glr/error_model.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::dev {

/// Whether two outputs hold the same bytes (bitwise: NaN payloads and signed zeros included).
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  // (memcmp of two empty vectors would pass it null pointers: undefined even for 0 bytes)
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// FNV-1a over an output's bytes: printed beside a case's figures, so that a change meant to keep
/// every sum in its order is checked to the bit (before and after), not to the printed digits.
template <typename T>
std::uint64_t bits_digest(const std::vector<T>& a) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto* b = reinterpret_cast<const unsigned char*>(a.data());
  for (std::size_t i = 0; i < a.size() * sizeof(T); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/// A problem in the kernel's dtypes: q, k, v, β bf16; g, h0 fp32; cu_seqlens int64.
struct HostTensors {
  gpu::Dims dims;
  std::vector<bf16> q, k, v, beta;
  std::vector<float> g, h0;
  std::vector<std::int64_t> cu_seqlens;  ///< empty: one sequence
};

/// @pre p's q, k, v, β are bf16 values and g, h0 fp32 values (testing::kernel_inputs).
HostTensors host_tensors(const Problem& p);

/// The fp64 chunked reference and its bf16-grade bound.
struct Expectation {
  Outputs ref;
  ForwardBounds tau;
};
[[nodiscard]] Expected<Expectation> expect(Member member, const Problem& p);

/// Value head hv of p as a one-head problem (its q/k head under GVA).
Problem slice_head(const Problem& p, std::int64_t hv);

/// expect() run per value head on one thread each, reassembled. The reference is the same
/// arithmetic either way; the bound's G term becomes each head's own largest log-decay, at most
/// the whole case's, so per head the bound can only be stricter.
[[nodiscard]] Expected<Expectation> expect_by_head(Member member, const Problem& p);

struct Judgement {
  double o_ratio = 0;   ///< max |o − o*| / tau
  double ht_ratio = 0;  ///< max |h − h*| / tau
  std::int64_t nonfinite = 0;
  bool pass() const { return nonfinite == 0 && o_ratio <= 1.0 && ht_ratio <= 1.0; }
  std::string describe() const;
};

Judgement judge(const std::vector<bf16>& o, const std::vector<float>& final_state,
                const Expectation& e);

/// o as NaN bits (0xFFFF) and the final state as NaN, sized for p.
void poison(const Problem& p, std::vector<bf16>& o, std::vector<float>& final_state);

// ------------------------------------------------------------------------------ the backward

/// The cotangents in the kernel's dtypes: dO rounded to bf16 values, dht to fp32 values.
Cotangents kernel_cotangents(const Cotangents& cot);

/// dO (bf16) and dht (fp32) as the kernel reads them; dht empty when cot has none.
struct HostCotangents {
  std::vector<bf16> d_o;
  std::vector<float> dht;
};
HostCotangents host_cotangents(const Cotangents& cot);

/// The fp64 chunked reference's gradients and their bf16-grade bound.
struct BackwardExpectation {
  Gradients ref;
  BackwardBounds tau;
};
/// @pre cot = kernel_cotangents(...) of p's cotangents.
[[nodiscard]] Expected<BackwardExpectation> expect_backward(Member member, const Problem& p,
                                                            const Cotangents& cot);
/// expect_backward run per value head on one thread each, reassembled. @pre H = HV (no GVA: a
/// q/k head's gradient would be a sum over heads, whose bound is not the heads' bounds combined).
[[nodiscard]] Expected<BackwardExpectation> expect_backward_by_head(Member member, const Problem& p,
                                                                    const Cotangents& cot);

/// The kernel's gradients, read back.
struct HostGradients {
  std::vector<bf16> dq, dk, dv, dbeta;
  std::vector<float> dg, dh0;
};
/// Sized for p and poisoned (NaN); dg empty without a gate, dbeta without the delta rule.
HostGradients poisoned_gradients(Member member, const Problem& p);
/// "bits dq … dk … dv … dg … dbeta … dh0 …": each gradient's bits_digest (16 hex digits).
std::string describe_bits(const HostGradients& g);

struct BackwardJudgement {
  double dq = 0, dk = 0, dv = 0, dg = 0, dbeta = 0, dh0 = 0;  ///< max |y − y*| / tau
  std::int64_t nonfinite = 0;
  double worst() const;
  bool pass() const { return nonfinite == 0 && worst() <= 1.0; }
  std::string describe() const;
};
BackwardJudgement judge_backward(const HostGradients& g, const BackwardExpectation& e);

}  // namespace kcv::glr::dev
