// File: glr/check/case_spec.cpp
// The case lists of case_spec.hpp. The fp64 reference costs ~6 s per head at T = 8192, K = V = 128
// (docs/05_glr.md), so the long case has two value heads and the harness runs heads in parallel.
#include "check/case_spec.hpp"

namespace kcv::glr::check {
namespace {

using gpu::DType;
using gpu::IndexType;

CaseSpec batch(std::string label, std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t hv,
               std::int64_t kd, std::int64_t vd) {
  CaseSpec s;
  s.label = std::move(label);
  s.lengths.assign(static_cast<std::size_t>(b), t);
  s.qk_heads = h;
  s.v_heads = hv;
  s.key_dim = kd;
  s.value_dim = vd;
  return s;
}

CaseSpec packed(std::string label, std::vector<std::int64_t> lengths, IndexType type,
                std::int64_t h, std::int64_t hv, std::int64_t kd, std::int64_t vd) {
  CaseSpec s = batch(std::move(label), 1, 1, h, hv, kd, vd);
  s.lengths = std::move(lengths);
  s.varlen = true;
  s.index_type = type;
  return s;
}

}  // namespace

std::vector<CaseSpec> tiny_cases() {
  // Two V tiles in the serial passes (V = 40 > kStateTile), K padded (24), a partial chunk, GVA.
  CaseSpec s = packed("tiny-varlen", {1, 70, 5}, IndexType::kInt32, 1, 2, 24, 40);
  s.layout = StateLayout::kVK;
  return {s};
}

std::vector<CaseSpec> quick_cases() {
  std::vector<CaseSpec> out;
  out.push_back(batch("t1", 2, 1, 2, 2, 64, 64));
  CaseSpec s = batch("t65-gva-strong", 1, 65, 2, 4, 100, 100);
  s.decay = Decay::kStrong;
  s.layout = StateLayout::kVK;
  s.gate_dtype = DType::kBFloat16;
  s.beta_dtype = DType::kFloat32;
  out.push_back(s);
  s = packed("varlen-i32", {1, 150, 7, 64, 3, 129}, IndexType::kInt32, 2, 4, 128, 128);
  s.seed = 3;
  out.push_back(s);
  return out;
}

std::vector<CaseSpec> full_cases() {
  std::vector<CaseSpec> out;
  CaseSpec s = batch("t1", 2, 1, 2, 2, 64, 64);
  out.push_back(s);
  s = batch("t63-d100-weak-vk", 1, 63, 1, 1, 100, 100);
  s.decay = Decay::kWeak;
  s.layout = StateLayout::kVK;
  s.final_state_grad = false;
  s.seed = 2;
  out.push_back(s);
  s = batch("t64-d128-nostate", 2, 64, 2, 2, 128, 128);
  s.initial_state = false;
  s.final_state_grad = false;
  s.seed = 3;
  out.push_back(s);
  s = batch("t65-gva-strong", 1, 65, 2, 4, 64, 64);
  s.decay = Decay::kStrong;
  s.gate_dtype = DType::kBFloat16;
  s.beta_dtype = DType::kFloat32;
  s.seed = 4;
  out.push_back(s);
  s = batch("t1000-k128-v100-vk", 2, 1000, 1, 2, 128, 100);
  s.layout = StateLayout::kVK;
  s.seed = 5;
  out.push_back(s);
  s = batch("t1000-d100-strong", 1, 1000, 2, 2, 100, 100);
  s.decay = Decay::kStrong;
  s.seed = 6;
  out.push_back(s);
  s = batch("t1000-k64-v128-weak", 1, 1000, 1, 1, 64, 128);
  s.decay = Decay::kWeak;
  s.seed = 7;
  out.push_back(s);
  s = batch("t8192-d128-gva", 1, 8192, 1, 2, 128, 128);
  s.decay = Decay::kWeak;
  s.seed = 8;
  out.push_back(s);
  s = packed("varlen-i32-gva", {1, 150, 7, 64, 3, 1000, 65, 257}, IndexType::kInt32, 2, 4, 128,
             128);
  s.seed = 9;
  out.push_back(s);
  s = packed("varlen-i64-strong-vk", {300, 5, 129, 64, 1}, IndexType::kInt64, 1, 2, 64, 128);
  s.decay = Decay::kStrong;
  s.layout = StateLayout::kVK;
  s.gate_dtype = DType::kBFloat16;
  s.seed = 10;
  out.push_back(s);
  return out;
}

std::string describe(const CaseSpec& s) {
  std::string out = "T=";
  if (s.varlen) {
    for (std::size_t i = 0; i < s.lengths.size(); ++i) {
      if (i > 0) out += '+';
      out += std::to_string(s.lengths[i]);
    }
    out += s.index_type == IndexType::kInt32 ? " (cu i32)" : " (cu i64)";
  } else {
    out += std::to_string(s.lengths.front()) + "x" + std::to_string(s.lengths.size());
  }
  out += " H=" + std::to_string(s.qk_heads) + "/" + std::to_string(s.v_heads);
  out += " K=" + std::to_string(s.key_dim) + " V=" + std::to_string(s.value_dim);
  out += s.decay == Decay::kWeak ? " weak" : s.decay == Decay::kStrong ? " strong" : " moderate";
  out += s.layout == StateLayout::kKV ? " kv" : " vk";
  if (s.initial_state) out += " h0";
  if (s.final_state_grad) out += " dht";
  out += s.gate_dtype == gpu::DType::kFloat32 ? " g:f32" : " g:bf16";
  out += s.beta_dtype == gpu::DType::kFloat32 ? " b:f32" : " b:bf16";
  return out;
}

}  // namespace kcv::glr::check
