// Storage's layout copy (kindling/tensor/storage.h): found under its name and
// the version it was made at only; bytes left unwritten for one are written
// from it once, by the first data() call, whichever thread makes it and
// however many make it at once (run under ThreadSanitizer in .ci/run), and
// before anything replaces the copy.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/storage.h"

namespace kindling {
namespace {

// Borrowed(): a storage over `values`, which must outlive it.
std::shared_ptr<Storage> Borrowed(std::vector<float>& values) {
  return Storage::Borrow(Device::Cpu(), values.data(),
                         values.size() * sizeof(float), nullptr,
                         /*read_only=*/false);
}

// Reversing(): an Unpack that writes the copy's `count` floats in reverse
// order, counting its calls.
Storage::Unpack Reversing(int count, std::atomic<int>& calls) {
  return [count, &calls](const void* copy, void* bytes) {
    ++calls;
    const float* from = static_cast<const float*>(copy);
    float* to = static_cast<float*>(bytes);
    for (int i = 0; i < count; ++i) to[i] = from[count - 1 - i];
  };
}

TEST(StorageLayoutCopyTest, FoundUnderItsNameAndVersionOnly) {
  std::vector<float> bytes = {1, 2, 3, 4}, copy_bytes = {1, 3, 2, 4};
  const std::shared_ptr<Storage> storage = Borrowed(bytes);
  const std::shared_ptr<Storage> copy = Borrowed(copy_bytes);
  EXPECT_EQ(storage->FindLayoutCopy("a"), nullptr);
  storage->KeepLayoutCopy("a", copy);
  EXPECT_EQ(storage->FindLayoutCopy("a"), copy);
  EXPECT_EQ(storage->FindLayoutCopy("b"), nullptr);
  storage->BumpVersion();  // an in-place write
  EXPECT_EQ(storage->FindLayoutCopy("a"), nullptr);
  EXPECT_TRUE(storage->is_written());
}

TEST(StorageLayoutCopyTest, UnwrittenBytesAreWrittenOnceByTheFirstReaders) {
  constexpr int kCount = 1 << 16;
  std::vector<float> copy_bytes(kCount);
  for (int i = 0; i < kCount; ++i) copy_bytes[i] = static_cast<float>(i);
  for (int round = 0; round < 20; ++round) {
    std::vector<float> bytes(kCount, -1);
    const std::shared_ptr<Storage> storage = Borrowed(bytes);
    std::atomic<int> calls{0};
    storage->KeepLayoutCopyOnly("reversed", Borrowed(copy_bytes),
                                Reversing(kCount, calls));
    EXPECT_FALSE(storage->is_written());
    EXPECT_NE(storage->FindLayoutCopy("reversed"), nullptr);
    std::vector<std::thread> readers;
    std::vector<float> seen(4);
    for (int t = 0; t < 4; ++t) {
      readers.emplace_back([&, t] {
        const float* values = static_cast<const float*>(storage->data());
        seen[t] = values[t * 1000];
      });
    }
    for (std::thread& reader : readers) reader.join();
    EXPECT_EQ(calls.load(), 1);
    for (int t = 0; t < 4; ++t) {
      EXPECT_EQ(seen[t], static_cast<float>(kCount - 1 - t * 1000));
    }
    EXPECT_TRUE(storage->is_written());
  }
}

TEST(StorageLayoutCopyTest, ReplacingTheCopyWritesTheBytesFirst) {
  std::vector<float> bytes(3, -1), copy_bytes = {1, 2, 3}, other = {7, 8, 9};
  const std::shared_ptr<Storage> storage = Borrowed(bytes);
  std::atomic<int> calls{0};
  storage->KeepLayoutCopyOnly("reversed", Borrowed(copy_bytes),
                              Reversing(3, calls));
  storage->KeepLayoutCopy("other", Borrowed(other));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(storage->is_written());
  EXPECT_EQ(bytes, (std::vector<float>{3, 2, 1}));
  EXPECT_EQ(storage->FindLayoutCopy("reversed"), nullptr);
}

TEST(StorageLayoutCopyTest, AStaleCopyWritesTheBytesBeforeItIsDropped) {
  std::vector<float> bytes(3, -1), copy_bytes = {1, 2, 3};
  const std::shared_ptr<Storage> storage = Borrowed(bytes);
  std::atomic<int> calls{0};
  storage->KeepLayoutCopyOnly("reversed", Borrowed(copy_bytes),
                              Reversing(3, calls));
  storage->BumpVersion();  // an in-place writer, before it reads
  EXPECT_EQ(storage->FindLayoutCopy("reversed"), nullptr);
  EXPECT_EQ(bytes, (std::vector<float>{3, 2, 1}));
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace kindling
