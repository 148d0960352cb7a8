// cat, stack, index_select (embedding lookup), gather and one_hot.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
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
