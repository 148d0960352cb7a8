// Tests of the JSON reader and the safetensors header reader/writer.
#include "kindling/io/safetensors.h"

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/io/convert.h"
#include "kindling/io/json.h"
#include "kindling/tensor/half.h"

namespace kindling::io {
namespace {

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

std::span<const uint8_t> Bytes(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// A file of `header` JSON (length-prefixed) followed by `data_size` zeros.
std::string FileWithHeader(const std::string& header, size_t data_size) {
  std::string file(8, '\0');
  uint64_t length = header.size();
  std::memcpy(file.data(), &length, 8);
  return file + header + std::string(data_size, '\0');
}

TEST(JsonTest, ParsesNestedObjectsInOrder) {
  absl::StatusOr<JsonValue> value =
      ParseJson(R"({"b": [1, -2, 30], "a": {"x": "y"}})");
  ASSERT_TRUE(value.ok()) << value.status();
  ASSERT_EQ(2u, value->keys.size());
  EXPECT_EQ("b", value->keys[0]);
  EXPECT_EQ(30u, value->Find("b")->array[2].integer);
  EXPECT_TRUE(value->Find("b")->array[1].negative);
  EXPECT_EQ("y", value->Find("a")->Find("x")->string);
}

TEST(JsonTest, DecodesEscapesAndSurrogatePairs) {
  absl::StatusOr<JsonValue> value =
      ParseJson(R"("a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00")");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ("a\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80", value->string);
}

TEST(JsonTest, RejectsLoneSurrogate) {
  EXPECT_EQ("byte 7: high surrogate not followed by a low surrogate",
            Message(ParseJson(R"("\ud83d")").status()));
  EXPECT_EQ("byte 7: lone low surrogate in \\u escape",
            Message(ParseJson(R"("\ude00")").status()));
}

TEST(JsonTest, RejectsInvalidUtf8) {
  EXPECT_EQ("byte 2: invalid UTF-8",
            Message(ParseJson("\"a\xc0\xaf\"").status()));  // overlong '/'
  EXPECT_EQ("byte 1: invalid UTF-8",
            Message(ParseJson("\"\xed\xa0\x80\"").status()));  // surrogate
  EXPECT_EQ("byte 1: invalid UTF-8",
            Message(ParseJson("\"\xf4\x90\x80\x80\"").status()));  // >10FFFF
}

TEST(JsonTest, RejectsDuplicateKeys) {
  EXPECT_EQ("byte 9: duplicate key \"a\"",
            Message(ParseJson(R"({"a": 1, "a": 2})").status()));
}

TEST(JsonTest, RejectsFloatsLiteralsAndTrailingText) {
  EXPECT_FALSE(ParseJson("1.5").ok());
  EXPECT_FALSE(ParseJson("1e3").ok());
  EXPECT_FALSE(ParseJson("true").ok());
  EXPECT_FALSE(ParseJson("null").ok());
  EXPECT_FALSE(ParseJson("01").ok());
  EXPECT_EQ("byte 3: unexpected text after the value",
            Message(ParseJson("{} x").status()));
  EXPECT_FALSE(ParseJson("18446744073709551616").ok());
  EXPECT_TRUE(ParseJson("18446744073709551615").ok());
}

TEST(JsonTest, LimitsNesting) {
  std::string deep(kMaxJsonDepth + 1, '[');
  deep += std::string(kMaxJsonDepth + 1, ']');
  EXPECT_EQ("byte 16: nesting deeper than 16 levels",
            Message(ParseJson(deep).status()));
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
}

TEST(JsonTest, LimitsTheNumberOfValues) {
  // "[0,0,0]" is four values: the array and its three elements.
  EXPECT_TRUE(ParseJson("[0,0,0]", 4).ok());
  EXPECT_EQ("byte 5: too many JSON values (more than 3)",
            Message(ParseJson("[0,0,0]", 3).status()));
  EXPECT_EQ("byte 0: too many JSON values (more than 0)",
            Message(ParseJson("{}", 0).status()));
}

std::vector<uint8_t> RawFile(const std::string& header, size_t data_bytes = 0) {
  std::vector<uint8_t> file(8);
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) file[i] = static_cast<uint8_t>(length >> (8 * i));
  file.insert(file.end(), header.begin(), header.end());
  file.resize(file.size() + data_bytes, 0);
  return file;
}

TEST(SafetensorsTest, RejectsAHeaderWithTooManyJsonValues) {
  // Each JsonValue is ~128 bytes, so without the budget this 4 MB header
  // would allocate ~256 MB (and a 100 MB one ~6 GB).
  std::string header = R"({"__metadata__":{},"x":[)";
  for (size_t i = 0; i <= kMaxJsonValues; ++i) header += "0,";
  header.back() = ']';
  header += "}";
  absl::StatusOr<SafetensorsHeader> parsed =
      ParseSafetensors(RawFile(header), "bomb.safetensors");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, parsed.status().code());
  EXPECT_THAT(Message(parsed.status()),
              ::testing::StartsWith("bomb.safetensors: header is not valid "
                                    "JSON: byte "));
  EXPECT_THAT(Message(parsed.status()),
              ::testing::HasSubstr("too many JSON values"));
}

TEST(SafetensorsTest, RejectsARankAboveTheLimit) {
  std::string dims = "1";
  for (size_t i = 1; i < kMaxTensorRank + 1; ++i) dims += ",1";
  absl::StatusOr<SafetensorsHeader> parsed =
      ParseSafetensors(RawFile(R"({"w":{"dtype":"U8","shape":[)" + dims +
                                   R"(],"data_offsets":[0,1]}})",
                               1),
                       "f");
  EXPECT_EQ(
      "f: tensor \"w\": \"shape\" has 65 dimensions, more than the limit of 64",
      Message(parsed.status()));
  // Exactly kMaxTensorRank is fine.
  dims = "1";
  for (size_t i = 1; i < kMaxTensorRank; ++i) dims += ",1";
  EXPECT_TRUE(ParseSafetensors(RawFile(R"({"w":{"dtype":"U8","shape":[)" +
                                           dims + R"(],"data_offsets":[0,1]}})",
                                       1),
                               "f")
                  .ok());
}

TEST(SafetensorsTest, EmptyShapeWithHugeExtentsHasZeroElements) {
  // 2^62 * 4 overflows int64 before the 0 is reached; the tensor is empty.
  absl::StatusOr<SafetensorsHeader> parsed = ParseSafetensors(
      RawFile(
          R"({"w":{"dtype":"F32","shape":[4611686018427387904,4,0],"data_offsets":[0,0]}})"),
      "f");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const TensorInfo* w = parsed->Find("w");
  ASSERT_NE(nullptr, w);
  EXPECT_EQ(0, w->num_elements());
  EXPECT_EQ(0u, w->nbytes());
  // The non-empty overflowing shape is rejected with a clear error.
  parsed = ParseSafetensors(
      RawFile(
          R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})"),
      "f");
  EXPECT_EQ(
      "f: tensor \"w\": shape [4611686018427387904, 4] x F32 overflows 64 bits",
      Message(parsed.status()));
}

TEST(JsonTest, WritesEscapedStrings) {
  std::string out;
  AppendJsonString(out, "a\"b\\c\n\x01");
  EXPECT_EQ(R"("a\"b\\c\u000a\u0001")", out);
  EXPECT_EQ("a\"b\\c\n\x01", ParseJson(out)->string);
}

TEST(SafetensorsTest, EncodedHeaderIsPaddedSortedAndParses) {
  std::vector<TensorSpec> specs = {
      {"b.small", SafetensorsDType::kF16, {3}},
      {"a.big", SafetensorsDType::kF64, {2, 2}},
      {"c.mid", SafetensorsDType::kF32, {5}},
  };
  SortForAlignment(specs);
  EXPECT_EQ("a.big", specs[0].name);
  EXPECT_EQ("c.mid", specs[1].name);
  EXPECT_EQ("b.small", specs[2].name);
  uint64_t data_size = 0;
  absl::StatusOr<std::string> header =
      EncodeSafetensorsHeader(specs, {{"k", "v"}}, &data_size);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(32u + 20u + 6u, data_size);
  EXPECT_EQ(0u, header->size() % 8);
  const std::string file = *header + std::string(data_size, '\x01');
  absl::StatusOr<SafetensorsHeader> parsed = ParseSafetensors(Bytes(file), "f");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(3u, parsed->tensors().size());
  const TensorInfo* mid = parsed->Find("c.mid");
  ASSERT_NE(nullptr, mid);
  EXPECT_EQ(32u, mid->begin);
  EXPECT_EQ(52u, mid->end);
  EXPECT_EQ(std::vector<int64_t>{5}, mid->shape);
  EXPECT_EQ(SafetensorsDType::kF32, mid->dtype);
  ASSERT_NE(nullptr, parsed->FindMetadata("k"));
  EXPECT_EQ("v", *parsed->FindMetadata("k"));
  EXPECT_EQ(0u, parsed->data_start() % 8);
}

TEST(SafetensorsTest, AcceptsEmptyTensorsAndNoMetadata) {
  const std::string file = FileWithHeader(
      R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},)"
      R"("s":{"dtype":"U8","shape":[],"data_offsets":[0,1]}})",
      1);
  absl::StatusOr<SafetensorsHeader> parsed = ParseSafetensors(Bytes(file), "f");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(0, parsed->Find("e")->num_elements());
  EXPECT_EQ(1, parsed->Find("s")->num_elements());
  EXPECT_TRUE(parsed->metadata().empty());
}

TEST(SafetensorsTest, RejectsTooShortFile) {
  EXPECT_EQ("m.st: file is 3 bytes, too short for the 8-byte header length",
            Message(ParseSafetensors(Bytes("abc"), "m.st").status()));
}

TEST(SafetensorsTest, RejectsHeaderPastEndOfFile) {
  std::string file = FileWithHeader("{}", 0);
  file[0] = 9;
  EXPECT_EQ("m.st: header length 9 runs past the end of the 10-byte file",
            Message(ParseSafetensors(Bytes(file), "m.st").status()));
}

TEST(SafetensorsTest, RejectsShapeSpanMismatchNamingTheKey) {
  const std::string file = FileWithHeader(
      R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4);
  EXPECT_EQ(
      "m.st: tensor \"w\": shape [2] of F32 needs 8 bytes but data_offsets "
      "[0, 4] span 4",
      Message(ParseSafetensors(Bytes(file), "m.st").status()));
}

TEST(SafetensorsTest, RejectsOverlapAndGap) {
  const std::string overlap =
      FileWithHeader(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                     R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                     6);
  EXPECT_EQ(
      "m.st: tensor \"b\": data_offsets [2, 6] overlap tensor \"a\", which "
      "ends at 4",
      Message(ParseSafetensors(Bytes(overlap), "m.st").status()));
  const std::string gap =
      FileWithHeader(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                     R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
                     6);
  EXPECT_EQ(
      "m.st: tensor \"b\": data_offsets [4, 6] leave a gap: the previous "
      "tensor ends at 2",
      Message(ParseSafetensors(Bytes(gap), "m.st").status()));
}

TEST(SafetensorsTest, RejectsTrailingData) {
  const std::string file = FileWithHeader(
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 3);
  EXPECT_EQ("m.st: tensors cover 2 bytes of the 3-byte data section",
            Message(ParseSafetensors(Bytes(file), "m.st").status()));
}

TEST(SafetensorsTest, RejectsUnknownDType) {
  const std::string file = FileWithHeader(
      R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,2]}})", 2);
  EXPECT_EQ("m.st: tensor \"a\": unknown dtype \"F31\"",
            Message(ParseSafetensors(Bytes(file), "m.st").status()));
}

TEST(SafetensorsTest, EncoderRejectsDuplicatesAndReservedNames) {
  uint64_t size;
  EXPECT_FALSE(EncodeSafetensorsHeader({{"a", SafetensorsDType::kF32, {1}},
                                        {"a", SafetensorsDType::kF32, {1}}},
                                       {}, &size)
                   .ok());
  EXPECT_FALSE(EncodeSafetensorsHeader(
                   {{"__metadata__", SafetensorsDType::kF32, {1}}}, {}, &size)
                   .ok());
}

TEST(ConvertTest, FloatConversionsRoundToNearestEven) {
  const float source[] = {1.0f, -2.5f, 65504.0f, 1e-8f};
  uint16_t half[4];
  ConvertElements(source, SafetensorsDType::kF32, half, SafetensorsDType::kF16,
                  4);
  EXPECT_EQ(FloatToHalfBits(1.0f), half[0]);
  EXPECT_EQ(0x7bff, half[2]);
  float back[4];
  ConvertElements(half, SafetensorsDType::kF16, back, SafetensorsDType::kF32,
                  4);
  EXPECT_EQ(-2.5f, back[1]);
  uint16_t bf16[4];
  ConvertElements(source, SafetensorsDType::kF32, bf16, SafetensorsDType::kBF16,
                  4);
  EXPECT_EQ(0x3f80, bf16[0]);
}

TEST(ConvertTest, BoolBytesAreNormalizedWithNotEqualZero) {
  const uint8_t source[4] = {0, 1, 2, 0xff};
  uint8_t out[4] = {9, 9, 9, 9};
  ConvertElements(source, SafetensorsDType::kBool, out, SafetensorsDType::kBool,
                  4);
  EXPECT_EQ((std::vector<uint8_t>{0, 1, 1, 1}),
            std::vector<uint8_t>(out, out + 4));
}

TEST(ConvertTest, UnalignedSourceAndIntegers) {
  alignas(8) uint8_t buffer[9] = {};
  const int64_t values[] = {-1};
  std::memcpy(buffer + 1, values, 8);
  int32_t out = 0;
  ConvertElements(buffer + 1, SafetensorsDType::kI64, &out,
                  SafetensorsDType::kI32, 1);
  EXPECT_EQ(-1, out);
  EXPECT_FALSE(CanConvert(SafetensorsDType::kF32, SafetensorsDType::kI64));
  EXPECT_TRUE(CanConvert(SafetensorsDType::kU16, SafetensorsDType::kI64));
}

}  // namespace
}  // namespace kindling::io
