// File: tests/unit/numeric/shared_doubles_test.cpp
// SharedDoubles: copies share one array; a write through any holder copies it first when shared,
// so no other holder sees the change; release() hands the array back from its last holder only.
#include "kcv/shared_doubles.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace kcv {
namespace {

TEST(SharedDoubles, CopiesShareOneArrayWithoutCopyingIt) {
  const SharedDoubles a = std::vector<double>{1, 2, 3};
  const SharedDoubles b = a;
  EXPECT_EQ(a.data(), b.data());
  EXPECT_EQ(a.holders(), 2);
  EXPECT_EQ(b, (std::vector<double>{1, 2, 3}));
  const std::vector<double>& read = b;  // reads as a vector
  EXPECT_EQ(read.size(), 3u);
}

TEST(SharedDoubles, AWriteThroughOneHolderNeverReachesAnother) {
  SharedDoubles a = {1, 2, 3};
  SharedDoubles b = a;
  b[0] = 9;  // copies first: a still shares nothing with b afterwards
  EXPECT_EQ(a, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(b, (std::vector<double>{9, 2, 3}));
  EXPECT_NE(a.data(), b.data());
  const double* own = b.data();
  b[1] = 8;  // b is now the only holder of its array: written in place
  EXPECT_EQ(b.data(), own);
  SharedDoubles c = a;
  c.resize(5);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(c, (std::vector<double>{1, 2, 3, 0, 0}));
}

TEST(SharedDoubles, ReleaseGivesTheArrayBackFromItsLastHolderOnly) {
  SharedDoubles a = std::vector<double>(4, 1.0);
  SharedDoubles b = a;
  EXPECT_TRUE(a.release().empty());  // b still holds it
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(b.size(), 4u);
  const std::vector<double> back = b.release();
  EXPECT_EQ(back, std::vector<double>(4, 1.0));
  EXPECT_EQ(b.holders(), 0);
  EXPECT_TRUE(SharedDoubles().empty());
}

}  // namespace
}  // namespace kcv
