// File: glr/launch/workspace.cpp
// The workspace layout of workspace.hpp.
#include "glr/launch/workspace.hpp"

#include "glr/kernels/config.hpp"

namespace kcv::glr::gpu::detail {
namespace {

constexpr std::size_t kAlign = 256;

class Carver {
 public:
  explicit Carver(std::byte* base) : base_(base) {}

  template <typename T>
  void take(T*& ptr, std::int64_t count) {
    ptr = base_ != nullptr ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
    offset_ += (bytes + kAlign - 1) / kAlign * kAlign;
  }
  std::size_t bytes() const { return offset_; }

 private:
  std::byte* base_;
  std::size_t offset_ = 0;
};

}  // namespace

Extents extents(const Dims& dims, const Config& cfg) {
  const MemberTraits tr = traits(cfg.member);
  Extents e;
  e.tokens = dims.batch * dims.seq_len;
  const bool varlen = dims.num_seqs > 0;
  e.sequences = varlen ? dims.num_seqs : dims.batch;
  // Σ_n ⌈T_n / C⌉ ≤ ⌊(Σ_n T_n + (C − 1)·N) / C⌋, and the index stage keeps Σ_n T_n ≤ tokens.
  e.chunk_bound = varlen ? (e.tokens + (kChunk - 1) * e.sequences) / kChunk
                         : dims.batch * ((dims.seq_len + kChunk - 1) / kChunk);
  e.gate_width = static_cast<int>(gate_width(tr.gate, dims.key_dim));
  e.delta_rule = tr.delta_rule;
  return e;
}

Params make_params(const Dims& d, const Config& cfg, const Extents& e, const Inputs& in) {
  Params p;
  p.tokens = e.tokens;
  p.sequences = e.sequences;
  p.chunk_bound = e.chunk_bound;
  p.qk_heads = static_cast<int>(d.qk_heads);
  p.v_heads = static_cast<int>(d.v_heads);
  p.group = static_cast<int>(d.v_heads / d.qk_heads);
  p.key_dim = static_cast<int>(d.key_dim);
  p.value_dim = static_cast<int>(d.value_dim);
  p.gate_width = e.gate_width;
  p.scale = cfg.scale;
  p.state_kv = cfg.layout == StateLayout::kKV;
  p.q = static_cast<const bf16*>(in.q);
  p.k = static_cast<const bf16*>(in.k);
  p.v = static_cast<const bf16*>(in.v);
  p.h0 = in.h0;
  return p;
}

std::size_t carve_workspace(const Dims& dims, const Extents& ext, bool backward, std::byte* base,
                            Params& p) {
  Carver c(base);
  const std::int64_t th = ext.tokens * dims.v_heads;  // token-head rows
  const std::int64_t states = ext.chunk_bound * dims.v_heads * dims.key_dim * dims.value_dim;
  const std::int64_t kd = dims.key_dim;
  const std::int64_t vd = dims.value_dim;
  const bool delta = ext.delta_rule;
  c.take(p.bounds, ext.sequences + 1);
  c.take(p.chunk_offsets, ext.sequences + 1);
  c.take(p.gate_cum, th * ext.gate_width);
  c.take(p.beta, delta ? th : 0);
  c.take(p.aqk, th * kChunk);
  c.take(p.tmat, delta ? th * kChunk : 0);
  c.take(p.wmat, delta ? th * kd : 0);
  c.take(p.umat, delta ? th * vd : 0);
  c.take(p.states, states);
  c.take(p.delta, th * vd);
  if (!backward) return c.bytes();
  c.take(p.d_states, states);
  c.take(p.d_delta, th * vd);
  c.take(p.dq_raw, th * kd);
  c.take(p.dk_raw, th * kd);
  c.take(p.dw, delta ? th * kd : 0);
  c.take(p.hd, ext.chunk_bound * dims.v_heads * kd);
  c.take(p.da, th * kChunk);
  c.take(p.dtv, delta ? th * kChunk : 0);
  c.take(p.dbeta_v, delta ? th : 0);
  c.take(p.dx, delta ? th * kd : 0);
  c.take(p.dl, delta ? th * kChunk : 0);
  c.take(p.dq_head, th * kd);
  c.take(p.dk_head, th * kd);
  c.take(p.dgate, th * ext.gate_width);
  c.take(p.dbeta, delta ? th : 0);
  return c.bytes();
}

}  // namespace kcv::glr::gpu::detail
