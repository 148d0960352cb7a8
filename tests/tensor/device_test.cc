#include "kindling/tensor/device.h"

#include "gtest/gtest.h"

namespace kindling {
namespace {

TEST(DeviceTest, PrintsPyTorchSpelling) {
  EXPECT_EQ("cpu", Device::Cpu().ToString());
  EXPECT_EQ("cuda:1", Device::Cuda(1).ToString());
}

TEST(DeviceTest, ParsesWhatItPrints) {
  for (Device device : {Device::Cpu(), Device::Cuda(0), Device::Cuda(13)}) {
    auto parsed = Device::Parse(device.ToString());
    ASSERT_TRUE(parsed.ok()) << device;
    EXPECT_EQ(device, *parsed);
  }
}

TEST(DeviceTest, BareCudaIsIndexZero) {
  EXPECT_EQ(Device::Cuda(0), *Device::Parse("cuda"));
}

TEST(DeviceTest, ParseRejectsMalformedText) {
  for (const char* text : {"", "gpu", "cuda:", "cuda:-1", "cuda:x", "cpu:0"}) {
    EXPECT_FALSE(Device::Parse(text).ok()) << text;
  }
}

TEST(DeviceTest, DefaultIsCpu) { EXPECT_EQ(Device::Cpu(), Device()); }

}  // namespace
}  // namespace kindling
