// File: src/resource/ptx_module.hpp
// The structure of a PTX module as far as resource analysis needs it: the target, module-scope
// shared variables, and each function (.entry or .func) with its launch-bound directives and the
// statements of its body. Statements are split on ';' after comments are removed; leading block
// braces, labels and guard predicates are stripped, so `opcode` is the instruction's first token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kcv/expected.hpp"

namespace kcv::resource {

struct PtxStatement {
  std::string opcode;                 // "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"
  std::vector<std::string> operands;  // split on top-level commas, trimmed
  std::string text;                   // the whole statement, trimmed
  std::size_t line = 0;               // 1-based line where it starts
};

struct PtxSharedVar {
  std::string name;
  int64_t bytes = 0;  // 0 for unsized (extern, dynamic) arrays
};

struct PtxFunction {
  std::string name;
  bool entry = false;
  int64_t maxntid = 0;  // product of .maxntid (or .reqntid) dimensions; 0 when absent
  std::vector<PtxStatement> body;
  std::string body_text;  // for "does this function name that module variable"
};

struct PtxModule {
  std::string target;  // first word of .target, e.g. "sm_100a"
  std::vector<PtxSharedVar> module_shared;
  std::vector<PtxFunction> functions;
};

Expected<PtxModule> scan_ptx(std::string_view text);
/// Size in bytes of a .shared declaration statement ("... .b8 name[12000]"), with its name.
Expected<PtxSharedVar> parse_shared_decl(const PtxStatement& s);

}  // namespace kcv::resource
