// File: glr/dev/chunked_mma_plan.cpp
// Host side of the tensor-core forward and backward (chunked_mma_forward.hpp,
// chunked_mma_backward.hpp): argument checks, the workspace layouts (one function both sizes a
// layout and hands out its pointers, so the two cannot disagree) and the value-tile choice.
// Shared by the CUDA launchers and the host emulation.
#include <cstdint>
#include <initializer_list>
#include <string>

#include "glr/dev/chunked_mma_backward.hpp"

namespace kcv::glr::dev {
namespace {

Error bad(const std::string& field, const std::string& message) {
  return make_error(ErrorCode::kInvalidArgument, message, field);
}

Status check_dims(const gpu::Dims& d) {
  if (d.key_dim != kMmaDim || d.value_dim != kMmaDim)
    return bad("key_dim", "the tensor-core forward takes K = V = 128 only");
  if (d.batch < 1 || d.seq_len < 1) return bad("seq_len", "batch and seq_len must be positive");
  if (d.qk_heads < 1 || d.v_heads < d.qk_heads || d.v_heads % d.qk_heads != 0)
    return bad("v_heads", "v_heads must be a positive multiple of qk_heads");
  if (d.num_seqs > 0 && d.batch != 1) return bad("batch", "batch must be 1 with cu_seqlens");
  return {};
}

std::int64_t sequences(const gpu::Dims& d) { return d.num_seqs > 0 ? d.num_seqs : d.batch; }

// Consecutive pieces of a workspace, each starting 256-byte aligned: piece(bytes) is the next
// one's address (null while only sizing, base null); `at` is the bytes taken so far.
struct Carver {
  std::byte* base = nullptr;
  std::size_t at = 0;
  std::byte* operator()(std::size_t bytes) {
    std::byte* ptr = base != nullptr ? base + at : nullptr;
    at += (bytes + 255) / 256 * 256;
    return ptr;
  }
};

// Bytes of the workspace for p's sizes; with base non-null also sets p's workspace pointers.
std::size_t carve(Member member, MmaForwardParams& p, std::byte* base) {
  Carver piece{base};
  const auto blocks = static_cast<std::size_t>(p.slots * p.v_heads);
  if (traits(member).delta_rule) {
    p.w = reinterpret_cast<bf16*>(piece(blocks * kMmaChunk * kMmaDim * sizeof(bf16)));
    p.u = reinterpret_cast<bf16*>(piece(blocks * kMmaChunk * kMmaDim * sizeof(bf16)));
  }
  if (traits(member).gate == GateKind::kChannel) {
    p.qbar = reinterpret_cast<bf16*>(piece(blocks * kMmaChunk * kMmaDim * sizeof(bf16)));
    p.kbar = reinterpret_cast<bf16*>(piece(blocks * kMmaChunk * kMmaDim * sizeof(bf16)));
  }
  p.a = reinterpret_cast<bf16*>(piece(blocks * kMmaChunk * kMmaChunk * sizeof(bf16)));
  p.factors = reinterpret_cast<float*>(piece(blocks * 2 * kMmaChunk * sizeof(float)));
  return piece.at;
}

// What a training step's forward keeps for its backward: the forward's pieces, the states
// entering every chunk (and at every sequence end) and, with the delta rule, T and Δ (and under
// a per-channel gate P's diagonal blocks, which wy_channel_kernel reads rather than sums again). Δ
// takes U's place: the state pass reads a chunk's U into shared memory before it writes that
// chunk's Δ, and the backward reads Δ, never U. The backward's recompute writes the same pieces at
// the same offsets, so this part comes first in the backward's one-buffer workspace. With base
// non-null also sets p's pointers.
std::size_t carve_kept(Member member, MmaForwardParams& p, std::byte* base) {
  Carver piece{base, carve(member, p, base)};
  const auto state_bytes = static_cast<std::size_t>(kMmaDim * kMmaDim) * sizeof(bf16);
  const auto heads = static_cast<std::size_t>(p.v_heads);
  p.states = reinterpret_cast<bf16*>(
      piece(static_cast<std::size_t>(p.slots + p.sequences) * heads * state_bytes));
  if (traits(member).delta_rule) {
    const auto blocks = static_cast<std::size_t>(p.slots) * heads;
    p.t_inv = reinterpret_cast<bf16*>(piece(blocks * kMmaChunk * kMmaChunk * sizeof(bf16)));
    p.delta = p.u;
    if (traits(member).gate == GateKind::kChannel)
      p.gram_diag = reinterpret_cast<float*>(piece(blocks * kMmaChunk * 16 * sizeof(float)));
  }
  return piece.at;
}

// The backward's own scratch: dh, with the delta rule the scan's dΔ, and (GVA or the delta rule)
// the per-head fp32 dq, dk. With base non-null also sets bp's pointers.
std::size_t carve_scratch(Member member, MmaBackwardParams& bp, std::byte* base) {
  const MmaForwardParams& p = bp.fwd;
  Carver piece{base};
  const auto state_bytes = static_cast<std::size_t>(kMmaDim * kMmaDim) * sizeof(bf16);
  const auto heads = static_cast<std::size_t>(p.v_heads);
  bp.dh = reinterpret_cast<bf16*>(piece(static_cast<std::size_t>(p.slots) * heads * state_bytes));
  const bool delta = traits(member).delta_rule;
  if (delta) {
    const auto blocks = static_cast<std::size_t>(p.slots) * heads;
    bp.dd = reinterpret_cast<bf16*>(piece(blocks * kMmaChunk * kMmaDim * sizeof(bf16)));
  }
  const auto part = static_cast<std::size_t>(p.tokens) * heads * kMmaDim * sizeof(float);
  if (p.group > 1) bp.dq_part = reinterpret_cast<float*>(piece(part));
  if (p.group > 1 || delta) bp.dk_part = reinterpret_cast<float*>(piece(part));
  return piece.at;
}

MmaForwardParams sizes(const gpu::Dims& d) {
  MmaForwardParams p;
  p.tokens = d.batch * d.seq_len;
  p.sequences = sequences(d);
  p.seq_len = d.seq_len;
  p.slots = p.tokens / kMmaChunk + p.sequences;
  p.qk_heads = static_cast<int>(d.qk_heads);
  p.v_heads = static_cast<int>(d.v_heads);
  p.group = static_cast<int>(d.v_heads / d.qk_heads);
  return p;
}

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

}  // namespace

Expected<std::size_t> mma_forward_workspace_bytes(Member member, const gpu::Dims& dims) {
  if (Status st = check_dims(dims); !st) return st.error();
  MmaForwardParams p = sizes(dims);
  return carve(member, p, nullptr);
}

Expected<MmaForwardParams> mma_forward_params(Member member, const gpu::Dims& dims, float scale,
                                              StateLayout layout, const MmaForwardTensors& t,
                                              void* workspace, std::size_t bytes) {
  if (Status st = check_dims(dims); !st) return st.error();
  const MemberTraits tr = traits(member);
  if (t.q == nullptr || t.k == nullptr || t.v == nullptr || t.o == nullptr)
    return bad("q", "q, k, v and o are required");
  if ((tr.gate != GateKind::kNone) != (t.g != nullptr))
    return bad("g", "g is required exactly for members with a gate");
  if (tr.delta_rule != (t.beta != nullptr))
    return bad("beta", "beta is required exactly for members with the delta rule");
  if ((dims.num_seqs > 0) != (t.cu_seqlens != nullptr))
    return bad("cu_seqlens", "cu_seqlens must be given exactly when num_seqs > 0");
  for (const void* ptr : std::initializer_list<const void*>{t.q, t.k, t.v, t.o, workspace})
    if (!aligned16(ptr)) return bad("q", "q, k, v, o and the workspace must be 16-byte aligned");
  if (tr.gate == GateKind::kChannel && !aligned16(t.g))
    return bad("g", "a per-channel gate must be 16-byte aligned");
  MmaForwardParams p = sizes(dims);
  const std::size_t need = carve(member, p, nullptr);
  if (workspace == nullptr || bytes < need)
    return bad("workspace", "workspace too small: " + std::to_string(bytes) + " bytes, need " +
                                std::to_string(need));
  carve(member, p, static_cast<std::byte*>(workspace));
  p.cu_seqlens = t.cu_seqlens;
  p.scale = scale;
  p.state_kv = layout == StateLayout::kKV;
  p.q = static_cast<const bf16*>(t.q);
  p.k = static_cast<const bf16*>(t.k);
  p.v = static_cast<const bf16*>(t.v);
  p.g = t.g;
  p.beta = static_cast<const bf16*>(t.beta);
  p.h0 = t.h0;
  p.o = static_cast<bf16*>(t.o);
  p.final_state = t.final_state;
  return p;
}

Expected<std::size_t> mma_kept_workspace_bytes(Member member, const gpu::Dims& dims) {
  if (Status st = check_dims(dims); !st) return st.error();
  MmaForwardParams p = sizes(dims);
  return carve_kept(member, p, nullptr);
}

Expected<std::size_t> mma_backward_scratch_bytes(Member member, const gpu::Dims& dims) {
  if (Status st = check_dims(dims); !st) return st.error();
  MmaBackwardParams bp;
  bp.fwd = sizes(dims);
  return carve_scratch(member, bp, nullptr);
}

Expected<std::size_t> mma_backward_workspace_bytes(Member member, const gpu::Dims& dims) {
  Expected<std::size_t> kept = mma_kept_workspace_bytes(member, dims);
  if (!kept) return kept.error();
  Expected<std::size_t> scratch = mma_backward_scratch_bytes(member, dims);
  if (!scratch) return scratch.error();
  return *kept + *scratch;
}

Expected<MmaForwardParams> mma_kept_forward_params(Member member, const gpu::Dims& dims,
                                                   float scale, StateLayout layout,
                                                   const MmaForwardTensors& t, void* kept,
                                                   std::size_t bytes) {
  if (t.final_state != nullptr && !aligned16(t.final_state))
    return bad("final_state", "the final state must be 16-byte aligned");
  Expected<MmaForwardParams> p = mma_forward_params(member, dims, scale, layout, t, kept, bytes);
  if (!p) return p.error();
  const std::size_t need = carve_kept(member, *p, nullptr);
  if (bytes < need)
    return bad("workspace", "kept workspace too small: " + std::to_string(bytes) + " bytes, need " +
                                std::to_string(need));
  carve_kept(member, *p, static_cast<std::byte*>(kept));
  return p;
}

Expected<MmaBackwardParams> mma_backward_params(Member member, const gpu::Dims& dims, float scale,
                                                StateLayout layout, const MmaBackwardTensors& t,
                                                const MmaBackwardWorkspace& ws) {
  if (t.d_o == nullptr || t.dq == nullptr || t.dk == nullptr || t.dv == nullptr)
    return bad("d_o", "d_o, dq, dk and dv are required");
  if ((traits(member).gate != GateKind::kNone) != (t.dg != nullptr))
    return bad("dg", "dg is required exactly for members with a gate");
  if (traits(member).delta_rule != (t.dbeta != nullptr))
    return bad("dbeta", "dbeta is required exactly for members with the delta rule");
  for (const void* ptr : std::initializer_list<const void*>{t.d_o, t.dq, t.dk, t.dv})
    if (!aligned16(ptr)) return bad("d_o", "d_o, dq, dk and dv must be 16-byte aligned");
  if (traits(member).gate == GateKind::kChannel && !aligned16(t.dg))
    return bad("dg", "a per-channel gate's dg must be 16-byte aligned");
  MmaForwardTensors ft = t.fwd;
  ft.o = t.dv;  // the recompute writes no o; a present, aligned pointer passes the forward's checks
  ft.final_state = nullptr;
  Expected<MmaForwardParams> fp =
      mma_kept_forward_params(member, dims, scale, layout, ft, ws.kept, ws.kept_bytes);
  if (!fp) return fp.error();
  MmaBackwardParams bp;
  bp.fwd = *fp;
  const std::size_t need = carve_scratch(member, bp, nullptr);
  if (ws.scratch == nullptr || !aligned16(ws.scratch) || ws.scratch_bytes < need)
    return bad("workspace",
               "backward scratch too small or unaligned: " + std::to_string(ws.scratch_bytes) +
                   " bytes, need " + std::to_string(need));
  carve_scratch(member, bp, static_cast<std::byte*>(ws.scratch));
  bp.fwd.o = nullptr;
  bp.fwd.final_state = nullptr;
  bp.d_o = static_cast<const bf16*>(t.d_o);
  bp.dht = t.dht;
  bp.dq = static_cast<bf16*>(t.dq);
  bp.dk = static_cast<bf16*>(t.dk);
  bp.dv = static_cast<bf16*>(t.dv);
  bp.dg = t.dg;
  bp.dbeta = static_cast<bf16*>(t.dbeta);
  bp.dh0 = t.dh0;
  bp.recompute = ws.recompute;
  return bp;
}

Expected<MmaBackwardParams> mma_backward_params(Member member, const gpu::Dims& dims, float scale,
                                                StateLayout layout, const MmaBackwardTensors& t,
                                                void* workspace, std::size_t bytes) {
  Expected<std::size_t> kept = mma_kept_workspace_bytes(member, dims);
  if (!kept) return kept.error();
  if (workspace == nullptr || bytes < *kept)
    return bad("workspace", "workspace too small: " + std::to_string(bytes) + " bytes, need " +
                                std::to_string(*kept) + " and the scratch");
  MmaBackwardWorkspace ws;
  ws.kept = workspace;
  ws.kept_bytes = *kept;
  ws.scratch = static_cast<std::byte*>(workspace) + *kept;
  ws.scratch_bytes = bytes - *kept;
  return mma_backward_params(member, dims, scale, layout, t, ws);
}

int default_value_tile(const MmaForwardParams& p, int multiprocessors) {
  const std::int64_t ctas = p.sequences * p.v_heads * (kMmaDim / 32);
  return ctas <= multiprocessors ? 32 : 64;
}

}  // namespace kcv::glr::dev
