#include "kindling/data/loader_state.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kindling::data {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(LoaderState, EncodesAsOneLine) {
  EXPECT_EQ(
      "seed=18446744073709551615 epoch=3 position=1280 "
      "dataset_size=60000",
      EncodeLoaderState({.seed = ~uint64_t{0},
                         .epoch = 3,
                         .position = 1280,
                         .dataset_size = 60000}));
}

TEST(LoaderState, RoundTrips) {
  const LoaderState state{
      .seed = 42, .epoch = 12, .position = 640, .dataset_size = 60000};
  absl::StatusOr<LoaderState> decoded =
      DecodeLoaderState(EncodeLoaderState(state));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(state, *decoded);
}

void ExpectBad(const std::string& text, const std::string& detail) {
  absl::StatusOr<LoaderState> decoded = DecodeLoaderState(text);
  ASSERT_FALSE(decoded.ok()) << text;
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, decoded.status().code());
  EXPECT_THAT(
      std::string(decoded.status().message()),
      AllOf(HasSubstr("loader state \"" + text + "\": "), HasSubstr(detail)));
}

TEST(LoaderState, DecodeErrors) {
  ExpectBad("seed=1 epoch=2 position=3", "no dataset_size");
  ExpectBad("seed=1 epoch=2 position=3 dataset_size=10 shuffle=1",
            "unknown field shuffle");
  ExpectBad("seed=1 seed=2 epoch=2 position=3 dataset_size=10",
            "seed given twice");
  ExpectBad("seed=x epoch=2 position=3 dataset_size=10",
            "seed \"x\" is not a number");
  ExpectBad("seed=-1 epoch=2 position=3 dataset_size=10",
            "seed \"-1\" is not a number");
  ExpectBad("seed=1 epoch=2 position=30 dataset_size=10",
            "0 <= position <= dataset_size");
  ExpectBad("seed=1 epoch=-2 position=3 dataset_size=10", "epoch >= 0");
  ExpectBad("garbage", "\"garbage\" is not name=value");
}

}  // namespace
}  // namespace kindling::data
