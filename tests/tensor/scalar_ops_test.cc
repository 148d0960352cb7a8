// Scalar ops (ops::BinaryScalar / ScalarBinary, Backend::BinaryScalar):
// bit-identical to Binary() with a rank-0 operand holding the scalar, for
// every op and dtype, including scalars that round or saturate in the
// tensor's dtype; one kernel and no allocation but the result on a device
// (the fake cuda device counts both); the compute-dtype decision for 16-bit
// floats; and the checks Binary() makes.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/op_checks.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/support/fake_cuda.h"

namespace kindling {
namespace {

using testing::GetFakeCudaCounters;
using testing::ResetFakeCudaCounters;

const Device kCpu = Device::Cpu();
const Device kCuda = Device::Cuda(0);

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const BinaryOp kArithmeticOps[] = {BinaryOp::kAdd,     BinaryOp::kSub,
                                   BinaryOp::kMul,     BinaryOp::kDiv,
                                   BinaryOp::kPow,     BinaryOp::kMaximum,
                                   BinaryOp::kMinimum, BinaryOp::kReluBackward};
const BinaryOp kComparisons[] = {BinaryOp::kEqual,   BinaryOp::kNotEqual,
                                 BinaryOp::kLess,    BinaryOp::kLessEqual,
                                 BinaryOp::kGreater, BinaryOp::kGreaterEqual};
const DType kNumericDTypes[] = {DType::kF32,  DType::kF64, DType::kF16,
                                DType::kBF16, DType::kI64, DType::kI32,
                                DType::kU8};

// Scalars that are exact, round (0.1 in f16/bf16, 300.7 in integers),
// saturate (300.7 and -7 in u8, 1e40 in f32 and the 16-bit floats, 3e9 in
// i32) or are not numbers (NaN: 0 in integers).
const double kScalars[] = {2.0,  -1.5, 0.1, 300.7, -7.0,
                           1e40, 3e9,  0.0, kInf,  kNaN};

// Values(): a [4, 6] tensor of `dtype` holding negatives, zeros, fractions,
// a value equal to a scalar (2) and, for floats, a NaN and an infinity.
TensorBase Values(DType dtype, const Device& device = kCpu) {
  std::vector<double> values = {-3.25, -1, 0,  0.1,   0.5, 1,     2,    2.5,
                                3,     7,  10, 100.5, -50, 1e3,   -0.0, 0.75,
                                4,     -2, 2,  1.5,   9,   -1e-3, 255,  6};
  if (dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kF16 ||
      dtype == DType::kBF16) {
    values[5] = kNaN;
    values[13] = -kInf;
  }
  return TensorBase::FromHost(values.data(), {4, 6}, DType::kF64, kCpu)
      .To(dtype)
      .ToDevice(device);
}

TensorBase Bools(const Device& device = kCpu) {
  const bool values[] = {true, false, false, true, true, false};
  return TensorBase::FromHost(values, {6}, DType::kBool, kCpu).ToDevice(device);
}

std::vector<uint8_t> Bytes(const TensorBase& tensor) {
  std::vector<uint8_t> bytes(tensor.numel() * tensor.element_size());
  tensor.ToDevice(kCpu).Contiguous().CopyToHost(bytes.data());
  return bytes;
}

std::string Describe(BinaryOp op, DType dtype, double scalar, bool lhs) {
  return std::string(kindling::BinaryOpName(op)) + " " +
         std::string(DTypeName(dtype)) + " scalar " + std::to_string(scalar) +
         (lhs ? " on the left" : " on the right");
}

// RankZeroOp(): the reference, Binary() with a filled rank-0 operand.
TensorBase RankZeroOp(BinaryOp op, const TensorBase& tensor, double scalar,
                      bool scalar_is_lhs) {
  const TensorBase constant =
      ops::Full(Shape{}, scalar, tensor.dtype(), tensor.device());
  return scalar_is_lhs ? ops::Binary(op, constant, tensor)
                       : ops::Binary(op, tensor, constant);
}

TensorBase ScalarOp(BinaryOp op, const TensorBase& tensor, double scalar,
                    bool scalar_is_lhs) {
  return scalar_is_lhs ? ops::ScalarBinary(op, scalar, tensor)
                       : ops::BinaryScalar(op, tensor, scalar);
}

void ExpectSameAsRankZero(BinaryOp op, const TensorBase& tensor,
                          double scalar) {
  for (bool lhs : {false, true}) {
    const TensorBase expected = RankZeroOp(op, tensor, scalar, lhs);
    const TensorBase actual = ScalarOp(op, tensor, scalar, lhs);
    const std::string what = Describe(op, tensor.dtype(), scalar, lhs);
    ASSERT_EQ(expected.shape(), actual.shape()) << what;
    ASSERT_EQ(expected.dtype(), actual.dtype()) << what;
    EXPECT_EQ(Bytes(expected), Bytes(actual)) << what;
  }
}

TEST(ScalarOpTest, ArithmeticIsBitIdenticalToARankZeroOperand) {
  for (DType dtype : kNumericDTypes) {
    const TensorBase x = Values(dtype);
    for (BinaryOp op : kArithmeticOps) {
      for (double scalar : kScalars) ExpectSameAsRankZero(op, x, scalar);
    }
  }
}

TEST(ScalarOpTest, ComparisonsAreBitIdenticalAndWriteBool) {
  for (DType dtype : kNumericDTypes) {
    const TensorBase x = Values(dtype);
    for (BinaryOp op : kComparisons) {
      for (double scalar : kScalars) ExpectSameAsRankZero(op, x, scalar);
    }
    EXPECT_EQ(DType::kBool, ops::BinaryScalar(BinaryOp::kLess, x, 0).dtype());
  }
}

TEST(ScalarOpTest, BoolLogicalOpsAndEqualityTakeTheScalarAsNonZero) {
  const TensorBase x = Bools();
  for (BinaryOp op : {BinaryOp::kLogicalAnd, BinaryOp::kLogicalOr,
                      BinaryOp::kEqual, BinaryOp::kNotEqual}) {
    for (double scalar : {0.0, 1.0, 2.5, -0.0}) {
      ExpectSameAsRankZero(op, x, scalar);
    }
  }
  // 2.5 is true: x && 2.5 is x.
  EXPECT_EQ(Bytes(x), Bytes(ops::BinaryScalar(BinaryOp::kLogicalAnd, x, 2.5)));
}

TEST(ScalarOpTest, ScalarsRoundAndSaturateAsFullDoes) {
  // 300.7 into u8 saturates to 255; 1e40 into f32 is inf; 0.1 into f16 is
  // 0.0999755859375.
  const TensorBase zero_u8 = ops::Full({3}, 0, DType::kU8, kCpu);
  EXPECT_EQ((std::vector<uint8_t>{255, 255, 255}),
            Bytes(ops::BinaryScalar(BinaryOp::kAdd, zero_u8, 300.7)));
  const TensorBase one_f32 = ops::Full({2}, 1, DType::kF32, kCpu);
  std::vector<float> f32(2);
  ops::BinaryScalar(BinaryOp::kMul, one_f32, 1e40).CopyToHost(f32.data());
  EXPECT_EQ(std::numeric_limits<float>::infinity(), f32[0]);
  const TensorBase zero_f16 = ops::Full({2}, 0, DType::kF16, kCpu);
  std::vector<double> f64(2);
  ops::BinaryScalar(BinaryOp::kAdd, zero_f16, 0.1)
      .To(DType::kF64)
      .CopyToHost(f64.data());
  EXPECT_EQ(0.0999755859375, f64[0]);
  // 0.1 + 0.1 in f16: the scalar is rounded to f16 before the f32 add.
  const TensorBase tenth_f16 = ops::Full({2}, 0.1, DType::kF16, kCpu);
  ops::BinaryScalar(BinaryOp::kAdd, tenth_f16, 0.1)
      .To(DType::kF64)
      .CopyToHost(f64.data());
  EXPECT_EQ(HalfBitsToFloat(FloatToHalfBits(2 * 0.0999755859375f)), f64[0]);
}

TEST(ScalarOpTest, StridedAndEmptyInputs) {
  const TensorBase x = Values(DType::kF32).Transpose(0, 1).Slice(0, 1, 6, 2);
  for (BinaryOp op : kArithmeticOps) ExpectSameAsRankZero(op, x, -1.5);
  const TensorBase broadcast =
      ops::Full({1, 5}, 3, DType::kI32, kCpu).Expand({4, 5});
  ExpectSameAsRankZero(BinaryOp::kSub, broadcast, 10);
  const TensorBase empty = TensorBase::Empty({0, 3}, DType::kF32, kCpu);
  EXPECT_EQ(Shape({0, 3}), ops::BinaryScalar(BinaryOp::kMul, empty, 2).shape());
}

TEST(ScalarOpTest, BackendOutputMayAliasTheInput) {
  for (DType dtype :
       {DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kU8}) {
    for (BinaryOp op : kArithmeticOps) {
      for (bool lhs : {false, true}) {
        const TensorBase expected = RankZeroOp(op, Values(dtype), 2.5, lhs);
        const TensorBase inout = Values(dtype).Clone();
        GetBackend(kCpu).BinaryScalar(op, inout, inout, 2.5, lhs);
        EXPECT_EQ(Bytes(expected), Bytes(inout))
            << Describe(op, dtype, 2.5, lhs);
      }
    }
  }
}

TEST(ScalarOpTest, LargeContiguousInputsMatch) {
  // Above the parallel grain and the streaming-store threshold.
  const int64_t n = int64_t{3} << 20;
  const TensorBase x =
      ops::Full({n}, 1.25, DType::kF32, kCpu).Slice(0, 0, n, 1).Contiguous();
  ExpectSameAsRankZero(BinaryOp::kMul, x, 3.0);
  TensorBase inout = x.Clone();
  ops::BinaryScalarInPlace(BinaryOp::kMul, inout, 3.0);
  EXPECT_EQ(Bytes(RankZeroOp(BinaryOp::kMul, x, 3.0, false)), Bytes(inout));
}

TEST(ScalarOpTest, InPlaceMatchesBinaryInPlaceForEveryDType) {
  for (DType dtype : kNumericDTypes) {
    for (BinaryOp op : kArithmeticOps) {
      TensorBase expected = Values(dtype).Clone();
      ops::BinaryInPlace(op, expected, ops::Full(Shape{}, 0.1, dtype, kCpu));
      TensorBase actual = Values(dtype).Clone();
      ops::BinaryScalarInPlace(op, actual, 0.1);
      EXPECT_EQ(Bytes(expected), Bytes(actual))
          << Describe(op, dtype, 0.1, false) << " in place";
    }
  }
}

TEST(ScalarOpTest, AllocatesOnlyItsResultOnTheCpu) {
  const TensorBase x = Values(DType::kF32);
  ResetMemoryStats(kCpu);
  const TensorBase y = ops::BinaryScalar(BinaryOp::kMul, x, 2);
  const TensorBase z = ops::ScalarBinary(BinaryOp::kLess, 0, x);
  EXPECT_EQ(2, GetMemoryStats(kCpu).allocation_count);
}

// --- On a device: one kernel, no allocation but the result -----------------

TEST(ScalarOpDeviceTest, OneKernelAndOnlyTheOutputAllocated) {
  for (BinaryOp op :
       {BinaryOp::kMul, BinaryOp::kSub, BinaryOp::kPow, BinaryOp::kGreater}) {
    for (bool lhs : {false, true}) {
      const TensorBase x = Values(DType::kF32, kCuda);
      ResetFakeCudaCounters();
      const int64_t live_before = GetFakeCudaCounters().live_bytes;
      const TensorBase y = ScalarOp(op, x, 2.0, lhs);
      const testing::FakeCudaCounters after = GetFakeCudaCounters();
      const std::string what = Describe(op, DType::kF32, 2.0, lhs);
      EXPECT_EQ(1, after.kernel_calls) << what;
      EXPECT_EQ(0, after.h2d_bytes) << what;
      EXPECT_EQ(static_cast<int64_t>(y.numel() * y.element_size()),
                after.live_bytes - live_before)
          << what;
      EXPECT_EQ(Bytes(ScalarOp(op, Values(DType::kF32), 2.0, lhs)), Bytes(y))
          << what;
    }
  }
}

TEST(ScalarOpDeviceTest, InPlaceIsOneKernelAndAllocatesNothing) {
  TensorBase x = Values(DType::kF64, kCuda);
  ResetFakeCudaCounters();
  const int64_t live_before = GetFakeCudaCounters().live_bytes;
  ops::BinaryScalarInPlace(BinaryOp::kMul, x, 0.5);
  EXPECT_EQ(1, GetFakeCudaCounters().kernel_calls);
  EXPECT_EQ(live_before, GetFakeCudaCounters().live_bytes);
  EXPECT_EQ(Bytes(ops::BinaryScalar(BinaryOp::kMul, Values(DType::kF64), 0.5)),
            Bytes(x));
}

TEST(ScalarOpDeviceTest, HalfOnABackendWithoutHalfKernelsRoundTripsThroughF32) {
  // The fake runs the CPU kernels, which do no 16-bit arithmetic: an f16
  // scalar op there is convert, op, convert back (three kernels), and its
  // value is the CPU's.
  const TensorBase x = Values(DType::kF16, kCuda);
  ResetFakeCudaCounters();
  const TensorBase y = ops::BinaryScalar(BinaryOp::kAdd, x, 0.1);
  EXPECT_EQ(3, GetFakeCudaCounters().kernel_calls);
  EXPECT_EQ(DType::kF16, y.dtype());
  EXPECT_EQ(Bytes(ops::BinaryScalar(BinaryOp::kAdd, Values(DType::kF16), 0.1)),
            Bytes(y));
}

// --- The compute-dtype decision for 16-bit floats ----------------------------

TEST(ComputeDTypeTest, HalfStaysHalfOnlyOnANativeBackend) {
  using ops::internal::ComputeDType;
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    EXPECT_EQ(DType::kF32, ComputeDType(dtype));
    EXPECT_EQ(DType::kF32, ComputeDType(dtype, /*half_native=*/false));
    EXPECT_EQ(dtype, ComputeDType(dtype, /*half_native=*/true));
  }
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI64, DType::kI32,
                      DType::kU8, DType::kBool}) {
    EXPECT_EQ(dtype, ComputeDType(dtype, false));
    EXPECT_EQ(dtype, ComputeDType(dtype, true));
  }
}

TEST(ComputeDTypeTest, CpuAndFakeCudaComputeHalfInF32) {
  EXPECT_FALSE(GetBackend(kCpu).ComputesHalfNatively());
  EXPECT_FALSE(GetBackend(kCuda).ComputesHalfNatively());
  EXPECT_EQ(DType::kF32, ops::internal::ComputeDTypeOn(DType::kF16, kCpu));
  EXPECT_EQ(DType::kF32, ops::internal::ComputeDTypeOn(DType::kBF16, kCuda));
  EXPECT_EQ(DType::kI32, ops::internal::ComputeDTypeOn(DType::kI32, kCuda));
}

TEST(ComputeDTypeTest, ScalarAsStoredRoundsOnlyForSixteenBitFloats) {
  using ops::internal::ScalarAsStored;
  EXPECT_EQ(0.0999755859375, ScalarAsStored(0.1, DType::kF16));
  EXPECT_EQ(0.10009765625, ScalarAsStored(0.1, DType::kBF16));
  EXPECT_EQ(kInf, ScalarAsStored(70000, DType::kF16));
  EXPECT_EQ(70144, ScalarAsStored(70000, DType::kBF16));  // step 512
  EXPECT_TRUE(std::isnan(ScalarAsStored(kNaN, DType::kF16)));
  // Other dtypes convert in the backend.
  EXPECT_EQ(0.1, ScalarAsStored(0.1, DType::kF32));
  EXPECT_EQ(300.7, ScalarAsStored(300.7, DType::kU8));
}

// --- Bad operands: the checks Binary() makes
// ----------------------------------

TEST(ScalarOpDeathTest, ArithmeticOnBoolIsRefused) {
  const TensorBase x = Bools();
  EXPECT_DEATH((void)ops::BinaryScalar(BinaryOp::kAdd, x, 1),
               "add: arithmetic on bool tensors \\[6\\] and \\[\\]");
  EXPECT_DEATH((void)ops::ScalarBinary(BinaryOp::kMul, 2, x),
               "mul: arithmetic on bool tensors \\[\\] and \\[6\\]");
}

TEST(ScalarOpDeathTest, LogicalOpsNeedBool) {
  EXPECT_DEATH(
      (void)ops::BinaryScalar(BinaryOp::kLogicalAnd, Values(DType::kF32), 1),
      "logical_and: needs bool tensors, got f32");
}

TEST(ScalarOpDeathTest, UndefinedTensorAndInPlaceComparison) {
  EXPECT_DEATH((void)ops::BinaryScalar(BinaryOp::kSub, TensorBase(), 1),
               "sub: undefined tensor");
  TensorBase x = Values(DType::kF32);
  EXPECT_DEATH(ops::BinaryScalarInPlace(BinaryOp::kLess, x, 1),
               "less: has no in-place form");
}

}  // namespace
}  // namespace kindling
