// The reduction arithmetic that Gloo, MPI's 16-bit operations and
// GradientSync share: every reducible dtype, lengths on and off the vector
// width, element by element against the scalar definition; the division
// out of place equals the one in place and writes nothing past its end.
#include "kindling/distributed/reduce_math.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/half.h"

namespace kindling::distributed {
namespace {

constexpr int64_t kLengths[] = {0, 1, 7, 16, 33, 1001};
constexpr int kDivisors[] = {1, 2, 3, 7};

// Value(i): a spread of signs and magnitudes, exact in every dtype tested.
double Value(int64_t i) { return static_cast<double>((i * 37) % 201 - 100); }

template <class T>
std::vector<T> Filled(int64_t n, int64_t offset) {
  std::vector<T> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<T>(Value(i + offset));
  return values;
}

template <class Half16>
std::vector<uint16_t> Filled16(int64_t n, int64_t offset) {
  std::vector<uint16_t> values(n);
  for (int64_t i = 0; i < n; ++i) {
    values[i] = Half16::FromFloat(static_cast<float>(Value(i + offset))).bits;
  }
  return values;
}

// ExpectDivides() checks DivideElements() out of place and in place against
// `expected(in[i])`, and that out of place leaves a guard element after n.
template <class T, class Expected>
void ExpectDivides(DType dtype, const std::vector<T>& in, int divisor,
                   const Expected& expected) {
  const int64_t n = static_cast<int64_t>(in.size());
  const T guard = static_cast<T>(12345);
  std::vector<T> out(n + 1, guard);
  DivideElements(out.data(), in.data(), n, dtype, divisor);
  std::vector<T> in_place = in;
  DivideInPlace(in_place.data(), n, dtype, divisor);
  for (int64_t i = 0; i < n; ++i) {
    const T want = expected(in[i]);
    ASSERT_EQ(std::memcmp(&out[i], &want, sizeof(T)), 0)
        << DTypeName(dtype) << " n=" << n << " / " << divisor << " at " << i;
    ASSERT_EQ(std::memcmp(&in_place[i], &want, sizeof(T)), 0)
        << DTypeName(dtype) << " in place, n=" << n << " at " << i;
  }
  EXPECT_EQ(out[n], guard) << DTypeName(dtype) << " n=" << n;
}

TEST(DivideElementsTest, F32MultipliesByTheReciprocal) {
  for (int64_t n : kLengths) {
    for (int divisor : kDivisors) {
      const float scale = 1.0f / divisor;
      ExpectDivides<float>(DType::kF32, Filled<float>(n, 0), divisor,
                           [&](float x) { return x * scale; });
    }
  }
}

TEST(DivideElementsTest, F64AndI64Divide) {
  for (int64_t n : kLengths) {
    for (int divisor : kDivisors) {
      ExpectDivides<double>(DType::kF64, Filled<double>(n, 0), divisor,
                            [&](double x) { return x / divisor; });
      // Integers truncate toward zero: -100 / 3 is -33.
      ExpectDivides<int64_t>(DType::kI64, Filled<int64_t>(n, 0), divisor,
                             [&](int64_t x) { return x / divisor; });
    }
  }
}

TEST(DivideElementsTest, HalfFloatsScaleThroughF32) {
  for (int64_t n : kLengths) {
    for (int divisor : kDivisors) {
      const float scale = 1.0f / divisor;
      ExpectDivides<uint16_t>(
          DType::kF16, Filled16<Half>(n, 0), divisor, [&](uint16_t x) {
            return Half::FromFloat(Half{x}.ToFloat() * scale).bits;
          });
      ExpectDivides<uint16_t>(
          DType::kBF16, Filled16<BFloat16>(n, 0), divisor, [&](uint16_t x) {
            return BFloat16::FromFloat(BFloat16{x}.ToFloat() * scale).bits;
          });
    }
  }
}

template <class T>
void ExpectCombines(DType dtype) {
  for (int64_t n : kLengths) {
    const std::vector<T> a = Filled<T>(n, 0);
    const std::vector<T> b = Filled<T>(n, 5);
    for (bool max : {false, true}) {
      std::vector<T> out(n);
      CombineElements(out.data(), a.data(), b.data(), n, dtype, max);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(out[i], max ? std::max(a[i], b[i]) : a[i] + b[i])
            << DTypeName(dtype) << " n=" << n << " at " << i;
      }
    }
  }
}

TEST(CombineElementsTest, SumsAndMaxima) {
  ExpectCombines<float>(DType::kF32);
  ExpectCombines<double>(DType::kF64);
  ExpectCombines<int64_t>(DType::kI64);
}

TEST(CombineElementsTest, HalfFloatsRoundOncePerPair) {
  for (int64_t n : kLengths) {
    const std::vector<uint16_t> a = Filled16<Half>(n, 0);
    const std::vector<uint16_t> b = Filled16<Half>(n, 5);
    std::vector<uint16_t> out(n);
    CombineElements(out.data(), a.data(), b.data(), n, DType::kF16, false);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(
          out[i],
          Half::FromFloat(Half{a[i]}.ToFloat() + Half{b[i]}.ToFloat()).bits)
          << "n=" << n << " at " << i;
    }
  }
}

}  // namespace
}  // namespace kindling::distributed
