// File: src/resource/ptx.cpp
// Resource facts read statically from PTX: entry names, .maxntid/.reqntid, declared shared
// memory, and Blackwell tensor-memory use (tcgen05.alloc column counts, dealloc and
// relinquish_alloc_permit counts). A column count is known when it is an immediate, or a
// register whose only definition in the same function is `mov.{b,u,s}32 %r, IMM` (how nvcc
// emits a constant passed to inline asm through an "r" operand, which ptxas cannot range-check);
// anything else sets tmem_dynamic_alloc. A .func that touches tensor memory is reported too,
// because its allocations count for every kernel that calls it.
#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>

#include "kcv/resource.hpp"
#include "resource/ptx_module.hpp"
#include "resource/text_scan.hpp"

namespace kcv {
namespace {

using resource::PtxFunction;
using resource::PtxStatement;

bool is_alloc(const PtxStatement& s) { return s.opcode.starts_with("tcgen05.alloc"); }
bool is_dealloc(const PtxStatement& s) { return s.opcode.starts_with("tcgen05.dealloc"); }
bool is_relinquish(const PtxStatement& s) {
  return s.opcode.starts_with("tcgen05.relinquish_alloc_permit");
}

// Does this statement write `reg` (its first operand, scalar or inside a vector `{...}`)?
bool defines(const PtxStatement& s, const std::string& reg) {
  if (s.operands.empty() || s.opcode.starts_with("tcgen05.") || s.opcode.starts_with("st.") ||
      s.opcode.starts_with("red.")) {
    return false;
  }
  const std::string& dst = s.operands.front();
  if (dst == reg) return true;
  if (dst.empty() || dst.front() != '{') return false;
  for (std::string_view piece :
       resource::split(std::string_view(dst).substr(1, dst.size() - 2), ',')) {
    if (piece == reg) return true;
  }
  return false;
}

// The constant value of `operand` at an alloc: an immediate, or a register set once by a mov.
std::optional<int64_t> constant_value(const PtxFunction& f, const std::string& operand) {
  if (auto imm = resource::parse_ptx_integer(operand)) return imm;
  if (operand.empty() || operand.front() != '%') return std::nullopt;
  static const std::regex kMov(R"(mov\.[bus]32)");
  const PtxStatement* def = nullptr;
  for (const PtxStatement& s : f.body) {
    if (!defines(s, operand)) continue;
    if (def != nullptr) return std::nullopt;  // assigned more than once
    def = &s;
  }
  if (def == nullptr || !std::regex_match(def->opcode, kMov) || def->operands.size() != 2)
    return std::nullopt;
  return resource::parse_ptx_integer(def->operands[1]);
}

bool names(const std::string& body, const std::string& var) {
  for (std::size_t at = body.find(var); at != std::string::npos; at = body.find(var, at + 1)) {
    const auto word = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
    };
    const bool left_ok = at == 0 || !word(body[at - 1]);
    const bool right_ok = at + var.size() >= body.size() || !word(body[at + var.size()]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

Expected<KernelResources> analyse(const PtxFunction& f, const resource::PtxModule& m) {
  KernelResources k;
  k.name = f.name;
  k.arch = m.target;
  k.max_threads = f.maxntid;
  for (const PtxStatement& s : f.body) {
    if (s.opcode == ".shared") {
      auto v = resource::parse_shared_decl(s);
      if (!v) return v.error();
      k.shared_bytes += v->bytes;
    } else if (is_alloc(s)) {
      if (s.operands.size() != 2) {
        return resource::line_error("PTX", s.line, s.text, "tcgen05.alloc needs [dst], ncols");
      }
      auto cols = constant_value(f, s.operands[1]);
      if (cols)
        k.tmem_alloc_columns.push_back(*cols);
      else
        k.tmem_dynamic_alloc = true;
    }
    k.tmem_deallocs += is_dealloc(s) ? 1 : 0;
    k.tmem_relinquishes += is_relinquish(s) ? 1 : 0;
  }
  for (const resource::PtxSharedVar& v : m.module_shared) {
    if (names(f.body_text, v.name)) k.shared_bytes += v.bytes;
  }
  return k;
}

bool touches_tmem(const KernelResources& k) {
  return !k.tmem_alloc_columns.empty() || k.tmem_dynamic_alloc || k.tmem_deallocs > 0 ||
         k.tmem_relinquishes > 0;
}

}  // namespace

Expected<ResourceReport> parse_ptx(std::string_view text) {
  auto module = resource::scan_ptx(text);
  if (!module) return module.error();
  ResourceReport report;
  report.format = ResourceFormat::kPtx;
  for (const PtxFunction& f : module->functions) {
    auto k = analyse(f, *module);
    if (!k) return k.error();
    if (f.entry || touches_tmem(*k)) report.kernels.push_back(std::move(*k));
  }
  if (std::none_of(module->functions.begin(), module->functions.end(),
                   [](const PtxFunction& f) { return f.entry; })) {
    return make_error(ErrorCode::kParse, "no .entry function: not PTX, or PTX without kernels",
                      "PTX");
  }
  return report;
}

}  // namespace kcv
