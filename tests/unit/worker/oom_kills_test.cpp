// File: tests/unit/worker/oom_kills_test.cpp
// The out-of-memory killer's counts: the `oom_kill N` line of each format the kernel writes
// (cgroup v2 memory.events, v1 memory.oom_control, /proc/vmstat), a missing file read as
// unknown, and a rise seen only where a count was read both times.
#include "worker/oom_kills.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace kcv::worker {
namespace {

struct TempDir {
  TempDir() {
    char d[] = "/tmp/kcv-oom-XXXXXX";
    EXPECT_NE(mkdtemp(d), nullptr);
    path = d;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name) << text;
    return path + "/" + name;
  }
  std::string path;
};

TEST(OomKills, ReadsTheOomKillLineOfEachFormat) {
  const TempDir dir;
  const std::string v2 =
      dir.file("memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n");
  const std::string v1 =
      dir.file("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n");
  const std::string vmstat = dir.file("vmstat", "nr_free_pages 812\npgfault 99\noom_kill 11\n");
  const std::string none = dir.file("none", "nr_free_pages 812\n");
  const OomKills k = read_oom_kills({v2, v1, vmstat, none, dir.path + "/missing"});
  ASSERT_EQ(k.counts.size(), 5u);
  EXPECT_EQ(k.counts[0], 2u);
  EXPECT_EQ(k.counts[1], 5u);
  EXPECT_EQ(k.counts[2], 11u);
  EXPECT_FALSE(k.counts[3].has_value());
  EXPECT_FALSE(k.counts[4].has_value());
}

TEST(OomKills, ARiseCountsOnlyWhereBothReadingsHaveTheCount) {
  const OomKills before{{3, std::nullopt, 7}};
  EXPECT_FALSE((OomKills{{3, 9, 7}}.rose_since(before)));  // unknown before: no evidence
  EXPECT_FALSE((OomKills{{3, std::nullopt, std::nullopt}}.rose_since(before)));
  const OomKills after{{3, std::nullopt, 8}};
  EXPECT_TRUE(after.rose_since(before));
  EXPECT_EQ(after.describe_rise_since(before), "7 -> 8");
  EXPECT_EQ(before.describe_rise_since(before), "");
}

TEST(OomKills, TheDefaultFilesEndWithTheHostsCount) {
  const char* named = std::getenv("KCV_OOM_COUNTERS");
  if (named != nullptr && *named != '\0') GTEST_SKIP() << "KCV_OOM_COUNTERS names other files";
  const auto files = default_oom_counter_files();
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files.back(), "/proc/vmstat");
  // Linux has kept oom_kill in /proc/vmstat since 4.13
  EXPECT_TRUE(read_oom_kills({"/proc/vmstat"}).counts.front().has_value());
}

TEST(OomKills, KcvOomCountersNamesOtherFiles) {
  const char* was = std::getenv("KCV_OOM_COUNTERS");
  const std::string saved = was != nullptr ? was : "";
  setenv("KCV_OOM_COUNTERS", "/tmp/a::/tmp/b", 1);
  EXPECT_EQ(default_oom_counter_files(), (std::vector<std::string>{"/tmp/a", "/tmp/b"}));
  if (was != nullptr)
    setenv("KCV_OOM_COUNTERS", saved.c_str(), 1);
  else
    unsetenv("KCV_OOM_COUNTERS");
}

}  // namespace
}  // namespace kcv::worker
