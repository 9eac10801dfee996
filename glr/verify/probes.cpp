// File: glr/verify/probes.cpp
// GlrProbes: the GLR gate plans and their shrink passes. CMP-01 runs a case list (kFull: every
// T of {1, 63, 64, 65, 1000, 8192} with K = V in {64, 100, 128}, T = 32768 at 128 (GVA), GVA,
// K != V with the transposed state layout, weak and strong decay with bf16 gates, skewed varlen
// with int32 and int64 cu_seqlens; kSmall: the same code paths at T <= 130 and head dims that
// need padding, for the CPU emulation). ORD-02 repeats forward + backward of one varlen GVA case
// at shifted addresses. EXC-01 puts a NaN into v: one element inside a sequence's second chunk,
// a whole token row at the first token, one element at the last token (a partial tail chunk).
// Shrinking, simplest first: fewer sequences, shorter sequences, fewer heads, smaller head dims,
// plainer tags, then the shared same-shape passes; injections follow their token.
// A decode op (glr.<member>.decode) has its own lists (decode_cases): one token and a few tokens
// per sequence, with and without an initial state, batches and varlen, GVA, bf16, fp16 and fp32
// q, k, v, head dims up to 256; its ORD-02 and EXC-01 cases are varlen GVA decode calls.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "glr/verify/internal.hpp"

namespace kcv::glr {
namespace {

Case make(Member m, std::vector<std::int64_t> lengths, Packing packing, std::int64_t h,
          std::int64_t hv, std::int64_t k, std::int64_t v, OpKind op = OpKind::kChunk) {
  Case c;
  c.member = m;
  c.op = op;
  c.lengths = std::move(lengths);
  c.packing = packing;
  c.qk_heads = h;
  c.v_heads = hv;
  c.key_dim = k;
  c.value_dim = v;
  return c;
}

/// What a member does not have cannot vary: no gate means no decay or gate dtype.
Case normalised(Case c) {
  if (traits(c.member).gate == GateKind::kNone) {
    c.decay = Decay::kModerate;
    c.gate_bf16 = false;
  }
  if (!traits(c.member).delta_rule) c.beta_f32 = false;
  return c;
}

std::string label_of(const Case& c) {
  std::string out;
  if (c.lengths.size() > 1 && c.packing != Packing::kBatch) {
    out = fmt::format("T={}", fmt::join(c.lengths, "+"));
  } else {
    out = fmt::format("T={}", c.lengths.front());
    if (c.lengths.size() > 1) out += fmt::format("x{}", c.lengths.size());
  }
  out += fmt::format(" H={}/{}", c.qk_heads, c.v_heads);
  out += c.key_dim == c.value_dim ? fmt::format(" K=V={}", c.key_dim)
                                  : fmt::format(" K={} V={}", c.key_dim, c.value_dim);
  out += fmt::format(" {}", name(c.packing));
  if (traits(c.member).gate != GateKind::kNone) {
    out += fmt::format(" {}", name(c.decay));
    if (c.gate_bf16) out += " g:bf16";
  }
  if (c.beta_f32) out += " beta:f32";
  if (c.layout == StateLayout::kVK) out += " vk";
  if (c.io != DType::kBF16) out += fmt::format(" {}", dtype_name(c.io));
  if (!c.initial_state) out += " no-h0";
  return out;
}

/// A decode case: q, k, v in `io`, with or without an initial state.
Case decode(Member m, std::vector<std::int64_t> lengths, Packing packing, std::int64_t h,
            std::int64_t hv, std::int64_t k, std::int64_t v, DType io, bool h0) {
  Case c = make(m, std::move(lengths), packing, h, hv, k, v, OpKind::kDecode);
  c.io = io;
  c.initial_state = h0;
  return c;
}

// The decode plans of CMP-01: one token and a few tokens per call, with and without an initial
// state, fixed-length batches and varlen (int64: the decode kernel takes no other), GVA, both
// layouts, bf16, fp16 and fp32 q, k, v, head dims up to 256, every decay.
std::vector<Case> decode_cases(Member m, CaseList list) {
  std::vector<Case> out;
  const auto add = [&](Case c) { out.push_back(normalised(std::move(c))); };
  constexpr DType kB = DType::kBF16, kH = DType::kF16, kF = DType::kF32;
  if (list == CaseList::kSmall) {
    add(decode(m, {1}, Packing::kVarlenI64, 2, 2, 32, 32, kB, true));
    add(decode(m, {1, 1, 1, 1}, Packing::kBatch, 1, 2, 16, 16, kB, false));
    Case c = decode(m, {4, 4}, Packing::kBatch, 1, 1, 24, 40, kB, true);
    c.layout = StateLayout::kVK;
    add(c);
    c = decode(m, {1, 3, 2}, Packing::kVarlenI64, 1, 4, 16, 16, kH, true);
    c.decay = Decay::kStrong;
    c.gate_bf16 = true;
    c.beta_f32 = true;
    add(c);
    add(decode(m, {2, 1}, Packing::kVarlenI64, 2, 2, 256, 256, kF, true));
    add(decode(m, {1, 1}, Packing::kBatch, 1, 1, 256, 256, kH, false));
    c = decode(m, {3}, Packing::kVarlenI64, 1, 1, 40, 24, kB, false);
    c.decay = Decay::kWeak;
    add(c);
    return out;
  }
  for (std::int64_t d : {64, 100, 128, 256}) {
    add(decode(m, {1}, Packing::kVarlenI64, 2, 2, d, d, kB, true));
    add(decode(m, {1, 1, 1, 1}, Packing::kBatch, 2, 4, d, d, kB, true));
    add(decode(m, {4, 4}, Packing::kBatch, 2, 2, d, d, kB, true));
    add(decode(m, {1, 4, 2, 7}, Packing::kVarlenI64, 2, 4, d, d, kB, false));
  }
  for (DType io : {kH, kF}) {
    add(decode(m, {1, 1, 1, 1}, Packing::kBatch, 2, 4, 256, 256, io, true));
    add(decode(m, {1, 4, 2, 7}, Packing::kVarlenI64, 2, 4, 128, 128, io, false));
    Case c = decode(m, {3, 1, 5}, Packing::kVarlenI64, 1, 2, 256, 64, io, true);
    c.layout = StateLayout::kVK;
    add(c);
  }
  Case c = decode(m, {2, 3}, Packing::kVarlenI64, 2, 2, 128, 128, kB, true);
  c.decay = Decay::kStrong;
  c.gate_bf16 = true;
  c.beta_f32 = true;
  add(c);
  c = decode(m, {5}, Packing::kVarlenI64, 1, 1, 100, 100, kH, true);
  c.decay = Decay::kWeak;
  add(c);
  add(decode(m, {64, 64}, Packing::kBatch, 2, 2, 128, 128, kB, true));
  return out;
}

std::vector<Case> cmp_cases(Member m, OpKind op, CaseList list) {
  if (op == OpKind::kDecode) return decode_cases(m, list);
  std::vector<Case> out;
  const auto add = [&](Case c) { out.push_back(normalised(std::move(c))); };
  if (list == CaseList::kSmall) {
    add(make(m, {64}, Packing::kVarlenI64, 1, 1, 32, 32));
    add(make(m, {1, 1}, Packing::kBatch, 2, 2, 16, 16));
    add(make(m, {63}, Packing::kVarlenI64, 1, 1, 24, 40));
    add(make(m, {64, 64}, Packing::kBatch, 1, 2, 32, 32));
    Case c = make(m, {65}, Packing::kVarlenI64, 1, 1, 16, 16);
    c.decay = Decay::kStrong;
    c.gate_bf16 = true;
    c.beta_f32 = true;
    c.layout = StateLayout::kVK;
    add(c);
    c = make(m, {1, 70, 5}, Packing::kVarlenI32, 1, 2, 24, 40);
    c.layout = StateLayout::kVK;
    add(c);
    c = make(m, {130}, Packing::kVarlenI64, 1, 1, 32, 32);
    c.decay = Decay::kWeak;
    add(c);
    return out;
  }
  for (std::int64_t d : {64, 100, 128}) {
    add(make(m, {64}, Packing::kVarlenI64, 2, 2, d, d));
    add(make(m, {1, 1}, Packing::kBatch, 2, 2, d, d));
    add(make(m, {63}, Packing::kVarlenI64, 2, 2, d, d));
    add(make(m, {64, 64}, Packing::kBatch, 2, 2, d, d));
    add(make(m, {65}, Packing::kVarlenI64, 2, 2, d, d));
    add(make(m, {1000}, Packing::kVarlenI64, 2, 2, d, d));
  }
  add(make(m, {65}, Packing::kVarlenI64, 2, 4, 64, 64));
  add(make(m, {1000}, Packing::kVarlenI32, 1, 4, 100, 100));
  Case c = make(m, {1000, 1000}, Packing::kBatch, 1, 2, 128, 100);
  c.layout = StateLayout::kVK;
  add(c);
  c = make(m, {63}, Packing::kVarlenI64, 1, 1, 100, 100);
  c.decay = Decay::kWeak;
  add(c);
  c = make(m, {1000}, Packing::kVarlenI64, 2, 2, 100, 100);
  c.decay = Decay::kStrong;
  c.gate_bf16 = true;
  c.beta_f32 = true;
  add(c);
  add(make(m, {1, 150, 7, 64, 3, 1000, 65, 257}, Packing::kVarlenI32, 2, 4, 128, 128));
  c = make(m, {300, 5, 129, 64, 1}, Packing::kVarlenI64, 1, 2, 64, 128);
  c.decay = Decay::kStrong;
  c.gate_bf16 = true;
  c.layout = StateLayout::kVK;
  add(c);
  for (std::int64_t d : {64, 100, 128}) add(make(m, {8192}, Packing::kVarlenI64, 2, 2, d, d));
  add(make(m, {32768}, Packing::kVarlenI64, 1, 2, 128, 128));
  return out;
}

Case ord_case(Member m, OpKind op, CaseList list) {
  if (op == OpKind::kDecode) {
    return list == CaseList::kSmall ? normalised(decode(m, {1, 3, 2, 4}, Packing::kVarlenI64, 1, 4,
                                                        32, 32, DType::kBF16, true))
                                    : normalised(decode(m, {1, 4, 2, 7, 1}, Packing::kVarlenI64, 2,
                                                        4, 128, 128, DType::kBF16, true));
  }
  if (list == CaseList::kSmall)
    return normalised(make(m, {1, 70, 5}, Packing::kVarlenI64, 1, 2, 24, 40));
  return normalised(make(m, {1, 150, 7, 64, 3, 1000, 65}, Packing::kVarlenI64, 2, 4, 100, 128));
}

Case exc_case(Member m, OpKind op, CaseList list) {
  if (op == OpKind::kDecode) {
    return list == CaseList::kSmall ? normalised(decode(m, {3, 5, 2}, Packing::kVarlenI64, 1, 2, 16,
                                                        16, DType::kBF16, true))
                                    : normalised(decode(m, {3, 5, 2}, Packing::kVarlenI64, 2, 4, 64,
                                                        64, DType::kBF16, true));
  }
  if (list == CaseList::kSmall)
    return normalised(make(m, {20, 70, 9}, Packing::kVarlenI64, 1, 2, 16, 16));
  return normalised(make(m, {100, 200, 90}, Packing::kVarlenI64, 2, 4, 64, 64));
}

/// Index of v[t, hv, e].
std::int64_t v_index(const Case& c, std::int64_t t, std::int64_t hv, std::int64_t e) {
  return (t * c.v_heads + hv) * c.value_dim + e;
}

std::vector<Probe> exc_probes(Member m, OpKind op, Grade grade, CaseList list) {
  Case c = exc_case(m, op, list);
  c.grade = grade;
  const Shape s = c.shape();
  const int v = input_index(m, "v");
  std::vector<Probe> out;
  // One element inside the second chunk of sequence 1 (not chunk-aligned; a decode case's
  // sequence 1 is shorter: one element of its second token).
  const std::int64_t t1 = s.seq_begin(1) + std::min<std::int64_t>(70, c.lengths[1] - 4);
  Probe p = probe_of(c, GateId::kExc01,
                     fmt::format("{}; NaN in v[token {} of sequence 1, head 1, column {}]",
                                 label_of(c), t1 - s.seq_begin(1), c.value_dim / 3));
  p.injections.push_back({v, v_index(c, t1, 1, c.value_dim / 3), Special::kNaN});
  out.push_back(p);
  // A whole token row: the first token of sequence 0, head 0.
  p = probe_of(c, GateId::kExc01,
               fmt::format("{}; NaN in every column of v[token 0, head 0]", label_of(c)));
  for (std::int64_t e = 0; e < c.value_dim; ++e)
    p.injections.push_back({v, v_index(c, 0, 0, e), Special::kNaN});
  out.push_back(p);
  // The last token of the last sequence (its partial tail chunk), the last value head.
  p = probe_of(c, GateId::kExc01,
               fmt::format("{}; NaN in v[last token, head {}, column {}]", label_of(c),
                           c.v_heads - 1, c.value_dim - 1));
  p.injections.push_back(
      {v, v_index(c, s.tokens - 1, c.v_heads - 1, c.value_dim - 1), Special::kNaN});
  out.push_back(p);
  return out;
}

std::vector<std::int64_t> smaller(std::int64_t v, std::initializer_list<std::int64_t> picks) {
  std::set<std::int64_t> out;
  for (std::int64_t c : picks)
    if (c >= 1 && c < v) out.insert(c);
  for (std::int64_t c : {v / 2, v - 1})
    if (c >= 1 && c < v) out.insert(c);
  return {out.begin(), out.end()};
}

/// The injection moved into case `to` (sequences kept: `kept[n]` is the old index of new
/// sequence n), or nullopt when its element no longer exists. Per-token inputs only.
std::optional<Injection> remap(const Case& from, const Case& to,
                               const std::vector<std::size_t>& kept, const Injection& inj) {
  const TensorSig& t = signature(from.member, from.op).inputs[static_cast<std::size_t>(inj.input)];
  if (t.dims.empty() || t.dims.front() != "T" || t.dims.size() != 3) return std::nullopt;
  const auto size = [](const Case& c, const std::string& d) {
    if (d == "H") return c.qk_heads;
    if (d == "HV") return c.v_heads;
    return d == "K" ? c.key_dim : c.value_dim;
  };
  const std::int64_t heads = size(from, t.dims[1]), width = size(from, t.dims[2]);
  const std::int64_t tok = inj.index / (heads * width);
  const std::int64_t head = inj.index / width % heads;
  const std::int64_t col = inj.index % width;
  const Shape a = from.shape();
  const Shape b = to.shape();
  for (std::size_t n = 0; n < kept.size(); ++n) {
    const auto o = static_cast<std::int64_t>(kept[n]);
    if (tok < a.seq_begin(o) || tok >= a.seq_end(o)) continue;
    const std::int64_t pos = tok - a.seq_begin(o);
    const auto nn = static_cast<std::int64_t>(n);
    if (pos >= b.seq_end(nn) - b.seq_begin(nn)) return std::nullopt;
    const std::int64_t heads2 = size(to, t.dims[1]), width2 = size(to, t.dims[2]);
    if (head >= heads2 || col >= width2) return std::nullopt;
    return Injection{inj.input, ((b.seq_begin(nn) + pos) * heads2 + head) * width2 + col,
                     inj.value};
  }
  return std::nullopt;
}

}  // namespace

GlrProbes::GlrProbes(Member member, Grade grade, const GlrOptions& options)
    : GlrProbes(member, OpKind::kChunk, grade, options) {}

GlrProbes::GlrProbes(Member member, OpKind op, Grade grade, const GlrOptions& options)
    : member_(member),
      op_(op),
      grade_(op == OpKind::kDecode ? Grade::kFp32 : grade),
      options_(options) {}

const OpSignature& GlrProbes::signature() const { return glr::signature(member_, op_); }

std::string GlrProbes::not_applicable_reason(GateId id, const Contract& contract) const {
  switch (id) {
    case GateId::kCmp01:
    case GateId::kExc01:
    case GateId::kRes02:
      return {};
    case GateId::kOrd02:
      return contract.deterministic ? std::string() : "the contract does not declare determinism";
    default:
      return "not planned for the GLR ops (docs/glr/verification.md: CMP-01, ORD-02, EXC-01, "
             "RES-02)";
  }
}

std::vector<Probe> GlrProbes::plan(GateId id, const Contract&, uint64_t seed) const {
  std::vector<Probe> probes;
  if (id == GateId::kCmp01) {
    std::vector<Case> seen;
    for (Case c : cmp_cases(member_, op_, options_.cases)) {
      c.grade = grade_;
      if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
      seen.push_back(c);
      probes.push_back(probe_of(c, id, label_of(c)));
    }
  } else if (id == GateId::kOrd02) {
    Case c = ord_case(member_, op_, options_.cases);
    c.grade = grade_;
    Probe p = probe_of(c, id, fmt::format("{} x{} shifted", label_of(c), options_.runs));
    p.repetitions = std::max(2, options_.runs);
    p.shift_addresses = true;
    probes.push_back(p);
  } else if (id == GateId::kExc01) {
    probes = exc_probes(member_, op_, grade_, options_.cases);
  }
  for (std::size_t k = 0; k < probes.size(); ++k)
    probes[k].seed = mix_seed(seed, static_cast<uint64_t>(id) * 1000 + k);
  return probes;
}

ProbeScope GlrProbes::scope_of(const Probe& probe) const {
  if (probe.repetitions > 1 || probe.shift_addresses) return ProbeScope::kRepeat;
  if (!probe.injections.empty()) return ProbeScope::kValues;
  auto c = case_of(probe);
  if (!c) return ProbeScope::kShape;
  Case first = cmp_cases(member_, op_, options_.cases).front();
  first.grade = c->grade;
  return *c == first ? ProbeScope::kReference : ProbeScope::kShape;
}

std::vector<Probe> GlrProbes::simplifications(const Probe& failing, const Contract&) const {
  auto base = case_of(failing);
  if (!base) return {};
  std::vector<Probe> out;
  if (failing.repetitions > 2) {  // fewer calls first: every later step then costs less
    Probe p = failing;
    p.repetitions = 2;
    out.push_back(std::move(p));
  }
  const auto emit = [&](const Case& c, std::vector<std::size_t> kept) {
    Probe p = failing;
    const Probe fresh = probe_of(c, failing.gate, "");
    p.sizes = fresh.sizes;
    p.segments = fresh.segments;
    p.tags = fresh.tags;
    p.inputs = fresh.inputs;
    p.label = label_of(c);
    p.injections.clear();
    for (const Injection& inj : failing.injections)
      if (auto moved = remap(*base, c, kept, inj)) p.injections.push_back(*moved);
    if (!failing.injections.empty() && p.injections.empty()) return;  // the defect's trigger
    if (!p.injections.empty()) p.label += "; NaN in v (shrunk)";
    out.push_back(std::move(p));
  };
  const std::size_t n = base->lengths.size();
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  for (std::size_t drop = 0; n > 1 && drop < n; ++drop) {  // fewer sequences
    Case c = *base;
    std::vector<std::size_t> kept;
    c.lengths.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (i == drop) continue;
      c.lengths.push_back(base->lengths[i]);
      kept.push_back(i);
    }
    emit(c, kept);
  }
  for (std::size_t i = 0; i < n; ++i) {  // shorter sequences
    for (std::int64_t len : smaller(base->lengths[i], {1, 2, 63, 64, 65})) {
      Case c = *base;
      if (c.packing == Packing::kBatch) {
        std::fill(c.lengths.begin(), c.lengths.end(), len);
      } else {
        c.lengths[i] = len;
      }
      emit(c, all);
    }
    if (base->packing == Packing::kBatch) break;
  }
  if (base->v_heads > base->qk_heads) {  // no GVA
    Case c = *base;
    c.v_heads = c.qk_heads;
    emit(c, all);
  }
  if (base->qk_heads > 1) {  // one q/k head
    Case c = *base;
    c.v_heads /= c.qk_heads;
    c.qk_heads = 1;
    emit(c, all);
  }
  for (std::int64_t d : smaller(base->key_dim, {1, 8, 16, 32, 64})) {
    Case c = *base;
    c.key_dim = d;
    emit(c, all);
  }
  for (std::int64_t d : smaller(base->value_dim, {1, 8, 16, 32, 64})) {
    Case c = *base;
    c.value_dim = d;
    emit(c, all);
  }
  const auto plainer = [&](auto change) {
    Case c = *base;
    change(c);
    if (!(normalised(c) == *base)) emit(normalised(c), all);
  };
  plainer([](Case& c) { c.decay = Decay::kModerate; });
  plainer([](Case& c) { c.gate_bf16 = false; });
  plainer([](Case& c) { c.beta_f32 = false; });
  plainer([](Case& c) { c.layout = StateLayout::kKV; });
  plainer([](Case& c) { c.io = DType::kBF16; });
  plainer(
      [](Case& c) { c.packing = c.packing == Packing::kBatch ? c.packing : Packing::kVarlenI64; });
  for (Probe& p : same_shape_simplifications(failing, Distribution::kNormal, Distribution::kNormal))
    out.push_back(std::move(p));
  return out;
}

}  // namespace kcv::glr
