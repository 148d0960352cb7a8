// Small f32 tensors on the CPU for kernel tests: random values, tensors
// from and to host vectors, and bit-for-bit comparison.
#ifndef KINDLING_TESTS_SUPPORT_CPU_TENSORS_H_
#define KINDLING_TESTS_SUPPORT_CPU_TENSORS_H_

#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/tensor.h"

namespace kindling::test_support {

// RandomFloats() is `count` draws of N(0, 1) from a generator seeded with
// `seed`.
inline std::vector<float> RandomFloats(int64_t count, uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& v : values) v = normal(engine);
  return values;
}

inline TensorBase FromFloats(const std::vector<float>& values,
                             const Shape& shape) {
  return TensorBase::FromHost(values.data(), shape, DType::kF32, Device::Cpu());
}

inline TensorBase Empty(const Shape& shape, DType dtype = DType::kF32) {
  return TensorBase::Empty(shape, dtype, Device::Cpu());
}

// Values() is the tensor's elements, row-major.
template <class T>
std::vector<T> Values(const TensorBase& tensor) {
  std::vector<T> values(tensor.shape().num_elements());
  tensor.CopyToHost(values.data());
  return values;
}

// ExpectSameBits() compares two f32 tensors bit for bit (NaN equal to NaN of
// the same bits, -0 unequal to +0).
inline void ExpectSameBits(const TensorBase& actual, const TensorBase& expected,
                           const std::string& what) {
  const std::vector<float> a = Values<float>(actual);
  const std::vector<float> e = Values<float>(expected);
  ASSERT_EQ(a.size(), e.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(e[i]))
        << what << " at " << i << ": " << a[i] << " against " << e[i];
  }
}

}  // namespace kindling::test_support

#endif  // KINDLING_TESTS_SUPPORT_CPU_TENSORS_H_
