// Tensor handles: creation, to_data, views without copies, memory accounting,
// borrowed storage and copy on write.
#include "kindling/tensor/tensor.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/memory_stats.h"

namespace kindling {
namespace {

int64_t LiveBytes() { return GetMemoryStats(Device::Cpu()).live_bytes; }

static_assert(Parameter<Tensor<2>>);
static_assert(Parameter<Tensor<1, Int>>);
static_assert(std::is_same_v<Tensor<2>::ShapeType, Shape>);
static_assert(std::is_same_v<Tensor<2>::DeviceType, Device>);

TEST(TensorCreationTest, FromDataRoundTrips) {
  const auto t = Tensor<2>::FromData<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ((Shape{2, 3}), t.shape());
  EXPECT_EQ(DType::kF32, t.dtype());
  EXPECT_EQ(Device::Cpu(), t.device());
  EXPECT_EQ((std::vector<float>{1, 2, 3, 4, 5, 6}), t.to_data<float>());
}

TEST(TensorCreationTest, FromDataOfEveryHostType) {
  EXPECT_EQ(DType::kF64, (Tensor<1>::FromData<double>({1.5}, {1}).dtype()));
  EXPECT_EQ(DType::kI32, (Tensor<1, Int>::FromData<int32_t>({7}, {1}).dtype()));
  EXPECT_EQ(DType::kU8, (Tensor<1, Int>::FromData<uint8_t>({7}, {1}).dtype()));
  const auto mask = Tensor<1, Bool>::FromData<bool>({true, false}, {2});
  EXPECT_EQ((std::vector<bool>{true, false}), mask.to_data<bool>());
}

TEST(TensorCreationTest, ZerosOnesFull) {
  EXPECT_EQ(std::vector<float>(6, 0.0f),
            (Tensor<2>::Zeros({2, 3}).to_data<float>()));
  EXPECT_EQ(std::vector<float>(4, 1.0f),
            (Tensor<1>::Ones({4}).to_data<float>()));
  EXPECT_EQ(std::vector<int64_t>(3, -7),
            (Tensor<1, Int>::Full({3}, -7).to_data<int64_t>()));
  EXPECT_EQ(
      (std::vector<double>{2.5}),
      (Tensor<0>::Full({}, 2.5, Device::Cpu(), DType::kF64).to_data<double>()));
}

TEST(TensorCreationTest, ArangeFloatAndInt) {
  EXPECT_EQ((std::vector<float>{0, 0.5, 1, 1.5}),
            (Tensor<1>::Arange(0, 2, 0.5).to_data<float>()));
  EXPECT_EQ((std::vector<int64_t>{3, 4, 5}),
            (Tensor<1, Int>::Arange(3, 6).to_data<int64_t>()));
  EXPECT_EQ(0, Tensor<1>::Arange(5, 0).numel());
}

TEST(TensorCreationTest, EmptyShapesWork) {
  const auto t = Tensor<2>::Zeros({0, 3});
  EXPECT_EQ(0, t.numel());
  EXPECT_TRUE(t.to_data<float>().empty());
  EXPECT_EQ((Shape{0, 3}), (t + 1.0).shape());
}

TEST(TensorHandleTest, CopyingSharesStorageAndAllocatesNothing) {
  const auto t = Tensor<2>::Ones({64, 64});
  const int64_t count = GetMemoryStats(Device::Cpu()).allocation_count;
  const Tensor<2> copy = t;
  EXPECT_TRUE(copy.shares_storage_with(t));
  EXPECT_EQ(count, GetMemoryStats(Device::Cpu()).allocation_count);
}

TEST(TensorHandleTest, SetRequireGradSharesStorage) {
  const auto t = Tensor<1>::Zeros({4});
  EXPECT_FALSE(t.is_require_grad());
  const auto grad = t.set_require_grad(true);
  EXPECT_TRUE(grad.is_require_grad());
  EXPECT_FALSE(t.is_require_grad());
  EXPECT_TRUE(grad.shares_storage_with(t));
}

TEST(TensorViewTest, ReshapeOfContiguousIsAView) {
  const auto t = Tensor<1>::Arange(0, 6);
  const auto r = t.reshape<2>({2, 3});
  EXPECT_TRUE(r.shares_storage_with(t));
  EXPECT_EQ((std::vector<float>{0, 1, 2, 3, 4, 5}), r.to_data<float>());
  EXPECT_EQ((Shape{3, 2}), (t.reshape<2>({-1, 2}).shape()));
}

TEST(TensorViewTest, ReshapeOfTransposedCopiesWhenItMust) {
  const auto t = Tensor<1>::Arange(0, 6).reshape<2>({2, 3}).t();  // [3, 2]
  EXPECT_FALSE(t.is_contiguous());
  const auto flat = t.flatten();
  EXPECT_FALSE(flat.shares_storage_with(t));
  EXPECT_EQ((std::vector<float>{0, 3, 1, 4, 2, 5}), flat.to_data<float>());
  // Splitting a dim of a transposed tensor is still a view.
  const auto split = t.reshape<3>({3, 2, 1});
  EXPECT_TRUE(split.shares_storage_with(t));
}

TEST(TensorViewTest, TransposeAndPermuteAreViews) {
  const auto t = Tensor<1>::Arange(0, 24).reshape<3>({2, 3, 4});
  const auto p = t.permute({2, 0, 1});
  EXPECT_EQ((Shape{4, 2, 3}), p.shape());
  EXPECT_TRUE(p.shares_storage_with(t));
  const std::vector<float> data = p.to_data<float>();
  // p[i, j, k] = t[j, k, i] = 12 j + 4 k + i
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(12 * j + 4 * k + i, data[i * 6 + j * 3 + k]);
  EXPECT_EQ(t.to_data<float>(),
            t.transpose(0, 2).transpose(0, 2).to_data<float>());
}

TEST(TensorViewTest, NarrowAndSliceAreViews) {
  const auto t = Tensor<1>::Arange(0, 12).reshape<2>({3, 4});
  const auto n = t.narrow(1, 1, 2);
  EXPECT_TRUE(n.shares_storage_with(t));
  EXPECT_EQ((std::vector<float>{1, 2, 5, 6, 9, 10}), n.to_data<float>());
  const auto s = t.slice(1, 0, 4, 2);
  EXPECT_EQ((std::vector<float>{0, 2, 4, 6, 8, 10}), s.to_data<float>());
  EXPECT_EQ((std::vector<float>{8, 9, 10, 11}),
            t.slice(0, -1, 3).to_data<float>());
}

TEST(TensorViewTest, ExpandUsesZeroStrides) {
  const auto row = Tensor<1>::FromData<float>({1, 2, 3}, {3});
  const auto e = row.expand<2>({2, 3});
  EXPECT_TRUE(e.shares_storage_with(row));
  EXPECT_EQ(0, e.base().strides()[0]);
  EXPECT_EQ((std::vector<float>{1, 2, 3, 1, 2, 3}), e.to_data<float>());
}

TEST(TensorViewTest, ContiguousOfBroadcastAndStridedViewsEveryElementSize) {
  // The copy kernel's per-size paths: 1, 2, 4 and 8 bytes, a column
  // broadcast along rows (stride 0) and a transposed view.
  const TensorBase column =
      Tensor<2>::FromData<float>({1, 0, 3}, {3, 1}).base();
  const TensorBase matrix =
      Tensor<2>::FromData<float>({1, 4, 2, 5, 3, 6}, {3, 2}).base();
  const auto as_floats = [](const TensorBase& t) {
    return Tensor<2>(t.To(DType::kF32)).to_data<float>();
  };
  for (DType dtype :
       {DType::kBool, DType::kF16, DType::kF32, DType::kF64, DType::kI64}) {
    const TensorBase expanded =
        column.To(dtype).Expand(Shape{3, 4}).Contiguous();
    EXPECT_EQ(dtype, expanded.dtype());
    // What the dtype stores of each value (bool: nonzero is 1).
    const auto stored = [dtype](std::vector<float> values) {
      if (dtype == DType::kBool) {
        for (float& value : values) value = value != 0;
      }
      return values;
    };
    EXPECT_EQ(stored({1, 1, 1, 1, 0, 0, 0, 0, 3, 3, 3, 3}), as_floats(expanded))
        << DTypeName(dtype);
    EXPECT_EQ(stored({1, 2, 3, 4, 5, 6}),
              as_floats(matrix.To(dtype).Transpose(0, 1).Contiguous()))
        << DTypeName(dtype);
  }
}

TEST(TensorViewTest, UnsqueezeAndSqueeze) {
  const auto t = Tensor<1>::Arange(0, 3);
  const auto u = t.unsqueeze(0);
  EXPECT_EQ((Shape{1, 3}), u.shape());
  EXPECT_EQ((Shape{3, 1}), t.unsqueeze(-1).shape());
  EXPECT_EQ((Shape{3}), u.squeeze(0).shape());
}

TEST(TensorViewTest, ContiguousCopiesOnlyWhenNeeded) {
  const auto t = Tensor<2>::Ones({4, 4});
  EXPECT_TRUE(t.contiguous().shares_storage_with(t));
  const auto transposed = t.t();
  const auto packed = transposed.contiguous();
  EXPECT_FALSE(packed.shares_storage_with(t));
  EXPECT_TRUE(packed.is_contiguous());
}

TEST(TensorViewTest, WritesThroughAViewAreSeenByTheBase) {
  auto t = Tensor<2>::Zeros({2, 3});
  auto column = t.narrow(1, 1, 1);
  column.fill_(5);
  EXPECT_EQ((std::vector<float>{0, 5, 0, 0, 5, 0}), t.to_data<float>());
}

TEST(MemoryStatsTest, LiveBytesReturnToZeroAfterTensorsDie) {
  const int64_t before = LiveBytes();
  ResetMemoryStats(Device::Cpu());
  {
    const auto a = Tensor<2>::Zeros({128, 256});
    EXPECT_EQ(before + 128 * 256 * 4, LiveBytes());
    const auto b = (a + 1.0).exp();
    const auto view = b.t();
    EXPECT_GE(LiveBytes(), before + 2 * 128 * 256 * 4);
  }
  EXPECT_EQ(before, LiveBytes());
  const MemoryStats stats = GetMemoryStats(Device::Cpu());
  EXPECT_GE(stats.peak_live_bytes, before + 2 * 128 * 256 * 4);
  EXPECT_GE(stats.allocation_count, 3);
  ResetMemoryStats(Device::Cpu());
  EXPECT_EQ(0, GetMemoryStats(Device::Cpu()).allocation_count);
  EXPECT_EQ(before, GetMemoryStats(Device::Cpu()).peak_live_bytes);
}

TEST(BorrowTest, ForeignMemoryIsViewedNotCopiedNorCounted) {
  auto buffer =
      std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  const int64_t before = LiveBytes();
  const int64_t count = GetMemoryStats(Device::Cpu()).allocation_count;
  std::weak_ptr<std::vector<float>> watch = buffer;
  {
    const auto t = Tensor<2>::Borrow(buffer->data(), {2, 2}, DType::kF32,
                                     buffer, /*read_only=*/false);
    buffer.reset();
    EXPECT_FALSE(watch.expired());  // the tensor keeps it alive
    EXPECT_EQ(before, LiveBytes());
    EXPECT_EQ(count, GetMemoryStats(Device::Cpu()).allocation_count);
    EXPECT_TRUE(t.base().storage()->is_borrowed());
    EXPECT_EQ((std::vector<float>{1, 2, 3, 4}), t.to_data<float>());
  }
  EXPECT_TRUE(watch.expired());
}

TEST(BorrowTest, WritableBorrowIsWrittenInPlace) {
  std::vector<float> buffer{1, 2, 3};
  auto t = Tensor<1>::Borrow(buffer.data(), {3}, DType::kF32, nullptr,
                             /*read_only=*/false);
  t.mul_(2.0);
  EXPECT_EQ((std::vector<float>{2, 4, 6}), buffer);
}

TEST(BorrowTest, ReadOnlyBorrowIsCopiedOnWrite) {
  const std::vector<float> buffer{1, 2, 3};
  const auto original =
      Tensor<1>::Borrow(const_cast<float*>(buffer.data()), {3}, DType::kF32,
                        nullptr, /*read_only=*/true);
  auto writer = original;
  writer.add_(Tensor<1>::Ones({3}));
  EXPECT_EQ((std::vector<float>{1, 2, 3}), buffer);  // mapping untouched
  EXPECT_EQ((std::vector<float>{1, 2, 3}), original.to_data<float>());
  EXPECT_EQ((std::vector<float>{2, 3, 4}), writer.to_data<float>());
  EXPECT_FALSE(writer.base().storage()->is_borrowed());
}

// The example at the top of tensor.h, verbatim.
TEST(TensorExampleTest, HeaderExampleRuns) {
  Generator generator(/*seed=*/7);
  Tensor<2> x = Tensor<2>::RandomNormal({4, 3}, generator);
  Tensor<2> w = Tensor<2>::Ones({3, 2});
  Tensor<1> b = Tensor<1>::FromData<float>({0.5f, -0.5f}, {2});
  Tensor<2> y = (matmul(x, w) + b).relu();        // b broadcasts over rows
  Tensor<2, kindling::Int> labels = y.argmax(1);  // [4, 1]
  std::vector<float> values = y.to_data<float>();
  EXPECT_EQ((Shape{4, 1}), labels.shape());
  EXPECT_EQ(8u, values.size());
  for (float value : values) EXPECT_GE(value, 0.0f);
}

TEST(TensorPrintTest, ToStringNamesDTypeShapeDevice) {
  EXPECT_EQ("Tensor(f32[2, 3], cpu)", Tensor<2>::Zeros({2, 3}).ToString());
  EXPECT_EQ("Tensor(undefined)", Tensor<2>().ToString());
}

TEST(TensorDeviceTest, ToSameDeviceIsANoOp) {
  const auto t = Tensor<1>::Ones({3});
  EXPECT_TRUE(t.to_device(Device::Cpu()).shares_storage_with(t));
}

}  // namespace
}  // namespace kindling
