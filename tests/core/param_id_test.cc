#include "kindling/core/param_id.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kindling {
namespace {

using ::testing::HasSubstr;

TEST(ParamIdTest, NewIdsAreDistinct) {
  std::unordered_set<ParamId> ids;
  for (int i = 0; i < 10000; ++i) ids.insert(ParamId::New());
  EXPECT_EQ(10000u, ids.size());
}

TEST(ParamIdTest, ToStringIsSixteenLowercaseHexDigits) {
  EXPECT_EQ("00c0ffee12345678",
            ParamId::FromValue(0x00c0ffee12345678).ToString());
  EXPECT_EQ("0000000000000000", ParamId::FromValue(0).ToString());
  EXPECT_EQ("ffffffffffffffff", ParamId::FromValue(~uint64_t{0}).ToString());
}

TEST(ParamIdTest, StringRoundTrips) {
  for (int i = 0; i < 1000; ++i) {
    const ParamId id = ParamId::New();
    absl::StatusOr<ParamId> parsed = ParamId::Parse(id.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(id, *parsed);
  }
}

TEST(ParamIdTest, ParseAcceptsUppercase) {
  absl::StatusOr<ParamId> parsed = ParamId::Parse("00C0FFEE12345678");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(0x00c0ffee12345678u, parsed->value());
}

TEST(ParamIdTest, ParseRejectsEmptyText) {
  absl::StatusOr<ParamId> parsed = ParamId::Parse("");
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, parsed.status().code());
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("expected 16 hexadecimal digits, got 0 characters"));
}

TEST(ParamIdTest, ParseRejectsWrongLength) {
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            ParamId::Parse("abc").status().code());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            ParamId::Parse("00c0ffee123456789").status().code());
}

TEST(ParamIdTest, ParseRejectsNonHexCharacterAndNamesIt) {
  absl::StatusOr<ParamId> parsed = ParamId::Parse("00c0ffee1234567g");
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, parsed.status().code());
  EXPECT_THAT(parsed.status().message(), HasSubstr("\"00c0ffee1234567g\""));
  EXPECT_THAT(parsed.status().message(), HasSubstr("character 15"));
}

TEST(ParamIdTest, ParseRejectsPrefixesAndWhitespace) {
  EXPECT_FALSE(ParamId::Parse("0x0c0ffee1234567").ok());
  EXPECT_FALSE(ParamId::Parse(" 0c0ffee12345678").ok());
  EXPECT_FALSE(ParamId::Parse("-0c0ffee12345678").ok());
}

TEST(ParamIdTest, ParseEscapesBinaryGarbageAndCutsLongText) {
  const std::string garbage(std::string("\x01\xff\0z", 4) +
                            std::string(500, 'q'));
  absl::StatusOr<ParamId> parsed = ParamId::Parse(garbage);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("\\x01\\xff\\x00z"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("(504 bytes)"));
  EXPECT_LT(parsed.status().message().size(), 200u);
}

TEST(ParamIdTest, WorksAsFlatHashMapKey) {
  absl::flat_hash_map<ParamId, int> gradients;
  const ParamId a = ParamId::New();
  const ParamId b = ParamId::New();
  gradients[a] = 1;
  gradients[b] = 2;
  gradients[ParamId::FromValue(a.value())] += 10;
  EXPECT_EQ(2u, gradients.size());
  EXPECT_EQ(11, gradients.at(a));
  EXPECT_EQ(2, gradients.at(b));
}

TEST(ParamIdTest, OrdersByValue) {
  EXPECT_LT(ParamId::FromValue(1), ParamId::FromValue(2));
  EXPECT_NE(ParamId::FromValue(1), ParamId::FromValue(2));
}

}  // namespace
}  // namespace kindling
