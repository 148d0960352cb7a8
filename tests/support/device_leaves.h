// Reading every parameter and buffer of the device tests' DeviceNet out to
// the host, and comparing two such reads: what the device-move and
// device-load tests check after a model changed device.
#ifndef KINDLING_TESTS_SUPPORT_DEVICE_LEAVES_H_
#define KINDLING_TESTS_SUPPORT_DEVICE_LEAVES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/module/visit.h"
#include "kindling/tensor/tensor.h"
#include "tests/support/device_test_model.kindling.h"

namespace devtest {

// One parameter or buffer read out: where it lives and its values.
struct LeafValue {
  std::string path;
  kindling::Device device;
  std::vector<float> values;
};

// ReadLeaves() reads every parameter and buffer (initializing lazy ones).
inline std::vector<LeafValue> ReadLeaves(const DeviceNet& model) {
  std::vector<LeafValue> leaves;
  kindling::VisitParams(model, [&](std::string_view path, const auto& param) {
    leaves.push_back(
        {std::string(path), param->device(), param->template to_data<float>()});
  });
  kindling::VisitBuffers(model, [&](std::string_view path, const auto& buf) {
    const auto value = buf.value();
    leaves.push_back(
        {std::string(path), value.device(), value.template to_data<float>()});
  });
  return leaves;
}

// LeafBytes() is the bytes of every parameter and buffer of `model` (f32).
inline int64_t LeafBytes(const DeviceNet& model) {
  int64_t elements = kindling::NumParams(model);
  kindling::VisitBuffers(model, [&](std::string_view, const auto& buf) {
    elements += kindling::NumElements(buf.lazy_shape());
  });
  return elements * 4;
}

// ExpectSameValues() expects `actual` to hold `expected`'s paths and values,
// every leaf on `actual_device`.
inline void ExpectSameValues(const std::vector<LeafValue>& expected,
                             const std::vector<LeafValue>& actual,
                             const kindling::Device& actual_device) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].path, actual[i].path);
    EXPECT_EQ(actual_device, actual[i].device) << actual[i].path;
    EXPECT_EQ(expected[i].values, actual[i].values) << actual[i].path;
  }
}

}  // namespace devtest

#endif  // KINDLING_TESTS_SUPPORT_DEVICE_LEAVES_H_
