// cat, stack, index_select (embedding lookup), gather and one_hot.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

TEST(CatTest, AlongEachAxis) {
  const auto a = Tensor<2>::FromData<float>({1, 2, 3, 4}, {2, 2});
  const auto b = Tensor<2>::FromData<float>({5, 6}, {1, 2});
  const auto rows = cat(std::vector<Tensor<2>>{a, b}, 0);
  EXPECT_EQ((Shape{3, 2}), rows.shape());
  EXPECT_EQ((std::vector<float>{1, 2, 3, 4, 5, 6}), rows.to_data<float>());
  const auto columns = cat(std::vector<Tensor<2>>{a, b.t()}, 1);
  EXPECT_EQ((Shape{2, 3}), columns.shape());
  EXPECT_EQ((std::vector<float>{1, 2, 5, 3, 4, 6}), columns.to_data<float>());
}

TEST(CatTest, NonContiguousAndEmptyPieces) {
  const auto a = Tensor<1>::Arange(0, 6).reshape<2>({2, 3}).t();  // [3, 2]
  const auto empty = Tensor<2>::Zeros({0, 2});
  const auto r = cat(std::vector<Tensor<2>>{empty, a, empty}, 0);
  EXPECT_EQ((std::vector<float>{0, 3, 1, 4, 2, 5}), r.to_data<float>());
}

TEST(StackTest, AddsANewAxis) {
  const auto a = Tensor<1>::FromData<float>({1, 2}, {2});
  const auto b = Tensor<1>::FromData<float>({3, 4}, {2});
  const auto s0 = stack(std::vector<Tensor<1>>{a, b}, 0);
  EXPECT_EQ((Shape{2, 2}), s0.shape());
  EXPECT_EQ((std::vector<float>{1, 2, 3, 4}), s0.to_data<float>());
  const auto s1 = stack(std::vector<Tensor<1>>{a, b}, -1);
  EXPECT_EQ((std::vector<float>{1, 3, 2, 4}), s1.to_data<float>());
}

TEST(IndexSelectTest, EmbeddingLookup) {
  const auto table = Tensor<1>::Arange(0, 12).reshape<2>({4, 3});
  const auto ids = Tensor<1, Int>::FromData<int64_t>({3, 0, 3}, {3});
  const auto rows = index_select(table, 0, ids);
  EXPECT_EQ((Shape{3, 3}), rows.shape());
  EXPECT_EQ((std::vector<float>{9, 10, 11, 0, 1, 2, 9, 10, 11}),
            rows.to_data<float>());
  const auto columns = index_select(table, 1, ids.narrow(0, 1, 1));
  EXPECT_EQ((std::vector<float>{0, 3, 6, 9}), columns.to_data<float>());
}

TEST(IndexSelectTest, Int32IndicesAndTransposedTable) {
  const auto table = Tensor<1>::Arange(0, 6).reshape<2>({2, 3}).t();  // [3, 2]
  const auto ids = Tensor<1, Int>::FromData<int32_t>({2, 1}, {2});
  EXPECT_EQ((std::vector<float>{2, 5, 1, 4}),
            index_select(table, 0, ids).to_data<float>());
}

TEST(ScatterAddTest, BroadcastIndexAddsAsItsCopyDoes) {
  // index_select's gradient passes its 1-D index expanded over the other
  // axes, which the CPU kernel reads once per pick: the sums must be those
  // of the same index materialized, bit for bit, whatever the axis, index
  // dtype and thread split (600 rows of 70 columns, ids repeated).
  for (const int axis : {0, 1}) {
    for (const DType index_dtype : {DType::kI64, DType::kI32}) {
      std::vector<int64_t> ids(600);
      for (size_t j = 0; j < ids.size(); ++j) ids[j] = (j * 7 + j / 5) % 13;
      const Shape src_shape = axis == 0 ? Shape{600, 70} : Shape{70, 600};
      const Shape out_shape = axis == 0 ? Shape{13, 70} : Shape{70, 13};
      const Shape line = axis == 0 ? Shape{600, 1} : Shape{1, 600};
      const TensorBase index = Tensor<1, Int>::FromData(ids, {600})
                                   .base()
                                   .To(index_dtype)
                                   .Reshape(line)
                                   .Expand(src_shape);
      ASSERT_EQ(0, index.strides()[1 - axis]) << "the broadcast under test";
      const TensorBase src =
          (Tensor<1>::Arange(0, 42000) * 0.37f).reshape<2>(src_shape).base();
      const TensorBase broadcast = Tensor<2>::Zeros(out_shape).base();
      const TensorBase copied = Tensor<2>::Zeros(out_shape).base();
      GetBackend(Device::Cpu()).ScatterAdd(broadcast, axis, index, src);
      GetBackend(Device::Cpu())
          .ScatterAdd(copied, axis, index.Contiguous(), src);
      EXPECT_EQ(Tensor<2>(copied).to_data<float>(),
                Tensor<2>(broadcast).to_data<float>())
          << "axis " << axis << ", " << DTypeName(index_dtype);
      EXPECT_NE(0.0f, Tensor<2>(copied).sum().item<float>());
    }
  }
}

TEST(GatherTest, PicksAlongAnAxis) {
  const auto t = Tensor<2>::FromData<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto index = Tensor<2, Int>::FromData<int64_t>({2, 0, 1, 1}, {2, 2});
  EXPECT_EQ((std::vector<float>{3, 1, 5, 5}),
            gather(t, 1, index).to_data<float>());
  const auto rows = Tensor<2, Int>::FromData<int64_t>({1, 0, 1}, {1, 3});
  EXPECT_EQ((std::vector<float>{4, 2, 6}), gather(t, 0, rows).to_data<float>());
}

TEST(OneHotTest, EncodesIndices) {
  const auto labels = Tensor<1, Int>::FromData<int64_t>({2, 0, 1}, {3});
  const auto encoded = one_hot(labels, 4);
  EXPECT_EQ((Shape{3, 4}), encoded.shape());
  EXPECT_EQ(DType::kF32, encoded.dtype());
  EXPECT_EQ((std::vector<float>{0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0}),
            encoded.to_data<float>());
  const auto ints = one_hot<Int>(labels.unsqueeze(0), 3);
  EXPECT_EQ((Shape{1, 3, 3}), ints.shape());
  EXPECT_EQ(1, ints.sum_dim(2).min().item<int64_t>());
}

}  // namespace
}  // namespace kindling
