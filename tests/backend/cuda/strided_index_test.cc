// The CUDA kernels' index helpers (strided_index.h, gemm_layout.h), run on
// the host.
#include "kindling/backend/cuda/strided_index.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/gemm_layout.h"

namespace kindling::cuda {
namespace {

// Offsets of every position, by the indexer and by the definition.
template <int N>
void ExpectOffsetsMatch(const std::vector<int64_t>& shape,
                        const std::vector<std::vector<int64_t>>& strides) {
  const int rank = static_cast<int>(shape.size());
  const int64_t* pointers[N];
  for (int k = 0; k < N; ++k) pointers[k] = strides[k].data();
  const StridedIndexer<N> indexer =
      MakeStridedIndexer<N>(rank, shape.data(), pointers);
  int64_t numel = 1;
  for (int64_t dim : shape) numel *= dim;
  ASSERT_EQ(numel, indexer.numel);
  std::vector<int64_t> index(rank, 0);
  for (int64_t linear = 0; linear < numel; ++linear) {
    int64_t offsets[N];
    indexer.Offsets(linear, offsets);
    for (int k = 0; k < N; ++k) {
      int64_t expected = 0;
      for (int axis = 0; axis < rank; ++axis) {
        expected += index[axis] * strides[k][axis];
      }
      ASSERT_EQ(expected, offsets[k]) << "operand " << k << " at " << linear;
    }
    for (int axis = rank - 1; axis >= 0; --axis) {
      if (++index[axis] < shape[axis]) break;
      index[axis] = 0;
    }
  }
}

TEST(StridedIndexTest, ContiguousAndBroadcastCollapseToOneDim) {
  const std::vector<int64_t> shape = {4, 5, 6};
  const std::vector<int64_t> contiguous = {30, 6, 1};
  const std::vector<int64_t> scalar = {0, 0, 0};
  const int64_t* strides[2] = {contiguous.data(), scalar.data()};
  const StridedIndexer<2> indexer =
      MakeStridedIndexer<2>(3, shape.data(), strides);
  EXPECT_EQ(1, indexer.rank);
  EXPECT_EQ(120, indexer.sizes[0]);
  ExpectOffsetsMatch<2>(shape, {contiguous, scalar});
}

TEST(StridedIndexTest, TransposedSlicedAndRowBroadcastOperands) {
  // out [3, 4, 5] contiguous; a transposed view; a row broadcast; a slice.
  ExpectOffsetsMatch<4>({3, 4, 5},
                        {{20, 5, 1}, {1, 3, 12}, {0, 0, 1}, {70, 7, 1}});
  ExpectOffsetsMatch<2>({2, 1, 3, 1, 2}, {{6, 6, 2, 2, 1}, {1, 99, 2, 99, 6}});
}

TEST(StridedIndexTest, ScalarAndEmptyShapes) {
  const int64_t* no_strides[1] = {nullptr};
  const StridedIndexer<1> scalar =
      MakeStridedIndexer<1>(0, nullptr, no_strides);
  EXPECT_EQ(1, scalar.numel);
  int64_t offset = -1;
  scalar.Offsets(0, &offset);
  EXPECT_EQ(0, offset);
  const std::vector<int64_t> shape = {3, 0, 2};
  const std::vector<int64_t> strides = {0, 2, 1};
  const int64_t* pointers[1] = {strides.data()};
  EXPECT_EQ(0, MakeStridedIndexer<1>(3, shape.data(), pointers).numel);
}

TEST(StridedIndexTest, GridForCapsBlocksAndSkipsEmptyWork) {
  EXPECT_EQ(0, GridFor(0).blocks);
  EXPECT_EQ(1, GridFor(1).blocks);
  EXPECT_EQ(2, GridFor(257).blocks);
  EXPECT_EQ(kMaxGridBlocks, GridFor(int64_t{1} << 40).blocks);
  EXPECT_EQ(256, GridFor(10).threads);
}

TEST(GemmLayoutTest, RowMajorTransposedAndUnusableMatrices) {
  const GemmOperand row_major = DescribeGemmOperand(3, 4, 4, 1);
  EXPECT_TRUE(row_major.usable);
  EXPECT_FALSE(row_major.transpose);
  EXPECT_EQ(4, row_major.leading);
  const GemmOperand padded = DescribeGemmOperand(3, 4, 10, 1);
  EXPECT_EQ(10, padded.leading);
  const GemmOperand transposed = DescribeGemmOperand(3, 4, 1, 3);
  EXPECT_TRUE(transposed.usable);
  EXPECT_TRUE(transposed.transpose);
  EXPECT_EQ(3, transposed.leading);
  EXPECT_FALSE(DescribeGemmOperand(3, 4, 8, 2).usable);
  EXPECT_FALSE(DescribeGemmOperand(3, 4, 2, 1).usable);  // rows overlap
  const GemmOperand vector = DescribeGemmOperand(1, 5, 0, 1);
  EXPECT_TRUE(vector.usable);
  EXPECT_EQ(5, vector.leading);
  const GemmOperand column = DescribeGemmOperand(5, 1, 7, 0);
  EXPECT_TRUE(column.usable);
  EXPECT_EQ(7, column.leading);
}

TEST(GemmLayoutTest, BatchDimsCollapseWhenContiguousOrBroadcast) {
  const int64_t shape[] = {2, 3};
  const int64_t contiguous[] = {60, 20};
  BatchStride batch = CollapseBatch(2, shape, contiguous);
  EXPECT_TRUE(batch.collapses);
  EXPECT_EQ(20, batch.stride);
  const int64_t broadcast[] = {0, 0};
  batch = CollapseBatch(2, shape, broadcast);
  EXPECT_TRUE(batch.collapses);
  EXPECT_EQ(0, batch.stride);
  const int64_t half_broadcast[] = {20, 0};
  EXPECT_FALSE(CollapseBatch(2, shape, half_broadcast).collapses);
  const int64_t ones_shape[] = {1, 4, 1};
  const int64_t ones_strides[] = {123, 9, 456};
  batch = CollapseBatch(3, ones_shape, ones_strides);
  EXPECT_TRUE(batch.collapses);
  EXPECT_EQ(9, batch.stride);
  EXPECT_TRUE(CollapseBatch(0, nullptr, nullptr).collapses);
}

}  // namespace
}  // namespace kindling::cuda
