// File: glr/launch/decode_params.cpp
// validate_decode (include/kcv/glr/gpu.hpp) and decode_params (decode_params.hpp): the decode
// call's checks and parameter block, with no CUDA call, so the CPU emulation shares them. The
// chunk pipeline's dims checks (validate.hpp) apply, except that the head dimensions may reach
// kMaxDecodeHeadDim and the state is a required in/out buffer.
#include "glr/launch/decode_params.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "glr/launch/cuda_status.hpp"
#include "glr/launch/errors.hpp"

namespace kcv::glr::gpu {
namespace {

std::string str(std::int64_t x) { return std::to_string(x); }

Status check_dim(const char* field, std::int64_t dim) {
  if (dim >= 1 && dim <= kMaxDecodeHeadDim) return {};
  return detail::invalid_argument(std::string(field) + ": unsupported head dim " + str(dim) +
                                  " (the decode kernel takes 1.." + str(kMaxDecodeHeadDim) + ")");
}

Status check_pointer(const char* field, const void* ptr, bool needed) {
  if (needed && ptr == nullptr)
    return detail::invalid_argument(std::string(field) + " is required");
  if (!needed && ptr != nullptr)
    return detail::invalid_argument(std::string(field) + " must be null for this member");
  return {};
}

Status check_dims(const Dims& d, const Config& cfg) {
  if (d.batch < 1) return detail::invalid_argument("batch must be >= 1, got " + str(d.batch));
  if (d.seq_len < 1) return detail::invalid_argument("seq_len must be >= 1, got " + str(d.seq_len));
  if (d.qk_heads < 1 || d.v_heads < d.qk_heads || d.v_heads % d.qk_heads != 0)
    return detail::invalid_argument(
        "v_heads must be a positive multiple of qk_heads (GVA), got "
        "v_heads=" +
        str(d.v_heads) + ", qk_heads=" + str(d.qk_heads));
  KCV_GLR_TRY(check_dim("key_dim", d.key_dim));
  KCV_GLR_TRY(check_dim("value_dim", d.value_dim));
  if (d.num_seqs < 0) return detail::invalid_argument("num_seqs must be >= 0");
  if (d.num_seqs > 0 && d.batch != 1)
    return detail::invalid_argument("batch must be 1 with cu_seqlens, got " + str(d.batch));
  if (!std::isfinite(cfg.scale)) return detail::invalid_argument("scale must be finite");
  const std::int64_t blocks = (d.num_seqs > 0 ? d.num_seqs : d.batch) * d.v_heads;
  if (blocks > 0x7fffffff)
    return detail::invalid_argument("too many sequences × heads for one call: " + str(blocks));
  return {};
}

}  // namespace

Status validate_decode(const Dims& dims, const Config& cfg, const DecodeInputs& in, const float* o,
                       const float* state) {
  KCV_GLR_TRY(check_dims(dims, cfg));
  const MemberTraits t = traits(cfg.member);
  KCV_GLR_TRY(check_pointer("q", in.q, true));
  KCV_GLR_TRY(check_pointer("k", in.k, true));
  KCV_GLR_TRY(check_pointer("v", in.v, true));
  KCV_GLR_TRY(check_pointer("g", in.g, t.gate != GateKind::kNone));
  KCV_GLR_TRY(check_pointer("beta", in.beta, t.delta_rule));
  KCV_GLR_TRY(check_pointer("cu_seqlens", in.cu_seqlens, dims.num_seqs > 0));
  KCV_GLR_TRY(check_pointer("o", o, true));
  return check_pointer("state", state, true);
}

namespace detail {

Expected<DecodeParams> decode_params(const Dims& dims, const Config& cfg, const DecodeInputs& in,
                                     float* o, float* state) {
  if (Status st = validate_decode(dims, cfg, in, o, state); !st) return st.error();
  const MemberTraits t = traits(cfg.member);
  DecodeParams p;
  p.q = in.q;
  p.k = in.k;
  p.v = in.v;
  p.g = in.g;
  p.beta = in.beta;
  p.cu_seqlens = in.cu_seqlens;
  p.o = o;
  p.state = state;
  p.seq_len = dims.seq_len;
  p.sequences = dims.num_seqs > 0 ? dims.num_seqs : dims.batch;
  p.qk_heads = static_cast<int>(dims.qk_heads);
  p.v_heads = static_cast<int>(dims.v_heads);
  p.key_dim = static_cast<int>(dims.key_dim);
  p.value_dim = static_cast<int>(dims.value_dim);
  p.gate_width = static_cast<int>(gate_width(t.gate, dims.key_dim));
  p.delta_rule = t.delta_rule;
  p.v_first = cfg.layout == StateLayout::kVK;
  p.scale = cfg.scale;
  return p;
}

}  // namespace detail
}  // namespace kcv::glr::gpu
