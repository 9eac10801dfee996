// File: src/cli/common.hpp
// Flag parsing and loading shared by the commands: candidate references (LIB[:KERNEL]), gate
// lists, profiles, executors, report files. Every function validates eagerly and fails with a
// CliFailure naming the bad flag, so a command never starts work on bad input.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kcv/executor.hpp"
#include "kcv/gate_id.hpp"
#include "kcv/profile.hpp"

namespace kcv::cli {

struct CandidateRef {
  std::string path;
  std::string kernel;  // empty: chosen by op, or the library's only kernel
};

/// "lib.so:kernel" -> {lib.so, kernel}; "lib.so" -> {lib.so, ""}. A suffix containing '/' is
/// part of the path.
CandidateRef parse_candidate_ref(const std::string& text);

/// A path dlopen() reads as a file: "libmine.so" becomes "./libmine.so" (dlopen would search
/// the library path for a bare name). Fails when the file does not exist.
std::string loadable_path(const std::string& path);

/// "CMP-01,exc01" -> {kCmp01, kExc01}; empty text: empty list (all gates).
std::vector<GateId> parse_gate_list(const std::string& text);

/// Empty text: nullopt (the contract's own profile).
std::optional<ProfileId> parse_profile_flag(const std::string& text);

/// Fails when `op` is non-empty and not an operator the oracle knows.
void check_op(const std::string& op);

/// "forked" or "in-process".
std::unique_ptr<Executor> make_executor(const std::string& name);

void write_text_file(const std::string& path, const std::string& text, const char* flag);

/// Comma-separated gate codes of all twelve gates, for messages.
std::string all_gate_codes();

bool is_terminal(int fd);

}  // namespace kcv::cli
