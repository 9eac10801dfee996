// File: glr/launch/validate.cpp
// The checks of validate.hpp. They stop at the first problem.
#include "glr/launch/validate.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "glr/kernels/config.hpp"
#include "glr/launch/cuda_status.hpp"
#include "glr/launch/workspace.hpp"

namespace kcv::glr::gpu::detail {
namespace {

std::string str(std::int64_t x) { return std::to_string(x); }

// Appends piece by piece (GCC 12's -Wrestrict misfires on "x" + std::string(...)).
std::string member_name(const Config& cfg) {
  std::string out = "'";
  out += name(cfg.member);
  out += "'";
  return out;
}

bool aligned(const void* ptr, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(ptr) % alignment == 0;
}

std::size_t dtype_bytes(DType t) { return t == DType::kFloat32 ? 4 : 2; }

// A pointer the member needs (`needed`) must be present and aligned; one it does not, absent.
Status check_pointer(const char* field, const void* ptr, bool needed, std::size_t alignment,
                     const Config& cfg, const char* why) {
  if (needed && ptr == nullptr)
    return invalid_argument(std::string(field) + " is required for member " + member_name(cfg) +
                            " (" + why + ")");
  if (!needed && ptr != nullptr)
    return invalid_argument(std::string(field) + " must be null for member " + member_name(cfg) +
                            " (" + why + ")");
  if (ptr != nullptr && !aligned(ptr, alignment))
    return invalid_argument(std::string(field) + " must be " +
                            str(static_cast<std::int64_t>(alignment)) + "-byte aligned");
  return {};
}

Status check_required(const char* field, const void* ptr, std::size_t alignment) {
  if (ptr == nullptr) return invalid_argument(std::string(field) + " must not be null");
  if (!aligned(ptr, alignment))
    return invalid_argument(std::string(field) + " must be " +
                            str(static_cast<std::int64_t>(alignment)) + "-byte aligned");
  return {};
}

Status check_cu_seqlens_host(const Dims& dims, const std::int64_t* cu) {
  if (cu[0] != 0) return invalid_argument("cu_seqlens must start at 0, got " + str(cu[0]));
  for (std::int64_t n = 1; n <= dims.num_seqs; ++n)
    if (cu[n] <= cu[n - 1])
      return invalid_argument(
          "cu_seqlens must be strictly increasing (no empty sequences), offset " + str(n) + " is " +
          str(cu[n]) + " after " + str(cu[n - 1]));
  if (cu[dims.num_seqs] != dims.seq_len)
    return invalid_argument("cu_seqlens must end at seq_len=" + str(dims.seq_len) + ", got " +
                            str(cu[dims.num_seqs]));
  return {};
}

Status check_head_dim(const char* field, std::int64_t dim) {
  if (dim >= 1 && dim <= kMaxHeadDim) return {};
  return invalid_argument(std::string(field) + ": unsupported head dim " + str(dim) +
                          " (the CUDA kernels take 1.." + str(kMaxHeadDim) + ")");
}

}  // namespace

Status validate_dims(const Dims& d, const Config& cfg) {
  constexpr std::int64_t kGridX = std::numeric_limits<std::int32_t>::max();
  constexpr std::int64_t kGridY = 65535;
  if (d.batch < 1) return invalid_argument("batch must be >= 1, got " + str(d.batch));
  if (d.seq_len < 1) return invalid_argument("seq_len must be >= 1, got " + str(d.seq_len));
  if (d.qk_heads < 1) return invalid_argument("qk_heads must be >= 1, got " + str(d.qk_heads));
  if (d.v_heads < 1 || d.v_heads % d.qk_heads != 0)
    return invalid_argument("v_heads must be a positive multiple of qk_heads (GVA), got v_heads=" +
                            str(d.v_heads) + " qk_heads=" + str(d.qk_heads));
  KCV_GLR_TRY(check_head_dim("key_dim", d.key_dim));
  KCV_GLR_TRY(check_head_dim("value_dim", d.value_dim));
  if (d.num_seqs < 0) return invalid_argument("num_seqs must be >= 0, got " + str(d.num_seqs));
  if (d.num_seqs > 0 && d.batch != 1)
    return invalid_argument(
        "batch must be 1 when cu_seqlens is given (sequences are packed along T), got batch=" +
        str(d.batch));
  if (d.num_seqs > d.seq_len)
    return invalid_argument("num_seqs=" + str(d.num_seqs) + " exceeds seq_len=" + str(d.seq_len) +
                            " (empty sequences are not allowed)");
  if (!std::isfinite(cfg.scale)) return invalid_argument("scale must be finite");
  const Extents e = extents(d, cfg);
  if (e.chunk_bound > kGridX || e.tokens > kGridX)
    return invalid_argument("too many tokens for one call: " + str(e.tokens));
  if (d.v_heads > kGridY || d.qk_heads > kGridY)
    return invalid_argument("v_heads must be <= 65535, got " + str(d.v_heads));
  const std::int64_t tiles = (d.value_dim + kStateTile - 1) / kStateTile;
  if (e.sequences * d.v_heads * tiles > kGridX)
    return invalid_argument("too many sequences × heads for one call: " +
                            str(e.sequences * d.v_heads));
  return {};
}

Status validate_inputs(const Dims& d, const Config& cfg, const Inputs& in) {
  KCV_GLR_TRY(validate_dims(d, cfg));
  const MemberTraits tr = traits(cfg.member);
  KCV_GLR_TRY(check_required("q", in.q, 2));
  KCV_GLR_TRY(check_required("k", in.k, 2));
  KCV_GLR_TRY(check_required("v", in.v, 2));
  KCV_GLR_TRY(check_pointer("g", in.g, tr.gate != GateKind::kNone, dtype_bytes(cfg.gate_dtype), cfg,
                            tr.gate == GateKind::kNone ? "it has no gate" : "it has a gate"));
  KCV_GLR_TRY(check_pointer("beta", in.beta, tr.delta_rule, dtype_bytes(cfg.beta_dtype), cfg,
                            tr.delta_rule ? "it uses the delta rule" : "it has no delta rule"));
  if (in.h0 != nullptr && !aligned(in.h0, 4)) return invalid_argument("h0 must be 4-byte aligned");
  if (d.num_seqs > 0 && in.cu_seqlens == nullptr)
    return invalid_argument("cu_seqlens is required when num_seqs > 0");
  if (d.num_seqs == 0 && in.cu_seqlens != nullptr)
    return invalid_argument("num_seqs must be len(cu_seqlens) - 1 when cu_seqlens is given, got 0");
  if (in.cu_seqlens != nullptr &&
      !aligned(in.cu_seqlens, cfg.cu_seqlens_type == IndexType::kInt32 ? 4 : 8))
    return invalid_argument("cu_seqlens is not aligned to its index type");
  if (in.cu_seqlens_host != nullptr) {
    if (in.cu_seqlens == nullptr)
      return invalid_argument("cu_seqlens_host given without cu_seqlens");
    KCV_GLR_TRY(check_cu_seqlens_host(d, in.cu_seqlens_host));
  }
  return {};
}

Status validate_outputs(const Config& cfg, const ForwardOutputs& out) {
  (void)cfg;
  KCV_GLR_TRY(check_required("o", out.o, 2));
  if (out.final_state != nullptr && !aligned(out.final_state, 4))
    return invalid_argument("final_state must be 4-byte aligned");
  return {};
}

Status validate_grads(const Config& cfg, const Cotangents& cot, const Gradients& g) {
  const MemberTraits tr = traits(cfg.member);
  KCV_GLR_TRY(check_required("d_o", cot.d_o, 2));
  if (cot.d_final_state != nullptr && !aligned(cot.d_final_state, 4))
    return invalid_argument("d_final_state must be 4-byte aligned");
  KCV_GLR_TRY(check_required("dq", g.dq, 2));
  KCV_GLR_TRY(check_required("dk", g.dk, 2));
  KCV_GLR_TRY(check_required("dv", g.dv, 2));
  KCV_GLR_TRY(check_pointer("dg", g.dg, tr.gate != GateKind::kNone, dtype_bytes(cfg.gate_dtype),
                            cfg, tr.gate == GateKind::kNone ? "it has no gate" : "it has a gate"));
  KCV_GLR_TRY(check_pointer("dbeta", g.dbeta, tr.delta_rule, dtype_bytes(cfg.beta_dtype), cfg,
                            tr.delta_rule ? "it uses the delta rule" : "it has no delta rule"));
  if (g.dh0 != nullptr && !aligned(g.dh0, 4)) return invalid_argument("dh0 must be 4-byte aligned");
  return {};
}

Status validate_workspace(const void* workspace, std::size_t bytes, std::size_t needed) {
  if (workspace == nullptr) return invalid_argument("workspace must not be null");
  if (!aligned(workspace, 256)) return invalid_argument("workspace must be 256-byte aligned");
  if (bytes < needed)
    return invalid_argument("workspace too small: " + str(static_cast<std::int64_t>(bytes)) +
                            " bytes given, " + str(static_cast<std::int64_t>(needed)) + " needed");
  return {};
}

}  // namespace kcv::glr::gpu::detail
