// The host half of index_fault.h: the same functions the CUDA kernels call,
// run on the CPU against a plain record.
#include "kindling/backend/cuda/index_fault.h"

#include <string>

#include "gtest/gtest.h"

namespace kindling::cuda {
namespace {

TEST(IndexFaultTest, InRangeIndexPassesThroughAndRecordsNothing) {
  IndexFault record{};
  const IndexFaultSink sink{&record, "gather"};
  EXPECT_EQ(CheckedIndex(sink, 0, 3), 0);
  EXPECT_EQ(CheckedIndex(sink, 2, 3), 2);
  EXPECT_EQ(record.op, 0u);
  EXPECT_EQ(TakeIndexFault(record, "cuda:0"), "");
}

TEST(IndexFaultTest, FirstBadIndexWinsAndIsReportedOnce) {
  IndexFault record{};
  const IndexFaultSink gather{&record, "gather"};
  const IndexFaultSink one_hot{&record, "one_hot"};
  EXPECT_EQ(CheckedIndex(gather, 3, 3), -1);
  EXPECT_EQ(CheckedIndex(one_hot, -7, 10), -1);  // a later fault: dropped
  EXPECT_EQ(TakeIndexFault(record, "cuda:1")
                .rfind("gather: index 3 out of range [0, 3) on cuda:1", 0),
            0u);
  // Taken: the record is empty again and catches the next fault.
  EXPECT_EQ(TakeIndexFault(record, "cuda:1"), "");
  EXPECT_EQ(CheckedIndex(one_hot, -7, 10), -1);
  EXPECT_EQ(TakeIndexFault(record, "cuda:0")
                .rfind("one_hot: index -7 out of range [0, 10) on cuda:0", 0),
            0u);
}

TEST(IndexFaultTest, AClaimedRecordIsLeftForItsWriterToPublish) {
  // A writer has won the record but not yet written its numbers or name.
  IndexFault record{kIndexFaultClaimed, 0, 0};
  EXPECT_EQ(TakeIndexFault(record, "cuda:0"), "");
  EXPECT_EQ(record.op, kIndexFaultClaimed);  // not cleared under the writer
  // Other faults meanwhile lose to it.
  EXPECT_EQ(CheckedIndex(IndexFaultSink{&record, "gather"}, 5, 2), -1);
  EXPECT_EQ(record.op, kIndexFaultClaimed);
}

TEST(IndexFaultTest, RangeEdges) {
  EXPECT_TRUE(IndexInRange(0, 1));
  EXPECT_FALSE(IndexInRange(1, 1));
  EXPECT_FALSE(IndexInRange(-1, 1));
  EXPECT_FALSE(IndexInRange(0, 0));
  EXPECT_TRUE(IndexInRange(int64_t{1} << 40, (int64_t{1} << 40) + 1));
}

}  // namespace
}  // namespace kindling::cuda
