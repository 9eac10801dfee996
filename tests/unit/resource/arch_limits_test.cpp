// File: tests/unit/resource/arch_limits_test.cpp
// arch_limits: the Hopper and Blackwell data-center limits, family suffixes ignored, and the
// permissive defaults for an arch kcv does not know.
#include <gtest/gtest.h>

#include "kcv/resource.hpp"

namespace kcv {
namespace {

constexpr int64_t kOptInShared = 227 * 1024;

TEST(ArchLimits, HopperHasOptInSharedMemoryAndNoTensorMemory) {
  for (const char* arch : {"sm_90", "sm_90a"}) {
    const ArchLimits l = arch_limits(arch);
    EXPECT_EQ(l.max_shared_per_block, kOptInShared) << arch;
    EXPECT_EQ(l.max_registers_per_thread, 255) << arch;
    EXPECT_EQ(l.max_threads_per_block, 1024) << arch;
    EXPECT_EQ(l.tmem_columns, 0) << arch;
  }
}

TEST(ArchLimits, BlackwellAdds512TensorMemoryColumns) {
  for (const char* arch : {"sm_100", "sm_100a", "sm_100f"}) {
    const ArchLimits l = arch_limits(arch);
    EXPECT_EQ(l.max_shared_per_block, kOptInShared) << arch;
    EXPECT_EQ(l.max_registers_per_thread, 255) << arch;
    EXPECT_EQ(l.max_threads_per_block, 1024) << arch;
    EXPECT_EQ(l.tmem_columns, 512) << arch;
  }
}

TEST(ArchLimits, UnknownArchGetsTheDefaults) {
  const ArchLimits defaults;
  for (const char* arch : {"", "sm_", "compute_90a", "sm_9x"}) {
    const ArchLimits l = arch_limits(arch);
    EXPECT_EQ(l.max_shared_per_block, defaults.max_shared_per_block) << arch;
    EXPECT_EQ(l.tmem_columns, defaults.tmem_columns) << arch;
  }
}

}  // namespace
}  // namespace kcv
