// The restricted unpickler on hand-written pickles: what a state_dict uses
// works, and everything else is refused with its byte offset.
#include "kindling/io/pickle.h"

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::kindling::io::PickleValue;
using ::kindling::io::Unpickle;
using ::testing::HasSubstr;

// B() spells pickle bytes: characters and numbers alike, zeros included.
std::string B(std::initializer_list<int> bytes) {
  std::string out;
  for (int byte : bytes) out.push_back(static_cast<char>(byte));
  return out;
}

absl::StatusOr<PickleValue> RunPickle(const std::string& pickle) {
  return Unpickle(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(pickle.data()),
                               pickle.size()),
      "test.pkl");
}

std::string Error(const std::string& pickle) {
  absl::StatusOr<PickleValue> value = RunPickle(pickle);
  EXPECT_FALSE(value.ok());
  return value.ok() ? "" : std::string(value.status().message());
}

TEST(PickleTest, ReadsScalarsContainersAndTheMemo) {
  // t = (1, -2, 300, True, None); {'a': t, 'b': [2.5, 'x', t]}, protocol 2.
  // clang-format off
  const std::string pickle = B({
      0x80, 2, '}', 'q', 0, '(',                          // dict, memo 0, mark
      'X', 1, 0, 0, 0, 'a', '(',                          // 'a', mark
      'K', 1, 'J', 0xfe, 0xff, 0xff, 0xff, 'M', 0x2c, 1,  // 1, -2, 300
      0x88, 'N', 't', 'q', 1,                             // True, None: t
      'X', 1, 0, 0, 0, 'b', ']', '(',                     // 'b', list, mark
      'G', 0x40, 4, 0, 0, 0, 0, 0, 0,                     // 2.5
      0x8c, 1, 'x', 'h', 1, 'e', 'u', '.'});              // 'x', t
  // clang-format on
  absl::StatusOr<PickleValue> value = RunPickle(pickle);
  ASSERT_TRUE(value.ok()) << value.status();
  ASSERT_EQ(PickleValue::Kind::kDict, value->kind());
  ASSERT_EQ(2u, value->entries().size());
  EXPECT_EQ("a", value->entries()[0].first.string());
  const PickleValue& tuple = value->entries()[0].second;
  ASSERT_EQ(PickleValue::Kind::kTuple, tuple.kind());
  ASSERT_EQ(5u, tuple.items().size());
  EXPECT_EQ(1, tuple.items()[0].integer());
  EXPECT_EQ(-2, tuple.items()[1].integer());
  EXPECT_EQ(300, tuple.items()[2].integer());
  EXPECT_TRUE(tuple.items()[3].boolean());
  EXPECT_EQ(PickleValue::Kind::kNone, tuple.items()[4].kind());
  const PickleValue& list = value->entries()[1].second;
  ASSERT_EQ(3u, list.items().size());
  EXPECT_EQ(2.5, list.items()[0].floating());
  EXPECT_EQ("x", list.items()[1].string());
  EXPECT_EQ(-2, list.items()[2].items()[1].integer());  // the same tuple
}

TEST(PickleTest, RefusesGlobalsAStateDictDoesNotName) {
  EXPECT_THAT(Error(B({0x80, 2}) + "cos\nsystem\n."),
              HasSubstr("test.pkl: byte 2: global 'os.system' is not part of "
                        "a saved state_dict"));
  EXPECT_THAT(Error("cbuiltins\neval\n."), HasSubstr("'builtins.eval'"));
  EXPECT_THAT(Error("ctorch\nload\n."), HasSubstr("'torch.load'"));
}

TEST(PickleTest, RefusesOpcodesAStateDictDoesNotUse) {
  // INST ('i') would call a class by name.
  EXPECT_THAT(Error(B({0x80, 2}) + "ios\nsystem\n."),
              HasSubstr("byte 2: opcode 0x69 is not one a saved state_dict "
                        "uses"));
}

TEST(PickleTest, RefusesCyclesAndDeepNesting) {
  // l = []; l.append(l)
  EXPECT_THAT(Error(B({']', 'q', 0, 'h', 0, 'a', '.'})),
              HasSubstr("inside itself"));
  // a = []; b = [a]; a.append(1): a is inside b, so it may not change.
  EXPECT_THAT(
      Error(B({']', 'q', 0, ']', 'h', 0, 'a', 'h', 0, 'K', 1, 'a', '.'})),
      HasSubstr("already inside another container"));
  std::string deep(70, ']');
  deep += std::string(69, 'a') + ".";
  EXPECT_THAT(Error(deep), HasSubstr("nest deeper than 64 levels"));
}

TEST(PickleTest, RefusesTruncatedAndUnbalancedPickles) {
  EXPECT_THAT(Error(B({0x80, 2, '}'})), HasSubstr("ends before STOP"));
  EXPECT_THAT(Error(B({'X', 0xff, 0, 0, 0, 'a', 'b'})), HasSubstr("truncated"));
  EXPECT_THAT(Error(B({'K', 1, 'K', 2, '.'})), HasSubstr("leaves 2 values"));
  EXPECT_THAT(Error(B({'h', 5, '.'})),
              HasSubstr("memo entry 5 was never stored"));
  EXPECT_THAT(Error("a."), HasSubstr("pops an empty stack"));
}

}  // namespace
