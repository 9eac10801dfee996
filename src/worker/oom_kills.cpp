// File: src/worker/oom_kills.cpp
#include "worker/oom_kills.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

namespace kcv::worker {
namespace {

std::optional<uint64_t> oom_kill_line(const std::string& path) {
  std::ifstream in(path);
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return std::nullopt;
}

// The cgroup paths of /proc/self/cgroup: "0::/rel" (v2) and "N:...memory...:/rel" (v1).
std::vector<std::string> cgroup_counter_files() {
  std::vector<std::string> files;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string_view controllers =
        std::string_view(line).substr(first + 1, second - first - 1);
    const std::string rel = line.substr(second + 1);
    if (controllers.empty()) {
      files.push_back("/sys/fs/cgroup" + rel + "/memory.events");
      files.push_back("/sys/fs/cgroup/unified" + rel + "/memory.events");  // a hybrid host
    }
    std::stringstream names{std::string(controllers)};
    for (std::string name; std::getline(names, name, ',');) {
      if (name != "memory") continue;
      files.push_back("/sys/fs/cgroup/memory" + rel + "/memory.oom_control");
      // Without a cgroup namespace the path names the host's hierarchy, while the mount shows
      // this container's own cgroup at its root.
      files.push_back("/sys/fs/cgroup/memory/memory.oom_control");
    }
  }
  return files;
}

}  // namespace

bool OomKills::rose_since(const OomKills& before) const {
  return !describe_rise_since(before).empty();
}

std::string OomKills::describe_rise_since(const OomKills& before) const {
  for (std::size_t i = 0; i < std::min(counts.size(), before.counts.size()); ++i) {
    if (counts[i] && before.counts[i] && *counts[i] > *before.counts[i])
      return fmt::format("{} -> {}", *before.counts[i], *counts[i]);
  }
  return {};
}

std::vector<std::string> default_oom_counter_files() {
  std::vector<std::string> all;
  if (const char* named = std::getenv("KCV_OOM_COUNTERS"); named != nullptr && *named != '\0') {
    std::stringstream paths{std::string(named)};
    for (std::string p; std::getline(paths, p, ':');)
      if (!p.empty()) all.push_back(p);
    return all;
  }
  all = cgroup_counter_files();
  all.push_back("/proc/vmstat");
  std::vector<std::string> unique;
  for (std::string& f : all)
    if (std::find(unique.begin(), unique.end(), f) == unique.end()) unique.push_back(std::move(f));
  return unique;
}

OomKills read_oom_kills(const std::vector<std::string>& files) {
  OomKills k;
  k.counts.reserve(files.size());
  for (const std::string& f : files) k.counts.push_back(oom_kill_line(f));
  return k;
}

}  // namespace kcv::worker
