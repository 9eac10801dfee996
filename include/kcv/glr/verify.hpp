// File: include/kcv/glr/verify.hpp
// The GLR kernels through kcv's one verification loop (kcv/pipeline.hpp). What is plugged in:
//  - the GLR ops glr.la, glr.ssd, glr.gla, glr.deltanet, glr.gdn, glr.kda, registered with the
//    op registry (register_ops): one call is forward + backward, inputs q, k, v, (g), (beta), h0,
//    dO, dht, cu_seqlens; outputs o, ht, dq, dk, dv, (dg), (dbeta), dh0;
//  - their decode ops glr.<member>.decode (fla's fused_recurrent_*): one call is the forward of
//    a few tokens per sequence from a given state, inputs q, k, v, (g), (beta), h0, cu_seqlens;
//    outputs o, ht; judged against the fp64 token-serial oracle with the decode bound
//    (decode_model_scale in kcv/glr/error_model.hpp);
//  - GlrProbes, the probe source: the GLR case (member, sequence lengths, heads, head dims, decay,
//    state layout, cu_seqlens type, precision grade, seed, injected NaNs) lives in the probe
//    token (sizes, segments, tags, injections), so `kcv replay` rebuilds it bit for bit; the
//    plans are CMP-01 over the case list, ORD-02 as repetitions of one varlen GVA case, EXC-01
//    as a NaN in one token of v; shrinking drops and shortens sequences, heads and head dims;
//  - GlrOracle, the oracle: the fp64 chunked reference (and, for EXC-01 and every decode probe,
//    the token-serial oracle) run per (sequence, value head) on a pool of threads, and tau from
//    the one GLR error model (kcv/glr/error_model.hpp) under the probe's precision grade;
//  - the candidate is a kcv_kernel library (kcv_kernel.h) whose kernels implement the GLR ops
//    (the sm_90a kernels and the decode kernel, or the same sources compiled as host C++), called
//    through an Executor by the pipeline's ExecutorRunner with the probe's scale and layout as
//    parameters.
// The judges are the gates' own (src/gates); nothing here judges.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcv/candidate.hpp"
#include "kcv/executor.hpp"
#include "kcv/glr/member.hpp"
#include "kcv/glr/precision.hpp"
#include "kcv/glr/problem.hpp"
#include "kcv/op_pipeline.hpp"
#include "kcv/pipeline.hpp"
#include "kcv/verify.hpp"

namespace kcv::glr {

/// Per-token log-decay recipes (fla's test: g = logsigmoid(x) / normalizer).
enum class Decay {
  kWeak,      ///< logsigmoid(U(0,1)) / 10        ≈ −0.05 per token
  kModerate,  ///< logsigmoid(N(0,1) + 2), one in ten set to 0
  kStrong,    ///< logsigmoid(U(0,1)) / 0.01      ≈ −50 per token
};

/// How cu_seqlens reaches the kernel: int64 or int32 offsets, or no offsets at all (a batch of
/// sequences of equal length, [B, T, ...]).
enum class Packing { kVarlenI64, kVarlenI32, kBatch };

/// Which op of a member: the chunk op (forward + backward, the chunk kernels) or the decode op
/// (forward only, token by token: the decode kernel).
enum class OpKind { kChunk, kDecode };

/// One GLR problem as a probe carries it (probe_of / case_of).
struct Case {
  Member member = Member::kGatedDeltaNet;
  OpKind op = OpKind::kChunk;
  std::vector<std::int64_t> lengths = {64};  ///< one per sequence
  Packing packing = Packing::kVarlenI64;
  std::int64_t qk_heads = 1;
  std::int64_t v_heads = 1;
  std::int64_t key_dim = 64;
  std::int64_t value_dim = 64;
  Decay decay = Decay::kModerate;
  StateLayout layout = StateLayout::kKV;
  bool gate_bf16 = false;  ///< g (and dg) in bf16, else fp32
  bool beta_f32 = false;   ///< beta (and dbeta) in fp32, else bf16
  Grade grade = Grade::kFp32;
  DType io = DType::kBF16;    ///< q, k, v, o (and dO): bf16, fp16 or fp32 (decode only)
  bool initial_state = true;  ///< false: h0 is all zeros (a decode call without a state)

  std::int64_t tokens() const;
  /// The reference's shape: cu_seqlens always explicit.
  Shape shape() const;
  /// fla's default scale K^-1/2, rounded to fp32 (what the kernel's fp32 argument holds).
  double scale() const;
  bool operator==(const Case&) const = default;
};

/// "glr.gdn", "glr.gdn.decode", ...
std::string op_name(Member m, OpKind op = OpKind::kChunk);
/// A GLR op: its member and kind.
struct GlrOp {
  Member member = Member::kGatedDeltaNet;
  OpKind op = OpKind::kChunk;
};
/// The GLR op of an op name, or nullopt.
std::optional<GlrOp> glr_op_of(std::string_view op);
/// The member of a GLR op name (chunk or decode), or nullopt.
std::optional<Member> member_of_op(std::string_view op);
/// The op signature of a member's op (inputs and outputs in call order).
const OpSignature& signature(Member m, OpKind op = OpKind::kChunk);
/// Index of tensor `name` among the op's inputs (outputs: output_index), or -1.
int input_index(Member m, std::string_view name, OpKind op = OpKind::kChunk);
int output_index(Member m, std::string_view name, OpKind op = OpKind::kChunk);

/// Largest K and V a case of each op may have: the chunk kernels' 128 and the decode kernel's 256
/// (kcv/glr/gpu.hpp: kMaxHeadDim, kMaxDecodeHeadDim).
std::int64_t max_head_dim(OpKind op);

/// Registers the twelve GLR ops (six chunk, six decode) with the op registry; idempotent.
[[nodiscard]] Status register_ops();

/// A probe of `gate` for case `c` (sizes, segments, tags and input dtypes set; seed 0).
Probe probe_of(const Case& c, GateId gate, std::string label);
/// The case a probe carries; an error naming the field when the probe is not a valid GLR probe.
[[nodiscard]] Expected<Case> case_of(const Probe& probe);

std::string_view name(Decay d);
std::string_view name(Packing p);
std::string_view name(OpKind op);

/// The case lists: kSmall for the CPU emulation (small T and head dims, every code path),
/// kFull for the GPU (T up to 32768, K = V in {64, 100, 128}, GVA, skewed varlen).
enum class CaseList { kSmall, kFull };

struct GlrOptions {
  CaseList cases = CaseList::kFull;
  std::vector<Grade> grades = {Grade::kFp32};
  int runs = 10;                    ///< ORD-02 repetitions of forward + backward
  std::int64_t max_tokens = 0;      ///< probe budget: larger T is refused (0: no budget)
  int threads = 0;                  ///< reference threads (0: hardware concurrency)
  int timeout_ms = 10 * 60 * 1000;  ///< per call (forked executor)
};

class GlrProbes final : public ProbeSource {
 public:
  GlrProbes(Member member, Grade grade, const GlrOptions& options);
  GlrProbes(Member member, OpKind op, Grade grade, const GlrOptions& options);
  const OpSignature& signature() const override;
  std::string not_applicable_reason(GateId id, const Contract& contract) const override;
  std::vector<Probe> plan(GateId id, const Contract& contract, uint64_t seed) const override;
  ProbeScope scope_of(const Probe& probe) const override;
  std::vector<Probe> simplifications(const Probe& failing, const Contract& contract) const override;

 private:
  Member member_;
  OpKind op_;
  Grade grade_;
  GlrOptions options_;
};

/// The fp64 references and the derived bounds of every probe. One instance can serve several
/// grades of one member: reference results are kept per case and seed (not per grade or gate),
/// so the second grade, repetitions and shrinking re-use them.
class GlrOracle final : public Oracle {
 public:
  explicit GlrOracle(const GlrOptions& options);
  ~GlrOracle() override;
  Expected<ProbeInputs> make_inputs(const Probe& probe) override;
  Expected<SharedOracleResult> evaluate(const Probe& probe, const ProbeInputs& inputs,
                                        const Contract& contract) override;
  /// evaluate()'s result, owned by the caller (the op registry's path, which keeps it).
  Expected<OracleResult> evaluate_owned(const Probe& probe, const ProbeInputs& inputs,
                                        const Contract& contract);

  struct Cached;

 private:
  GlrOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Cached>> cache_;
};

/// The ExecutorRunner's policy for a GLR candidate: the probe's scale, packing and layout as
/// call parameters (scale, varlen, cu_int32, state_v_first), and the deadline per call.
CallPolicy call_policy(const GlrOptions& options);

/// verify() for a candidate of a GLR op: one report per grade (kernel named "<kernel> [grade]"),
/// with a replay line for every failing gate. A decode op declares no rounding beyond fp32
/// arithmetic, so it has one report, under the fp32 grade, whatever `glr.grades` holds.
[[nodiscard]] Expected<std::vector<VerifyReport>> verify(Candidate& candidate, Executor& executor,
                                                         const VerifyOptions& options,
                                                         const GlrOptions& glr);

/// run_probe() for a candidate of a GLR op (`kcv replay`): the grade comes from the probe.
GateResult run_probe(Candidate& candidate, Executor& executor, const Probe& probe,
                     const Contract& contract, const GlrOptions& glr);

}  // namespace kcv::glr
