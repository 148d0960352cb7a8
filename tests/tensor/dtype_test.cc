#include "kindling/tensor/dtype.h"

#include "gtest/gtest.h"

namespace kindling {
namespace {

TEST(DTypeTest, SizesInBytes) {
  EXPECT_EQ(4u, DTypeSize(DType::kF32));
  EXPECT_EQ(2u, DTypeSize(DType::kF16));
  EXPECT_EQ(2u, DTypeSize(DType::kBF16));
  EXPECT_EQ(8u, DTypeSize(DType::kF64));
  EXPECT_EQ(8u, DTypeSize(DType::kI64));
  EXPECT_EQ(4u, DTypeSize(DType::kI32));
  EXPECT_EQ(1u, DTypeSize(DType::kU8));
  EXPECT_EQ(1u, DTypeSize(DType::kBool));
}

TEST(DTypeTest, NamesRoundTripThroughParse) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                      DType::kI64, DType::kI32, DType::kU8, DType::kBool}) {
    auto parsed = ParseDType(DTypeName(dtype));
    ASSERT_TRUE(parsed.ok()) << DTypeName(dtype);
    EXPECT_EQ(dtype, *parsed);
  }
}

TEST(DTypeTest, ParseRejectsUnknownName) {
  EXPECT_FALSE(ParseDType("float32").ok());
}

TEST(DTypeTest, KindsAcceptTheirDTypes) {
  EXPECT_TRUE(DTypeMatchesKind<Float>(DType::kBF16));
  EXPECT_FALSE(DTypeMatchesKind<Float>(DType::kI32));
  EXPECT_TRUE(DTypeMatchesKind<Int>(DType::kU8));
  EXPECT_TRUE(DTypeMatchesKind<Bool>(DType::kBool));
  EXPECT_FALSE(DTypeMatchesKind<Int>(DType::kBool));
}

}  // namespace
}  // namespace kindling
