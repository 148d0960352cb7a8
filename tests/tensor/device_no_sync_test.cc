// Index ops on a device copy nothing to the host: their range checks run in
// the backend (Backend::CheckIndices), not by reading the indices back. The
// fake cuda device (tests/support/fake_cuda.h) counts every device-to-host
// copy, so a hidden synchronization would show up here.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/nn/loss.h"
#include "kindling/tensor/tensor.h"
#include "tests/support/fake_cuda.h"

namespace kindling {
namespace {

const Device kDevice = Device::Cuda(0);

class DeviceNoSyncTest : public ::testing::Test {
 protected:
  // Inputs are made on the host and moved (host-to-device copies only).
  Tensor<2> table_ =
      Tensor<2>::FromData<float>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2})
          .to_device(kDevice);
  Tensor<1, Int> ids_ =
      Tensor<1, Int>::FromData<int64_t>({3, 0, 3}, {3}).to_device(kDevice);

  void SetUp() override { testing::ResetFakeCudaCounters(); }
  int64_t DeviceToHostCopies() {
    return testing::GetFakeCudaCounters().d2h_copies;
  }
};

TEST_F(DeviceNoSyncTest, IndexSelectGatherAndOneHotReadNothingBack) {
  const Tensor<2> picked = index_select(table_, 0, ids_);
  const Tensor<2, Int> rows =
      Tensor<2, Int>::FromData<int32_t>({1, 0, 3, 2}, {2, 2})
          .to_device(kDevice);
  testing::ResetFakeCudaCounters();
  const Tensor<2> gathered = gather(table_, 0, rows);
  const Tensor<2> hot = one_hot(ids_, 4);
  EXPECT_EQ(DeviceToHostCopies(), 0);
  // The values are right (read back only now).
  EXPECT_EQ(picked.to_data<float>(), (std::vector<float>{6, 7, 0, 1, 6, 7}));
  EXPECT_EQ(gathered.to_data<float>(), (std::vector<float>{2, 1, 6, 5}));
  EXPECT_EQ(hot.to_data<float>(),
            (std::vector<float>{0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1}));
}

TEST_F(DeviceNoSyncTest, CrossEntropyForwardAndBackwardReadNothingBack) {
  const Tensor<2> logits = table_.narrow(0, 0, 3).set_require_grad(true);
  const ParamId id = logits.leaf_id();
  const Tensor<1, Int> labels =
      Tensor<1, Int>::FromData<int64_t>({1, 0, 1}, {3}).to_device(kDevice);
  testing::ResetFakeCudaCounters();
  const Tensor<0> loss = nn::CrossEntropy(logits, labels);
  const Gradients grads = Backward(loss);
  EXPECT_EQ(DeviceToHostCopies(), 0);
  ASSERT_TRUE(grads.Get(id).has_value());
  EXPECT_EQ(grads.Get(id)->shape(), Shape({3, 2}));
}

TEST_F(DeviceNoSyncTest, AnOutOfRangeIndexOnTheDeviceIsStillAnError) {
  const Tensor<1, Int> bad =
      Tensor<1, Int>::FromData<int64_t>({0, 4}, {2}).to_device(kDevice);
  EXPECT_DEATH(index_select(table_, 0, bad),
               "index_select: index 4 out of range \\[0, 4\\)");
  EXPECT_DEATH(one_hot(bad, 3), "one_hot: index 4 out of range \\[0, 3\\)");
}

}  // namespace
}  // namespace kindling
