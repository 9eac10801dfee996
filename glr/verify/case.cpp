// File: glr/verify/case.cpp
// A GLR case as a probe and back, the op signatures, and the inputs of a case. A probe keeps the
// case in fields every probe has, so its token is a plain kcv probe token:
//   sizes  {T, N, H, HV, K, V}     segments  the sequence lengths (sum T, N of them)
//   tags   {member, grade, decay, packing, layout}, and for a decode case op = decode and, for
//          a call without an initial state, state = zero (absent tags: chunk, given state)
//   inputs one InputSpec per signature input (q's dtype says q, k, v's; g's and beta's dtype
//          say the gate dtypes)
// Inputs are drawn from kcv's counter-based generator (CounterRng), never from std::
// distributions, so a token gives the same bits on every machine.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <numeric>

#include "glr/verify/internal.hpp"
#include "kcv/generate.hpp"
#include "kcv/rng.hpp"

namespace kcv::glr {
namespace {

Error bad(const std::string& field, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, fmt::format("GLR probe: {}: {}", field, what),
                    "probe");
}

OpSignature make_signature(Member m, OpKind op) {
  const MemberTraits tr = traits(m);
  const bool decode = op == OpKind::kDecode;
  OpSignature s;
  s.name = op_name(m, op);
  s.summary = decode ? fmt::format(
                           "GLR member {}: decode, the forward of a few tokens per sequence "
                           "from a given state (docs/glr/verification.md)",
                           name(m))
                     : fmt::format(
                           "GLR member {}: forward + backward of the gated linear "
                           "recurrence (docs/05_glr.md)",
                           name(m));
  s.op_class = OpClass::kScan;
  s.reduction_dim = "T";
  const std::vector<std::string> gate_dims = tr.gate == GateKind::kChannel
                                                 ? std::vector<std::string>{"T", "HV", "K"}
                                                 : std::vector<std::string>{"T", "HV"};
  const std::vector<std::string> state = {"N", "HV", "K", "V"};
  s.inputs.push_back({"q", {"T", "H", "K"}});
  s.inputs.push_back({"k", {"T", "H", "K"}});
  s.inputs.push_back({"v", {"T", "HV", "V"}});
  if (tr.gate != GateKind::kNone) s.inputs.push_back({"g", gate_dims});
  if (tr.delta_rule) s.inputs.push_back({"beta", {"T", "HV"}});
  s.inputs.push_back({"h0", state});
  if (!decode) {
    s.inputs.push_back({"do", {"T", "HV", "V"}});
    s.inputs.push_back({"dht", state});
  }
  s.inputs.push_back({"cu_seqlens", {"N1"}});
  s.outputs.push_back({"o", {"T", "HV", "V"}});
  s.outputs.push_back({"ht", state});
  if (decode) {
    s.reference_sizes = {{"T", 1}, {"N", 1}, {"N1", 2}, {"H", 2}, {"HV", 2}, {"K", 64}, {"V", 64}};
    s.uses_exp = tr.gate != GateKind::kNone;
    return s;
  }
  s.outputs.push_back({"dq", {"T", "H", "K"}});
  s.outputs.push_back({"dk", {"T", "H", "K"}});
  s.outputs.push_back({"dv", {"T", "HV", "V"}});
  if (tr.gate != GateKind::kNone) s.outputs.push_back({"dg", gate_dims});
  if (tr.delta_rule) s.outputs.push_back({"dbeta", {"T", "HV"}});
  s.outputs.push_back({"dh0", state});
  s.reference_sizes = {{"T", 64}, {"N", 1}, {"N1", 2}, {"H", 2}, {"HV", 2}, {"K", 64}, {"V", 64}};
  s.uses_exp = tr.gate != GateKind::kNone;
  return s;
}

template <typename E, std::size_t N>
Expected<E> parse_name(const std::array<E, N>& all, std::string_view text,
                       const std::string& field) {
  std::vector<std::string> known;
  for (E e : all) {
    if (name(e) == text) return e;
    known.emplace_back(name(e));
  }
  return bad(field, fmt::format("'{}' is none of {}", text, fmt::join(known, ", ")));
}

constexpr std::array<Decay, 3> kDecays = {Decay::kWeak, Decay::kModerate, Decay::kStrong};
constexpr std::array<Packing, 3> kPackings = {Packing::kVarlenI64, Packing::kVarlenI32,
                                              Packing::kBatch};
constexpr std::array<Grade, 2> kGrades = {Grade::kFp32, Grade::kBf16};
constexpr std::array<OpKind, 2> kOpKinds = {OpKind::kChunk, OpKind::kDecode};

std::string_view layout_tag(StateLayout l) { return l == StateLayout::kKV ? "kv" : "vk"; }

std::string tag(const Probe& p, const char* key) {
  const auto it = p.tags.find(key);
  return it == p.tags.end() ? std::string() : it->second;
}

Status check_sizes(const Case& c, const Probe& p) {
  const auto size = [&](const char* k) {
    const auto it = p.sizes.find(k);
    return it == p.sizes.end() ? int64_t{-1} : it->second;
  };
  if (size("T") != c.tokens()) return bad("sizes.T", "must equal the sum of segments");
  if (size("N") != std::ssize(c.lengths)) return bad("sizes.N", "must equal the segment count");
  if (c.qk_heads < 1 || c.v_heads % c.qk_heads != 0)
    return bad("sizes.HV", "must be a positive multiple of sizes.H");
  const std::int64_t most = max_head_dim(c.op);
  if (c.key_dim < 1 || c.key_dim > most)
    return bad("sizes.K", fmt::format("must be in 1..{}", most));
  if (c.value_dim < 1 || c.value_dim > most)
    return bad("sizes.V", fmt::format("must be in 1..{}", most));
  if (c.op == OpKind::kChunk && c.io != DType::kBF16)
    return bad("inputs[0]", "the chunk ops take bf16 q, k, v");
  if (c.io != DType::kBF16 && c.io != DType::kF16 && c.io != DType::kF32)
    return bad("inputs[0]", "q, k, v are bf16, fp16 or fp32");
  if (c.op == OpKind::kDecode && c.grade != Grade::kFp32)
    return bad("tags.grade", "a decode case is judged under the fp32 grade");
  if (c.packing == Packing::kBatch) {
    for (std::int64_t n : c.lengths)
      if (n != c.lengths.front()) return bad("segments", "a batch needs equal lengths");
  }
  return {};
}

// ---------------------------------------------------------------- inputs

double logsigmoid(double x) { return -std::log1p(std::exp(-x)); }

double log_decay(const CounterRng& rng, std::uint64_t i, Decay d) {
  switch (d) {
    case Decay::kWeak:
      return logsigmoid(rng.uniform(i)) / 10.0;
    case Decay::kStrong:
      return logsigmoid(rng.uniform(i)) / 0.01;
    case Decay::kModerate:
      break;
  }
  return rng.uniform(i, 2) < 0.1 ? 0.0 : logsigmoid(rng.normal(i, 1) + 2.0);
}

// Rows of `width` values with unit 2-norm before rounding.
void unit_rows(HostTensor& t, const CounterRng& rng, std::int64_t width) {
  std::vector<double> row(static_cast<std::size_t>(width));
  for (std::int64_t r = 0; r < t.numel() / width; ++r) {
    double ss = 0.0;
    for (std::int64_t d = 0; d < width; ++d) {
      row[d] = rng.normal(static_cast<std::uint64_t>(r * width + d));
      ss += row[d] * row[d];
    }
    const double inv = 1.0 / std::sqrt(ss);
    for (std::int64_t d = 0; d < width; ++d) t.set_value_at(r * width + d, row[d] * inv);
  }
}

template <typename F>
void fill(HostTensor& t, F value) {
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set_value_at(i, value(static_cast<uint64_t>(i)));
}

}  // namespace

std::string op_name(Member m, OpKind op) {
  return "glr." + std::string(name(m)) + (op == OpKind::kDecode ? ".decode" : "");
}

std::optional<GlrOp> glr_op_of(std::string_view op) {
  for (Member m : kAllMembers)
    for (OpKind k : kOpKinds)
      if (op == op_name(m, k)) return GlrOp{m, k};
  return std::nullopt;
}

std::optional<Member> member_of_op(std::string_view op) {
  const std::optional<GlrOp> g = glr_op_of(op);
  return g ? std::optional<Member>(g->member) : std::nullopt;
}

std::int64_t max_head_dim(OpKind op) { return op == OpKind::kDecode ? 256 : 128; }

const OpSignature& signature(Member m, OpKind op) {
  static const std::array<std::array<OpSignature, 6>, 2> kSignatures = [] {
    std::array<std::array<OpSignature, 6>, 2> out;
    for (std::size_t k = 0; k < kOpKinds.size(); ++k)
      for (std::size_t i = 0; i < kAllMembers.size(); ++i)
        out[k][i] = make_signature(kAllMembers[i], kOpKinds[k]);
    return out;
  }();
  return kSignatures[static_cast<std::size_t>(op)][static_cast<std::size_t>(m)];
}

int input_index(Member m, std::string_view name, OpKind op) {
  const auto& in = signature(m, op).inputs;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i].name == name) return static_cast<int>(i);
  return -1;
}

int output_index(Member m, std::string_view name, OpKind op) {
  const auto& out = signature(m, op).outputs;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string_view name(Decay d) {
  constexpr std::array<std::string_view, 3> kNames = {"weak", "moderate", "strong"};
  return kNames[static_cast<std::size_t>(d)];
}

std::string_view name(Packing p) {
  constexpr std::array<std::string_view, 3> kNames = {"varlen-i64", "varlen-i32", "batch"};
  return kNames[static_cast<std::size_t>(p)];
}

std::string_view name(OpKind op) { return op == OpKind::kDecode ? "decode" : "chunk"; }

std::int64_t Case::tokens() const {
  return std::accumulate(lengths.begin(), lengths.end(), std::int64_t{0});
}

Shape Case::shape() const {
  Shape s;
  s.tokens = tokens();
  s.qk_heads = qk_heads;
  s.v_heads = v_heads;
  s.key_dim = key_dim;
  s.value_dim = value_dim;
  s.cu_seqlens.push_back(0);
  for (std::int64_t n : lengths) s.cu_seqlens.push_back(s.cu_seqlens.back() + n);
  return s;
}

double Case::scale() const {
  return static_cast<double>(1.0f / std::sqrt(static_cast<float>(key_dim)));
}

Probe probe_of(const Case& c, GateId gate, std::string label) {
  Probe p;
  p.gate = gate;
  p.label = std::move(label);
  p.sizes = {{"T", c.tokens()}, {"N", std::ssize(c.lengths)},
             {"H", c.qk_heads}, {"HV", c.v_heads},
             {"K", c.key_dim},  {"V", c.value_dim}};
  p.segments = c.lengths;
  p.tags = {{"member", std::string(name(c.member))},
            {"grade", std::string(name(c.grade))},
            {"decay", std::string(name(c.decay))},
            {"packing", std::string(name(c.packing))},
            {"layout", std::string(layout_tag(c.layout))}};
  if (c.op == OpKind::kDecode) p.tags["op"] = "decode";
  if (!c.initial_state) p.tags["state"] = "zero";
  for (const TensorSig& t : signature(c.member, c.op).inputs) {
    DType d = c.io;
    if (t.name == "g") d = c.gate_bf16 ? DType::kBF16 : DType::kF32;
    if (t.name == "beta") d = c.beta_f32 ? DType::kF32 : DType::kBF16;
    if (t.name == "h0" || t.name == "dht") d = DType::kF32;
    if (t.name == "cu_seqlens") d = DType::kI64;
    p.inputs.push_back(InputSpec{d, Distribution::kNormal, {}});
  }
  return p;
}

Expected<Case> case_of(const Probe& p) {
  Case c;
  const std::string member = tag(p, "member");
  bool found = false;
  for (Member m : kAllMembers) {
    if (name(m) == member) {
      c.member = m;
      found = true;
    }
  }
  if (!found) return bad("tags.member", fmt::format("unknown member '{}'", member));
  auto grade = parse_name(kGrades, tag(p, "grade"), "tags.grade");
  if (!grade) return grade.error();
  c.grade = *grade;
  auto decay = parse_name(kDecays, tag(p, "decay"), "tags.decay");
  if (!decay) return decay.error();
  c.decay = *decay;
  auto packing = parse_name(kPackings, tag(p, "packing"), "tags.packing");
  if (!packing) return packing.error();
  c.packing = *packing;
  const std::string layout = tag(p, "layout");
  if (layout != "kv" && layout != "vk") return bad("tags.layout", "expected kv or vk");
  c.layout = layout == "kv" ? StateLayout::kKV : StateLayout::kVK;
  if (const std::string op = tag(p, "op"); !op.empty()) {
    auto kind = parse_name(kOpKinds, op, "tags.op");
    if (!kind) return kind.error();
    c.op = *kind;
  }
  if (const std::string state = tag(p, "state"); !state.empty()) {
    if (state != "zero") return bad("tags.state", "expected zero (or no tag: a given state)");
    c.initial_state = false;
  }
  if (p.segments.empty()) return bad("segments", "no sequence");
  c.lengths = p.segments;
  const auto at = [&](const char* k) {
    const auto it = p.sizes.find(k);
    return it == p.sizes.end() ? int64_t{0} : it->second;
  };
  c.qk_heads = at("H");
  c.v_heads = at("HV");
  c.key_dim = at("K");
  c.value_dim = at("V");
  const auto& sig = signature(c.member, c.op).inputs;
  if (p.inputs.size() != sig.size())
    return bad("inputs", fmt::format("{} has {} inputs", op_name(c.member, c.op), sig.size()));
  c.io = p.inputs.front().dtype;
  if (Status st = check_sizes(c, p); !st) return st.error();
  for (std::size_t i = 0; i < sig.size(); ++i) {
    const DType d = p.inputs[i].dtype;
    if (sig[i].name == "g") c.gate_bf16 = d == DType::kBF16;
    if (sig[i].name == "beta") c.beta_f32 = d == DType::kF32;
    if (p.inputs[i].layout.kind != LayoutKind::kContiguous)
      return bad(fmt::format("inputs[{}].layout", i), "GLR inputs are contiguous");
  }
  if (!(probe_of(c, p.gate, "").inputs == p.inputs))
    return bad("inputs", "dtypes or distributions differ from the case's");
  return c;
}

namespace verify_detail {

std::vector<HostTensor> make_tensors(const Case& c, const Probe& probe) {
  const OpSignature& sig = signature(c.member, c.op);
  const Shape s = c.shape();
  const std::int64_t n = std::ssize(c.lengths);
  const std::map<std::string, int64_t> sizes = {
      {"T", s.tokens},   {"N", n},         {"N1", n + 1},     {"H", c.qk_heads},
      {"HV", c.v_heads}, {"K", c.key_dim}, {"V", c.value_dim}};
  std::vector<HostTensor> out;
  for (std::size_t j = 0; j < sig.inputs.size(); ++j) {
    const TensorSig& t = sig.inputs[j];
    kcv::Shape shape = shape_of(t, sizes);
    if (c.layout == StateLayout::kVK && (t.name == "h0" || t.name == "dht"))
      std::swap(shape[2], shape[3]);
    HostTensor x(probe.inputs[j].dtype, shape);
    const CounterRng rng(probe.seed, j);
    if (t.name == "q" || t.name == "k") {
      unit_rows(x, rng, c.key_dim);
    } else if (t.name == "g") {
      fill(x, [&](uint64_t i) { return log_decay(rng, i, c.decay); });
    } else if (t.name == "beta") {
      fill(x, [&](uint64_t i) { return 1.0 / (1.0 + std::exp(-rng.normal(i))); });
    } else if (t.name == "h0") {
      fill(x, [&](uint64_t i) { return c.initial_state ? 0.5 * rng.normal(i) : 0.0; });
    } else if (t.name == "cu_seqlens") {
      for (std::int64_t i = 0; i <= n; ++i) x.set_value_at(i, static_cast<double>(s.cu_seqlens[i]));
    } else {  // v, do, dht
      fill(x, [&](uint64_t i) { return rng.normal(i); });
    }
    out.push_back(std::move(x));
  }
  for (const Injection& inj : probe.injections) {
    if (inj.input < 0 || inj.input >= std::ssize(out)) continue;
    HostTensor& x = out[static_cast<std::size_t>(inj.input)];
    if (inj.index < x.numel()) x.set_value_at(inj.index, special_value(inj.value, x.dtype()));
  }
  return out;
}

Data data_of(const Case& c, const std::vector<HostTensor>& tensors) {
  const Member m = c.member;
  const auto values = [&](const char* name) {
    const int i = input_index(m, name, c.op);
    return i < 0 ? std::vector<double>{} : tensors[static_cast<std::size_t>(i)].to_f64();
  };
  Data d;
  d.problem.shape = c.shape();
  d.problem.q = values("q");
  d.problem.k = values("k");
  d.problem.v = values("v");
  d.problem.g = values("g");
  d.problem.beta = values("beta");
  d.problem.h0 = values("h0");
  d.problem.scale = c.scale();
  d.problem.layout = c.layout;
  d.cot.d_o = values("do");
  d.cot.d_final_state = values("dht");
  return d;
}

std::vector<DType> output_dtypes(const Case& c) {
  std::vector<DType> out;
  for (const TensorSig& t : signature(c.member, c.op).outputs) {
    DType d = DType::kBF16;
    if (t.name == "o") d = c.io;
    if (t.name == "ht" || t.name == "dh0") d = DType::kF32;
    if (t.name == "dg") d = c.gate_bf16 ? DType::kBF16 : DType::kF32;
    if (t.name == "dbeta") d = c.beta_f32 ? DType::kF32 : DType::kBF16;
    out.push_back(d);
  }
  return out;
}

std::vector<kcv::Shape> output_shapes(const Case& c) {
  const std::int64_t n = std::ssize(c.lengths);
  const std::map<std::string, int64_t> sizes = {{"T", c.tokens()}, {"N", n},
                                                {"H", c.qk_heads}, {"HV", c.v_heads},
                                                {"K", c.key_dim},  {"V", c.value_dim}};
  std::vector<kcv::Shape> out;
  for (const TensorSig& t : signature(c.member, c.op).outputs) {
    kcv::Shape shape = shape_of(t, sizes);
    if (c.layout == StateLayout::kVK && (t.name == "ht" || t.name == "dh0"))
      std::swap(shape[2], shape[3]);
    out.push_back(std::move(shape));
  }
  return out;
}

}  // namespace verify_detail
}  // namespace kcv::glr
