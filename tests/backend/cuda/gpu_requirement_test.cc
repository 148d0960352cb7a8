#include "kindling/backend/cuda/gpu_requirement.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"

namespace kindling::cuda {
namespace {

const absl::Status kNoDriver = absl::NotFoundError(
    "no CUDA device visible: no NVIDIA driver installed (libcuda.so.1: cannot "
    "open shared object file)");
const absl::Status kDriverTooOld = absl::FailedPreconditionError(
    "CUDA failed to initialize: cudaErrorInsufficientDriver: CUDA driver "
    "version is insufficient for CUDA runtime version");

TEST(DecideGpuCheck, RunsWithEnoughDevices) {
  EXPECT_EQ(DecideGpuCheck(absl::OkStatus(), 1, 0, 1).verdict,
            GpuVerdict::kRun);
  EXPECT_EQ(DecideGpuCheck(absl::OkStatus(), 2, 2, 2).verdict,
            GpuVerdict::kRun);
}

TEST(DecideGpuCheck, NoDriverSkipsSayingWhyUnlessRequired) {
  const GpuCheck skip = DecideGpuCheck(kNoDriver, 0, 0, 1);
  EXPECT_EQ(skip.verdict, GpuVerdict::kSkip);
  EXPECT_EQ(skip.message, kNoDriver.message());
  const GpuCheck fail = DecideGpuCheck(kNoDriver, 0, 1, 1);
  EXPECT_EQ(fail.verdict, GpuVerdict::kFail);
  EXPECT_EQ(
      fail.message,
      "KINDLING_REQUIRE_GPU=1: this run must have 1 CUDA device(s), but " +
          std::string(kNoDriver.message()));
}

TEST(DecideGpuCheck, AFailedInitializationAlwaysFails) {
  for (int required : {0, 1}) {
    const GpuCheck check = DecideGpuCheck(kDriverTooOld, 0, required, 1);
    EXPECT_EQ(check.verdict, GpuVerdict::kFail);
    EXPECT_EQ(check.message, kDriverTooOld.message());
  }
}

TEST(DecideGpuCheck, TooFewDevicesSkipsUnlessTheRunRequiresThatMany) {
  // One GPU, required: a case needing two skips, naming the counts.
  const GpuCheck skip = DecideGpuCheck(absl::OkStatus(), 1, 1, 2);
  EXPECT_EQ(skip.verdict, GpuVerdict::kSkip);
  EXPECT_EQ(skip.message, "needs 2 CUDA device(s), 1 visible");
  const GpuCheck fail = DecideGpuCheck(absl::OkStatus(), 1, 2, 2);
  EXPECT_EQ(fail.verdict, GpuVerdict::kFail);
  EXPECT_NE(fail.message.find("needs 2 CUDA device(s), 1 visible"),
            std::string::npos);
}

TEST(ParseRequiredGpus, AcceptsCountsAndRejectsAnythingElse) {
  EXPECT_EQ(*ParseRequiredGpus(nullptr), 0);
  EXPECT_EQ(*ParseRequiredGpus(""), 0);
  EXPECT_EQ(*ParseRequiredGpus("0"), 0);
  EXPECT_EQ(*ParseRequiredGpus("1"), 1);
  EXPECT_EQ(*ParseRequiredGpus("8"), 8);
  for (const char* bad : {"yes", "-1", "65", "1.5", "2x"}) {
    const absl::StatusOr<int> parsed = ParseRequiredGpus(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("KINDLING_REQUIRE_GPU"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace kindling::cuda
