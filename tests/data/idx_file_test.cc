#include "kindling/data/idx_file.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/tensor/tensor.h"
#include "tests/data/idx_test_files.h"

namespace kindling::data {
namespace {

using ::kindling::data::testing::Gzip;
using ::kindling::data::testing::IdxHeader;
using ::kindling::data::testing::TestPath;
using ::kindling::data::testing::U8Idx;
using ::kindling::data::testing::WriteFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using IntVector = Tensor<1, Int>;
using IntMatrix = Tensor<2, Int>;

std::string BigEndian(const void* value, size_t size) {
  std::string bytes(static_cast<const char*>(value), size);
  return std::string(bytes.rbegin(), bytes.rend());
}

TEST(ReadIdxFile, ReadsPlainU8Images) {
  const std::string path = WriteFile("images.idx", U8Idx({2, 2, 3}));
  absl::StatusOr<IdxArray> array = ReadIdxFile(path);
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(IdxElementType::kU8, array->element_type);
  EXPECT_EQ((Shape{2, 2, 3}), array->shape);
  EXPECT_EQ(0x00000803u, array->magic());
  EXPECT_THAT(array->bytes, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
}

TEST(ReadIdxFile, ReadsGzipFileLikePlainFile) {
  const std::string plain = U8Idx({300, 7});
  const std::string path = WriteFile("labels.idx.gz", Gzip(plain));
  absl::StatusOr<IdxArray> array = ReadIdxFile(path);
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ((Shape{300, 7}), array->shape);
  EXPECT_EQ(std::vector<uint8_t>(plain.begin() + 12, plain.end()),
            array->bytes);
}

TEST(ReadIdxFile, ReadsRankOneLabels) {
  absl::StatusOr<IdxArray> array =
      ReadIdxFile(WriteFile("labels.idx", U8Idx({5})));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(0x00000801u, array->magic());
  EXPECT_THAT(array->bytes, ElementsAre(0, 1, 2, 3, 4));
}

TEST(ReadIdxFile, ReadsHigherRanks) {
  absl::StatusOr<IdxArray> array =
      ReadIdxFile(WriteFile("rank5.idx", U8Idx({1, 2, 1, 3, 2})));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ((Shape{1, 2, 1, 3, 2}), array->shape);
  EXPECT_EQ(12u, array->bytes.size());
}

TEST(ReadIdxFile, ReadsEmptyArray) {
  absl::StatusOr<IdxArray> array =
      ReadIdxFile(WriteFile("empty.idx", U8Idx({0, 28, 28})));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ((Shape{0, 28, 28}), array->shape);
  EXPECT_TRUE(array->bytes.empty());
}

TEST(ReadIdxFile, ConvertsI8AndI16ToI32Tensors) {
  const int16_t i16[] = {258, -2};
  const std::string i16_file =
      IdxHeader(0x0B, {2}) + BigEndian(&i16[0], 2) + BigEndian(&i16[1], 2);
  absl::StatusOr<IdxArray> array = ReadIdxFile(WriteFile("i16.idx", i16_file));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(IdxElementType::kI16, array->element_type);
  const TensorBase tensor = IdxArrayToTensor(*array);
  EXPECT_EQ(DType::kI32, tensor.dtype());
  EXPECT_THAT(IntVector(tensor).to_data<int32_t>(), ElementsAre(258, -2));

  const std::string i8_file = IdxHeader(0x09, {3}) + "\xff\x05\x80";
  array = ReadIdxFile(WriteFile("i8.idx", i8_file));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_THAT(IntVector(IdxArrayToTensor(*array)).to_data<int32_t>(),
              ElementsAre(-1, 5, -128));
}

TEST(ReadIdxFile, ConvertsBigEndianI32F32F64) {
  const int32_t i32 = -123456789;
  const float f32 = 1.5e-3f;
  const double f64 = -2.25e100;
  absl::StatusOr<IdxArray> array = ReadIdxFile(WriteFile(
      "i32.idx", IdxHeader(0x0C, {1, 1}) + BigEndian(&i32, sizeof(i32))));
  ASSERT_TRUE(array.ok()) << array.status();
  const TensorBase i32_tensor = IdxArrayToTensor(*array);
  EXPECT_EQ(DType::kI32, i32_tensor.dtype());
  EXPECT_EQ(i32, IntMatrix(i32_tensor).item<int32_t>());

  array = ReadIdxFile(WriteFile(
      "f32.idx", Gzip(IdxHeader(0x0D, {1}) + BigEndian(&f32, sizeof(f32)))));
  ASSERT_TRUE(array.ok()) << array.status();
  const TensorBase f32_tensor = IdxArrayToTensor(*array);
  EXPECT_EQ(DType::kF32, f32_tensor.dtype());
  EXPECT_EQ(f32, Tensor<1>(f32_tensor).item<float>());

  array = ReadIdxFile(WriteFile(
      "f64.idx", IdxHeader(0x0E, {1}) + BigEndian(&f64, sizeof(f64))));
  ASSERT_TRUE(array.ok()) << array.status();
  const TensorBase f64_tensor = IdxArrayToTensor(*array);
  EXPECT_EQ(DType::kF64, f64_tensor.dtype());
  EXPECT_EQ(f64, Tensor<1>(f64_tensor).item<double>());
}

TEST(IdxArrayToTensor, KeepsU8AndShape) {
  absl::StatusOr<IdxArray> array =
      ReadIdxFile(WriteFile("u8.idx", U8Idx({2, 3})));
  ASSERT_TRUE(array.ok()) << array.status();
  const IntMatrix tensor(IdxArrayToTensor(*array));
  EXPECT_EQ(DType::kU8, tensor.dtype());
  EXPECT_EQ((Shape{2, 3}), tensor.shape());
  EXPECT_THAT(tensor.to_data<int64_t>(), ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST(IdxElementType, SizesAndNames) {
  EXPECT_EQ(1u, IdxElementSize(IdxElementType::kI8));
  EXPECT_EQ(2u, IdxElementSize(IdxElementType::kI16));
  EXPECT_EQ(8u, IdxElementSize(IdxElementType::kF64));
  EXPECT_EQ("f32", IdxElementTypeName(IdxElementType::kF32));
}

// --- Errors ----------------------------------------------------------------

void ExpectError(absl::StatusCode code, const std::string& path,
                 const std::string& detail) {
  absl::StatusOr<IdxArray> array = ReadIdxFile(path);
  ASSERT_FALSE(array.ok()) << path << " read without error";
  EXPECT_EQ(code, array.status().code()) << array.status();
  EXPECT_THAT(std::string(array.status().message()),
              AllOf(HasSubstr(path), HasSubstr(detail)));
}

TEST(ReadIdxFileError, MissingFile) {
  ExpectError(absl::StatusCode::kNotFound, TestPath("no-such-file.idx"),
              "No such file");
}

TEST(ReadIdxFileError, Directory) {
  ExpectError(absl::StatusCode::kInvalidArgument, ::testing::TempDir(),
              "not a regular file");
}

TEST(ReadIdxFileError, FileShorterThanMagic) {
  ExpectError(absl::StatusCode::kDataLoss,
              WriteFile("short.idx", std::string("\0\0", 2)),
              "truncated: the file ends after 2 bytes");
}

TEST(ReadIdxFileError, TruncatedDimensions) {
  const std::string header = IdxHeader(0x08, {60000, 28, 28});
  ExpectError(absl::StatusCode::kDataLoss,
              WriteFile("dims.idx", header.substr(0, 10)),
              "ends inside the 3 dimension sizes");
}

TEST(ReadIdxFileError, FewerElementsThanDimensions) {
  const std::string bytes = U8Idx({4, 5});
  ExpectError(absl::StatusCode::kDataLoss,
              WriteFile("truncated.idx", bytes.substr(0, bytes.size() - 3)),
              "the header describes [4, 5] u8 (20 data bytes) but the file "
              "ends after 17 of them");
}

TEST(ReadIdxFileError, HugeDimensionsAndFewBytesDoNotAllocateThem) {
  // 65535^3 f64 is 2 PiB: no overflow, so the reader starts reading and
  // reports the truncation after its first 64 MiB chunk.
  ExpectError(absl::StatusCode::kDataLoss,
              WriteFile("huge.idx", IdxHeader(0x0E, {65535, 65535, 65535})),
              "ends after 0 of them");
}

TEST(ReadIdxFileError, TruncatedGzipStream) {
  const std::string gzip = Gzip(U8Idx({100, 50}));
  const std::string path =
      WriteFile("cut.idx.gz", gzip.substr(0, gzip.size() / 2));
  ExpectError(absl::StatusCode::kDataLoss, path, "truncated");
  ExpectError(absl::StatusCode::kDataLoss, path, "gzip stream is cut short");
}

TEST(ReadIdxFileError, GzipStreamCutInsideItsChecksum) {
  const std::string gzip = Gzip(U8Idx({100, 50}));
  ExpectError(absl::StatusCode::kDataLoss,
              WriteFile("trailer.idx.gz", gzip.substr(0, gzip.size() - 3)),
              "the gzip stream ends before its checksum");
}

TEST(ReadIdxFileError, CorruptGzipChecksum) {
  std::string gzip = Gzip(U8Idx({100, 50}));
  gzip[gzip.size() - 6] ^= 0x5A;  // inside the CRC-32 of the trailer
  ExpectError(absl::StatusCode::kDataLoss, WriteFile("crc.idx.gz", gzip),
              "corrupt gzip stream");
}

TEST(ReadIdxFileError, BadMagic) {
  std::string bytes = U8Idx({2});
  bytes[0] = 0x12;
  ExpectError(absl::StatusCode::kInvalidArgument, WriteFile("magic.idx", bytes),
              "bad magic number 0x12000801");
}

TEST(ReadIdxFileError, UnknownElementType) {
  ExpectError(absl::StatusCode::kInvalidArgument,
              WriteFile("type.idx", IdxHeader(0x0A, {1}) + "x"),
              "unknown IDX element type 0x0a in magic number 0x00000a01");
}

TEST(ReadIdxFileError, RankZero) {
  ExpectError(absl::StatusCode::kInvalidArgument,
              WriteFile("rank0.idx", IdxHeader(0x08, {}) + "x"),
              "IDX rank 0 in magic number 0x00000800 is outside 1..8");
}

TEST(ReadIdxFileError, AbsurdRank) {
  ExpectError(absl::StatusCode::kInvalidArgument,
              WriteFile("rank200.idx", IdxHeader(0x08, {1}, /*rank=*/200)),
              "IDX rank 200");
}

TEST(ReadIdxFileError, SizeOverflow) {
  ExpectError(
      absl::StatusCode::kInvalidArgument,
      WriteFile("overflow.idx",
                IdxHeader(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF})),
      "IDX shape [4294967295, 4294967295, 4294967295] of f64 elements is "
      "more than 2^63 bytes");
}

TEST(ReadIdxFileError, TrailingBytes) {
  ExpectError(absl::StatusCode::kInvalidArgument,
              WriteFile("trailing.idx", U8Idx({2, 2}) + "extra"),
              "more bytes follow the 4 data bytes its header describes");
}

}  // namespace
}  // namespace kindling::data
