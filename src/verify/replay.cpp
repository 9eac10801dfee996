// File: src/verify/replay.cpp
// The one-line reproduction command printed for every failing gate. The probe token is JSON
// without single quotes, so single-quoting it makes the line safe to paste into a POSIX shell.
#include <algorithm>

#include <fmt/format.h>

#include "kcv/verify.hpp"

namespace kcv {

std::string replay_line(const std::string& candidate_ref, const Probe& probe,
                        std::optional<ProfileId> profile) {
  std::string token = probe_to_token(probe);
  std::replace(token.begin(), token.end(), '\'', '"');
  std::string line = fmt::format("kcv replay --candidate '{}'", candidate_ref);
  if (profile) line += fmt::format(" --profile {}", kcv::profile(*profile).name);
  line += fmt::format(" --probe '{}'", token);
  return line;
}

}  // namespace kcv
