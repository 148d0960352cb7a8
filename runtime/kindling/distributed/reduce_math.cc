#include "kindling/distributed/reduce_math.h"

#include <algorithm>
#include <cstdint>

#include "kindling/core/check.h"
#include "kindling/tensor/half.h"

namespace kindling::distributed {
namespace {

template <class T>
void Combine(T* out, const T* a, const T* b, int64_t n, bool max) {
  if (max) {
    for (int64_t i = 0; i < n; ++i) out[i] = std::max(a[i], b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }
}

// Combine16() combines 16-bit float patterns through f32.
template <class Half16>
void Combine16(uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n,
               bool max) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = Half16{a[i]}.ToFloat();
    const float y = Half16{b[i]}.ToFloat();
    out[i] = Half16::FromFloat(max ? std::max(x, y) : x + y).bits;
  }
}

template <class Half16>
void Scale16(uint16_t* out, const uint16_t* in, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = Half16::FromFloat(Half16{in[i]}.ToFloat() * scale).bits;
  }
}

template <class T>
void Divide(T* out, const T* in, int64_t n, int divisor) {
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] / divisor;
}

}  // namespace

void CombineElements(void* out, const void* a, const void* b, int64_t n,
                     DType dtype, bool max) {
  switch (dtype) {
    case DType::kF32:
      return Combine(static_cast<float*>(out), static_cast<const float*>(a),
                     static_cast<const float*>(b), n, max);
    case DType::kF64:
      return Combine(static_cast<double*>(out), static_cast<const double*>(a),
                     static_cast<const double*>(b), n, max);
    case DType::kI64:
      return Combine(static_cast<int64_t*>(out), static_cast<const int64_t*>(a),
                     static_cast<const int64_t*>(b), n, max);
    case DType::kF16:
      return Combine16<Half>(static_cast<uint16_t*>(out),
                             static_cast<const uint16_t*>(a),
                             static_cast<const uint16_t*>(b), n, max);
    case DType::kBF16:
      return Combine16<BFloat16>(static_cast<uint16_t*>(out),
                                 static_cast<const uint16_t*>(a),
                                 static_cast<const uint16_t*>(b), n, max);
    default:
      KINDLING_CHECK(false, "CombineElements: dtype %s is not reducible",
                     std::string(DTypeName(dtype)));
  }
}

void DivideElements(void* out, const void* in, int64_t n, DType dtype,
                    int divisor) {
  switch (dtype) {
    case DType::kF32: {
      float* to = static_cast<float*>(out);
      const float* from = static_cast<const float*>(in);
      const float scale = 1.0f / divisor;
      for (int64_t i = 0; i < n; ++i) to[i] = from[i] * scale;
      return;
    }
    case DType::kF64:
      return Divide(static_cast<double*>(out), static_cast<const double*>(in),
                    n, divisor);
    case DType::kI64:
      return Divide(static_cast<int64_t*>(out), static_cast<const int64_t*>(in),
                    n, divisor);
    case DType::kF16:
      return Scale16<Half>(static_cast<uint16_t*>(out),
                           static_cast<const uint16_t*>(in), n, 1.0f / divisor);
    case DType::kBF16:
      return Scale16<BFloat16>(static_cast<uint16_t*>(out),
                               static_cast<const uint16_t*>(in), n,
                               1.0f / divisor);
    default:
      KINDLING_CHECK(false, "DivideElements: dtype %s is not reducible",
                     std::string(DTypeName(dtype)));
  }
}

void DivideInPlace(void* data, int64_t n, DType dtype, int divisor) {
  DivideElements(data, data, n, dtype, divisor);
}

}  // namespace kindling::distributed
