// File: src/worker/oom_kills.hpp
// The kernel's out-of-memory killer ends a process with SIGKILL, the same signal an operator or
// a hostile neighbour sends. What tells them apart is a count the kernel keeps: `oom_kill N` in
// this process's cgroup (v2 memory.events, v1 memory.oom_control) and in /proc/vmstat (the
// whole host, or the whole VM). A worker that died of SIGKILL while one of those counts rose was
// most likely taken by the OOM killer: its death is the machine's limit, not a kernel's doing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kcv::worker {

/// One reading of the counts in `files` (nullopt where a file is missing or has no oom_kill line).
struct OomKills {
  std::vector<std::optional<uint64_t>> counts;
  /// True when a count read both now and in `before` has risen since.
  bool rose_since(const OomKills& before) const;
  /// "a -> b" of the first count that rose, for a message ("" when none did).
  std::string describe_rise_since(const OomKills& before) const;
};

/// The files this process can read the counts from, most specific first: its cgroup's (v2
/// and v1, from /proc/self/cgroup) and /proc/vmstat. KCV_OOM_COUNTERS (paths joined by ':')
/// names other files instead: a test plays the out-of-memory killer by raising a count in one.
std::vector<std::string> default_oom_counter_files();

/// Reads each file's `oom_kill N` line.
OomKills read_oom_kills(const std::vector<std::string>& files);

}  // namespace kcv::worker
