#include "kindling/tensor/dtype.h"

#include <cstdint>
#include <type_traits>

#include "gtest/gtest.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/half.h"

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

// SizeOfDispatched() is sizeof the type DispatchDType<kSet> picks.
template <DTypeSet kSet>
size_t SizeOfDispatched(DType dtype) {
  return DispatchDType<kSet>(dtype, "test kernel",
                             []<class T>() { return sizeof(T); });
}

TEST(DispatchDTypeTest, PicksTheStorageTypeOfEveryDType) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                      DType::kI64, DType::kI32, DType::kU8, DType::kBool}) {
    EXPECT_EQ(DTypeSize(dtype), SizeOfDispatched<kAllDTypes>(dtype))
        << DTypeName(dtype);
  }
  EXPECT_TRUE(DispatchDType(
      DType::kBF16, []<class T>() { return std::is_same_v<T, BFloat16>; }));
  EXPECT_TRUE(DispatchDType<kIntegerDTypes>(DType::kI32, "test", []<class T>() {
    return std::is_same_v<T, int32_t>;
  }));
}

TEST(DispatchDTypeTest, SetsHoldTheirDTypes) {
  EXPECT_EQ("f32, f64", DTypeSetNames(kF32F64));
  EXPECT_EQ("f32, f16, bf16, f64", DTypeSetNames(kFloatingDTypes));
  EXPECT_EQ("f32, f64, i64, i32, u8", DTypeSetNames(kArithmeticDTypes));
  EXPECT_EQ(0u, kNumericDTypes & DTypeBit(DType::kBool));
}

TEST(DispatchDTypeDeathTest, DTypeOutsideTheSetNamesKernelAndSet) {
  EXPECT_DEATH(SizeOfDispatched<kF32F64>(DType::kF16),
               "test kernel: no kernel for dtype f16 \\(it takes f32, f64\\)");
  EXPECT_DEATH(SizeOfDispatched<kNumericDTypes>(DType::kBool),
               "test kernel: no kernel for dtype bool");
}

}  // namespace
}  // namespace kindling
