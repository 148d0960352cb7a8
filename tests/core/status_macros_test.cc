#include "kindling/core/status_macros.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace kindling {
namespace {

// Step(ok, calls) counts its calls and fails unless `ok`.
absl::Status Step(bool ok, int* calls) {
  ++*calls;
  return ok ? absl::OkStatus() : absl::InvalidArgumentError("step failed");
}

absl::StatusOr<std::unique_ptr<int>> Make(bool ok, int value, int* calls) {
  ++*calls;
  if (!ok) return absl::NotFoundError("no value");
  return std::make_unique<int>(value);
}

absl::Status TwoSteps(bool first, bool second, int* calls, int* reached) {
  KINDLING_RETURN_IF_ERROR(Step(first, calls));
  ++*reached;
  KINDLING_RETURN_IF_ERROR(Step(second, calls));
  ++*reached;
  return absl::OkStatus();
}

TEST(ReturnIfErrorTest, ContinuesOnOkAndEvaluatesOnce) {
  int calls = 0, reached = 0;
  EXPECT_TRUE(TwoSteps(true, true, &calls, &reached).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(reached, 2);
}

TEST(ReturnIfErrorTest, ReturnsTheFirstErrorUnchanged) {
  int calls = 0, reached = 0;
  const absl::Status status = TwoSteps(false, true, &calls, &reached);
  EXPECT_EQ(status, absl::InvalidArgumentError("step failed"));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(reached, 0);
}

TEST(ReturnIfErrorTest, WorksInAFunctionReturningStatusOr) {
  auto function = [](bool ok) -> absl::StatusOr<int> {
    int calls = 0;
    KINDLING_RETURN_IF_ERROR(Step(ok, &calls));
    return 7;
  };
  EXPECT_EQ(*function(true), 7);
  EXPECT_EQ(function(false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

absl::StatusOr<int> SumOfTwo(bool first, bool second, int* calls) {
  // Declares a variable, then assigns an existing one: two uses in one scope.
  KINDLING_ASSIGN_OR_RETURN(std::unique_ptr<int> a, Make(first, 3, calls));
  std::unique_ptr<int> b;
  KINDLING_ASSIGN_OR_RETURN(b, Make(second, 4, calls));
  return *a + *b;
}

TEST(AssignOrReturnTest, MovesTheValueOfAMoveOnlyType) {
  int calls = 0;
  EXPECT_EQ(*SumOfTwo(true, true, &calls), 7);
  EXPECT_EQ(calls, 2);
}

TEST(AssignOrReturnTest, ReturnsTheErrorAndStops) {
  int calls = 0;
  EXPECT_EQ(SumOfTwo(true, false, &calls).status(),
            absl::NotFoundError("no value"));
  EXPECT_EQ(calls, 2);
  calls = 0;
  EXPECT_EQ(SumOfTwo(false, true, &calls).status(),
            absl::NotFoundError("no value"));
  EXPECT_EQ(calls, 1);
}

TEST(AssignOrReturnTest, WorksInAFunctionReturningStatus) {
  auto function = [](bool ok, std::string* out) -> absl::Status {
    int calls = 0;
    KINDLING_ASSIGN_OR_RETURN(auto value, Make(ok, 5, &calls));
    *out = std::to_string(*value);
    return absl::OkStatus();
  };
  std::string out;
  EXPECT_TRUE(function(true, &out).ok());
  EXPECT_EQ(out, "5");
  EXPECT_EQ(function(false, &out).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kindling
