#include "kindling/core/check.h"

#include "gtest/gtest.h"

namespace kindling {
namespace {

TEST(CheckDeathTest, FailedCheckAbortsNamingConditionLocationAndMessage) {
  EXPECT_DEATH(KINDLING_CHECK(1 + 1 == 3, "add: got %d", 2),
               "check_test.cc:[0-9]+: check failed: 1 \\+ 1 == 3: add: got 2");
}

TEST(CheckTest, PassingCheckDoesNothing) {
  int evaluations = 0;
  KINDLING_CHECK(++evaluations == 1, "unused");
  EXPECT_EQ(1, evaluations);
}

}  // namespace
}  // namespace kindling
