// Element-wise CPU kernels: copy/convert, fill, unary, binary, where.
//
// Every kernel is a StridedLayout walk (strided.h) whose innermost segment is
// a plain loop. The all-unit-stride and scalar-broadcast (stride 0) segments
// get their own loops so gcc emits AVX2 code for them.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/strided.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/core/check.h"
#include "kindling/tensor/convert_span.h"
#include "kindling/tensor/element_math.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace kindling::cpu {
namespace {

// Outputs this large are written with non-temporal (streaming) stores: they
// cannot stay in cache anyway, and a normal store first reads the line it
// overwrites, so streaming cuts a + b's memory traffic from 4 to 3 passes.
constexpr int64_t kStreamingBytes = int64_t{4} << 20;

// StreamStore() copies `bytes` from a cache-resident buffer to `target`,
// streaming the 32-byte-aligned middle.
inline void StreamStore(char* target, const char* source, int64_t bytes) {
#if defined(__AVX__)
  int64_t head = static_cast<int64_t>(
      (32 - reinterpret_cast<uintptr_t>(target) % 32) % 32);
  head = std::min(head, bytes);
  std::memcpy(target, source, head);
  int64_t i = head;
  for (; i + 32 <= bytes; i += 32) {
    _mm256_stream_si256(
        reinterpret_cast<__m256i*>(target + i),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source + i)));
  }
  std::memcpy(target + i, source + i, bytes - i);
#else
  std::memcpy(target, source, bytes);
#endif
}

// StreamingLoop() writes out[0..count) chunk by chunk: `fill(buffer, begin,
// n)` computes elements begin..begin+n into an L1-resident buffer (a plain
// loop gcc vectorizes), which is then streamed out. Reading inputs chunk by
// chunk before writing keeps in-place use (out == input) correct.
template <class TOut, class Fill>
void StreamingLoop(TOut* out, int64_t count, const Fill& fill) {
  constexpr int64_t kChunk = 8192 / int64_t{sizeof(TOut)};
  alignas(64) TOut buffer[kChunk];
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    const int64_t n = std::min(kChunk, count - begin);
    fill(buffer, begin, n);
    StreamStore(reinterpret_cast<char*>(out + begin),
                reinterpret_cast<const char*>(buffer),
                n * int64_t{sizeof(TOut)});
  }
#if defined(__AVX__)
  _mm_sfence();  // order the streaming stores before the join
#endif
}

// --- Copy and conversion -------------------------------------------------

// kIsFloatingElement<T>: f32, f64, f16 or bf16 storage.
template <class T>
inline constexpr bool kIsFloatingElement =
    std::is_floating_point_v<T> || kIsHalfType<T>;

template <class To, class From>
void ConvertSegment(To* out, int64_t out_stride, const From* in,
                    int64_t in_stride, int64_t count) {
  if (out_stride == 1 && in_stride == 1) {
    // Contiguous floating runs take the shared span conversion (F16C/AVX2),
    // the same code the checkpoint reader and writer use.
    if constexpr (kIsFloatingElement<To> && kIsFloatingElement<From>) {
      ConvertFloatSpan(out, DTypeOfHost<To>::value, in,
                       DTypeOfHost<From>::value, static_cast<size_t>(count));
      return;
    }
    for (int64_t i = 0; i < count; ++i) out[i] = Convert<To>(in[i]);
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    out[i * out_stride] = Convert<To>(in[i * in_stride]);
  }
}

// CopyWords() copies `count` strided elements of sizeof(Word) bytes. The
// size is a constant, so each element is one load and one store (a memcpy
// call of a run-time size per element took 1.7 ms to broadcast a scalar to
// 2M floats), and a broadcast input (stride 0) is read once.
template <class Word>
void CopyWords(char* out, int64_t out_stride, const char* in, int64_t in_stride,
               int64_t count) {
  if (in_stride == 0) {
    Word value;
    std::memcpy(&value, in, sizeof(Word));
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(out + i * out_stride, &value, sizeof(Word));
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(out + i * out_stride, in + i * in_stride, sizeof(Word));
  }
}

// Same-dtype copy by element size: memcpy for unit strides.
void RawCopySegment(char* out, int64_t out_stride, const char* in,
                    int64_t in_stride, int64_t count, size_t size) {
  if (out_stride == static_cast<int64_t>(size) &&
      in_stride == static_cast<int64_t>(size)) {
    std::memcpy(out, in, count * size);
    return;
  }
  switch (size) {
    case 1:
      return CopyWords<uint8_t>(out, out_stride, in, in_stride, count);
    case 2:
      return CopyWords<uint16_t>(out, out_stride, in, in_stride, count);
    case 4:
      return CopyWords<uint32_t>(out, out_stride, in, in_stride, count);
    case 8:
      return CopyWords<uint64_t>(out, out_stride, in, in_stride, count);
    default:
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(out + i * out_stride, in + i * in_stride, size);
      }
  }
}

}  // namespace

void CopyKernel(const TensorBase& out, const TensorBase& in) {
  const auto layout = MakeLayout<2>({&out, &in});
  if (out.dtype() == in.dtype()) {
    const size_t size = out.element_size();
    ForEachSegment(
        layout, kElementGrain,
        [size](char* const* data, const int64_t* stride, int64_t count) {
          RawCopySegment(data[0], stride[0], data[1], stride[1], count, size);
        });
    return;
  }
  DispatchDType(out.dtype(), [&]<class To>() {
    DispatchDType(in.dtype(), [&]<class From>() {
      ForEachSegment(
          layout, kElementGrain,
          [](char* const* data, const int64_t* stride, int64_t count) {
            ConvertSegment(reinterpret_cast<To*>(data[0]),
                           stride[0] / int64_t{sizeof(To)},
                           reinterpret_cast<const From*>(data[1]),
                           stride[1] / int64_t{sizeof(From)}, count);
          });
    });
  });
}

void FillKernel(const TensorBase& out, double value) {
  const auto layout = MakeLayout<1>({&out});
  DispatchDType(out.dtype(), [&]<class T>() {
    const T fill = Convert<T>(value);
    ForEachSegment(
        layout, kElementGrain,
        [fill](char* const* data, const int64_t* stride, int64_t count) {
          T* target = reinterpret_cast<T*>(data[0]);
          const int64_t step = stride[0] / int64_t{sizeof(T)};
          if (step == 1) {
            for (int64_t i = 0; i < count; ++i) target[i] = fill;
          } else {
            for (int64_t i = 0; i < count; ++i) {
              target[i * step] = fill;
            }
          }
        });
  });
}

namespace {

// --- Unary -----------------------------------------------------------------

// Runs out[i] = f(in[i]) over a 2-operand layout.
template <class TOut, class TIn, class F>
void RunUnary(const StridedLayout<2>& layout, int64_t grain, F f) {
  ForEachSegment(layout, grain,
                 [f](char* const* data, const int64_t* stride, int64_t count) {
                   TOut* out = reinterpret_cast<TOut*>(data[0]);
                   const TIn* in = reinterpret_cast<const TIn*>(data[1]);
                   const int64_t so = stride[0] / int64_t{sizeof(TOut)};
                   const int64_t si = stride[1] / int64_t{sizeof(TIn)};
                   if (so == 1 && si == 1 &&
                       count * int64_t{sizeof(TOut)} >= kStreamingBytes) {
                     StreamingLoop(out, count,
                                   [&](TOut* buffer, int64_t begin, int64_t n) {
                                     const TIn* source = in + begin;
                                     for (int64_t i = 0; i < n; ++i)
                                       buffer[i] = f(source[i]);
                                   });
                   } else if (so == 1 && si == 1) {
                     for (int64_t i = 0; i < count; ++i) out[i] = f(in[i]);
                   } else {
                     for (int64_t i = 0; i < count; ++i) {
                       out[i * so] = f(in[i * si]);
                     }
                   }
                 });
}

// MapFloats() writes out[i] = f(in[i]) for i < count, eight lanes at a
// time (f maps __m256 to __m256); out may alias in exactly.
template <class F8>
void MapFloats(float* out, const float* in, int64_t count, bool stream,
               const F8& f) {
  WriteFloats(out, count, stream, [&](int64_t i, int64_t lanes) {
    return f(lanes == 8 ? _mm256_loadu_ps(in + i)
                        : LoadPartial(in + i, lanes, 1.0f));
  });
  if (stream) _mm_sfence();  // order the streaming stores before the join
}

// MapFloats16() is MapFloats(out, in, count, stream, f8) with AVX-512 for an
// f16 that gives f8's bits on sixteen lanes (twice the lanes per
// instruction). REQUIRES: HasAvx512().
KINDLING_AVX512_BEGIN
template <class F16>
KINDLING_AVX512 void MapFloats16(float* out, const float* in, int64_t count,
                                 bool stream, const F16& f16) {
  auto partial = [out, in, &f16](int64_t begin, int64_t lanes) KINDLING_AVX512 {
    const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
    _mm512_mask_storeu_ps(out + begin, mask,
                          f16(_mm512_maskz_loadu_ps(mask, in + begin)));
  };
  int64_t i = 0;
  if (stream && reinterpret_cast<uintptr_t>(out) % sizeof(float) == 0) {
    // Streaming stores need 64-byte alignment: a masked head first.
    const int64_t head = std::min<int64_t>(
        count, (64 - reinterpret_cast<uintptr_t>(out) % 64) % 64 / 4);
    if (head > 0) partial(0, head);
    for (i = head; i + 16 <= count; i += 16) {
      _mm512_stream_ps(out + i, f16(_mm512_loadu_ps(in + i)));
    }
  } else {
    for (; i + 16 <= count; i += 16) {
      _mm512_storeu_ps(out + i, f16(_mm512_loadu_ps(in + i)));
    }
  }
  if (i < count) partial(i, count - i);
  if (stream) _mm_sfence();  // order the streaming stores before the join
}

KINDLING_AVX512 void GeluFloats16(float* out, const float* in, int64_t count,
                                  bool stream) {
  MapFloats16(out, in, count, stream,
              [](__m512 x) KINDLING_AVX512 { return Gelu16(x); });
}

KINDLING_AVX512 void ExpFloats16(float* out, const float* in, int64_t count,
                                 bool stream) {
  MapFloats16(out, in, count, stream,
              [](__m512 x) KINDLING_AVX512 { return Exp16(x); });
}

KINDLING_AVX512 void LogFloats16(float* out, const float* in, int64_t count,
                                 bool stream) {
  MapFloats16(out, in, count, stream,
              [](__m512 x) KINDLING_AVX512 { return Log16(x); });
}

KINDLING_AVX512 void TanhFloats16(float* out, const float* in, int64_t count,
                                  bool stream) {
  MapFloats16(out, in, count, stream,
              [](__m512 x) KINDLING_AVX512 { return Tanh16(x); });
}

KINDLING_AVX512 void SigmoidFloats16(float* out, const float* in, int64_t count,
                                     bool stream) {
  MapFloats16(out, in, count, stream,
              [](__m512 x) KINDLING_AVX512 { return Sigmoid16(x); });
}
KINDLING_AVX512_END

// RunUnaryF32() is RunUnary for float with an eight-lane f; strided
// segments go through a small buffer. Unit-stride segments run
// `contiguous(out, in, count, stream)` where given (a wider variant of f),
// else MapFloats with f.
template <class F8, class Contiguous = std::nullptr_t>
void RunUnaryF32(const StridedLayout<2>& layout, const F8& f,
                 const Contiguous& contiguous = nullptr) {
  const bool stream = layout.numel * int64_t{sizeof(float)} >= kStreamingBytes;
  ForEachSegment(layout, kTranscendentalGrain,
                 [&f, &contiguous, stream](
                     char* const* data, const int64_t* stride, int64_t count) {
                   float* out = reinterpret_cast<float*>(data[0]);
                   const float* in = reinterpret_cast<const float*>(data[1]);
                   const int64_t so = stride[0] / int64_t{sizeof(float)};
                   const int64_t si = stride[1] / int64_t{sizeof(float)};
                   if (so == 1 && si == 1) {
                     if constexpr (std::is_same_v<Contiguous, std::nullptr_t>) {
                       MapFloats(out, in, count, stream, f);
                     } else {
                       contiguous(out, in, count, stream);
                     }
                     return;
                   }
                   alignas(32) float buffer[8];
                   for (int64_t i = 0; i < count; i += 8) {
                     const int64_t n = std::min<int64_t>(8, count - i);
                     for (int64_t k = 0; k < n; ++k)
                       buffer[k] = in[(i + k) * si];
                     _mm256_store_ps(buffer, f(_mm256_load_ps(buffer)));
                     for (int64_t k = 0; k < n; ++k)
                       out[(i + k) * so] = buffer[k];
                   }
                 });
}

using element_math::IntPow;
using element_math::SafeDiv;
using element_math::WrapAdd;
using element_math::WrapMul;
using element_math::WrapSub;

template <class T>
void UnaryTyped(UnaryOp op, const StridedLayout<2>& layout, double arg0,
                double arg1) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  switch (op) {
    case UnaryOp::kNeg:
      return RunUnary<T, T>(layout, kElementGrain,
                            [](T x) { return WrapSub(T{0}, x); });
    case UnaryOp::kAbs:
      return RunUnary<T, T>(layout, kElementGrain, [](T x) {
        if constexpr (std::is_unsigned_v<T>) {
          return x;
        } else if constexpr (kFloat) {
          return std::fabs(x);
        } else {
          return x < 0 ? WrapSub(T{0}, x) : x;
        }
      });
    case UnaryOp::kRelu:
      return RunUnary<T, T>(layout, kElementGrain,
                            [](T x) { return element_math::Relu(x); });
    case UnaryOp::kClamp: {
      const T low = Convert<T>(arg0);
      const T high = Convert<T>(arg1);
      return RunUnary<T, T>(layout, kElementGrain, [low, high](T x) {
        return element_math::Clamp(x, low, high);
      });
    }
    default:
      break;
  }
  if constexpr (std::is_same_v<T, float>) {
    switch (op) {
      case UnaryOp::kExp: {
        const auto exp8 = [](__m256 x) { return Exp8(x); };
        // Where the CPU has AVX-512, sixteen lanes per instruction (same
        // bits): exp, log, sigmoid, tanh and GELU are bound by arithmetic,
        // not memory.
        if (HasAvx512()) return RunUnaryF32(layout, exp8, ExpFloats16);
        return RunUnaryF32(layout, exp8);
      }
      case UnaryOp::kLog: {
        const auto log8 = [](__m256 x) { return Log8(x); };
        if (HasAvx512()) return RunUnaryF32(layout, log8, LogFloats16);
        return RunUnaryF32(layout, log8);
      }
      case UnaryOp::kSqrt:
        return RunUnaryF32(layout, [](__m256 x) { return Sqrt8(x); });
      case UnaryOp::kGelu: {
        const auto gelu8 = [](__m256 x) { return Gelu8(x); };
        if (HasAvx512()) return RunUnaryF32(layout, gelu8, GeluFloats16);
        return RunUnaryF32(layout, gelu8);
      }
      case UnaryOp::kSigmoid: {
        const auto sigmoid8 = [](__m256 x) { return Sigmoid8(x); };
        if (HasAvx512()) return RunUnaryF32(layout, sigmoid8, SigmoidFloats16);
        return RunUnaryF32(layout, sigmoid8);
      }
      case UnaryOp::kTanh: {
        const auto tanh8 = [](__m256 x) { return Tanh8(x); };
        if (HasAvx512()) return RunUnaryF32(layout, tanh8, TanhFloats16);
        return RunUnaryF32(layout, tanh8);
      }
      default:
        break;
    }
  } else if constexpr (kFloat) {
    switch (op) {
      case UnaryOp::kExp:
        return RunUnary<T, T>(layout, kTranscendentalGrain,
                              [](T x) { return std::exp(x); });
      case UnaryOp::kLog:
        return RunUnary<T, T>(layout, kTranscendentalGrain,
                              [](T x) { return std::log(x); });
      case UnaryOp::kSqrt:
        return RunUnary<T, T>(layout, kElementGrain,
                              [](T x) { return std::sqrt(x); });
      case UnaryOp::kGelu:
        return RunUnary<T, T>(layout, kTranscendentalGrain,
                              [](T x) { return element_math::Gelu(x); });
      case UnaryOp::kSigmoid:
        return RunUnary<T, T>(layout, kTranscendentalGrain,
                              [](T x) { return element_math::Sigmoid(x); });
      case UnaryOp::kTanh:
        return RunUnary<T, T>(layout, kTranscendentalGrain,
                              [](T x) { return std::tanh(x); });
      default:
        break;
    }
  }
  KINDLING_CHECK(false, "cpu unary op %d: unsupported dtype",
                 static_cast<int>(op));
}

}  // namespace

void UnaryKernel(UnaryOp op, const TensorBase& out, const TensorBase& in,
                 double arg0, double arg1) {
  const auto layout = MakeLayout<2>({&out, &in});
  if (op == UnaryOp::kLogicalNot) {
    RunUnary<bool, bool>(layout, kElementGrain, [](bool x) { return !x; });
    return;
  }
  DispatchDType<kArithmeticDTypes>(in.dtype(), "cpu unary", [&]<class T>() {
    UnaryTyped<T>(op, layout, arg0, arg1);
  });
}

namespace {

// GeluAndSlopeFloats8() writes out[i] = GELU(x[i]) and slope[i] = GELU'(x[i])
// for i < count, eight lanes at a time (Gelu8 and GeluSlope8's bits). Plain
// stores, even for outputs past kStreamingBytes: two streams of non-temporal
// stores took 4.5 ms on [4096, 512] against 1.8-2.1 ms for these (Zen 3, two
// threads), and the GELU's output is read by the next product right away.
void GeluAndSlopeFloats8(float* out, float* slope, const float* x,
                         int64_t count) {
  WriteFloats(out, count, /*stream=*/false, [&](int64_t i, int64_t lanes) {
    __m256 s;
    const __m256 y = GeluAndSlope8(
        lanes == 8 ? _mm256_loadu_ps(x + i) : LoadPartial(x + i, lanes, 0.0f),
        &s);
    if (lanes == 8) {
      _mm256_storeu_ps(slope + i, s);
    } else {
      StorePartial(slope + i, lanes, s);
    }
    return y;
  });
}

// GeluAndSlopeFloats16() is GeluAndSlopeFloats8() with sixteen lanes and the
// same bits. REQUIRES: HasAvx512().
KINDLING_AVX512_BEGIN
KINDLING_AVX512 void GeluAndSlopeFloats16(float* out, float* slope,
                                          const float* x, int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m512 s;
    _mm512_storeu_ps(out + i, GeluAndSlope16(_mm512_loadu_ps(x + i), &s));
    _mm512_storeu_ps(slope + i, s);
  }
  if (i < count) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (count - i)) - 1);
    __m512 s;
    const __m512 y = GeluAndSlope16(_mm512_maskz_loadu_ps(mask, x + i), &s);
    _mm512_mask_storeu_ps(out + i, mask, y);
    _mm512_mask_storeu_ps(slope + i, mask, s);
  }
}
KINDLING_AVX512_END

}  // namespace

bool GeluWithSlopeKernel(const TensorBase& in, TensorBase* out,
                         TensorBase* slope) {
  if (in.dtype() != DType::kF32 || !in.is_contiguous()) return false;
  *out = TensorBase::Empty(in.shape(), DType::kF32, in.device());
  *slope = TensorBase::Empty(in.shape(), DType::kF32, in.device());
  float* y = out->data_as<float>();
  float* s = slope->data_as<float>();
  const float* x = in.data_as<const float>();
  const bool avx512 = HasAvx512();
  ParallelFor(
      in.numel(), kTranscendentalGrain, [&](int64_t begin, int64_t end) {
        if (avx512) {
          GeluAndSlopeFloats16(y + begin, s + begin, x + begin, end - begin);
        } else {
          GeluAndSlopeFloats8(y + begin, s + begin, x + begin, end - begin);
        }
      });
  return true;
}

namespace {

// --- Binary ----------------------------------------------------------------

// Runs out[i] = f(lhs[i], rhs[i]) with loops for the unit-stride and
// broadcast-scalar cases.
template <class TOut, class TIn, class F>
void RunBinary(const StridedLayout<3>& layout, F f) {
  ForEachSegment(layout, kElementGrain,
                 [f](char* const* data, const int64_t* stride, int64_t count) {
                   TOut* out = reinterpret_cast<TOut*>(data[0]);
                   const TIn* a = reinterpret_cast<const TIn*>(data[1]);
                   const TIn* b = reinterpret_cast<const TIn*>(data[2]);
                   const int64_t so = stride[0] / int64_t{sizeof(TOut)};
                   const int64_t sa = stride[1] / int64_t{sizeof(TIn)};
                   const int64_t sb = stride[2] / int64_t{sizeof(TIn)};
                   if (so == 1 && sa == 1 && sb == 1 &&
                       count * int64_t{sizeof(TOut)} >= kStreamingBytes) {
                     StreamingLoop(out, count,
                                   [&](TOut* buffer, int64_t begin, int64_t n) {
                                     const TIn* x = a + begin;
                                     const TIn* y = b + begin;
                                     for (int64_t i = 0; i < n; ++i)
                                       buffer[i] = f(x[i], y[i]);
                                   });
                   } else if (so == 1 && sa == 1 && sb == 1) {
                     for (int64_t i = 0; i < count; ++i) out[i] = f(a[i], b[i]);
                   } else if (so == 1 && sa == 1 && sb == 0) {
                     const TIn scalar = *b;
                     for (int64_t i = 0; i < count; ++i)
                       out[i] = f(a[i], scalar);
                   } else if (so == 1 && sa == 0 && sb == 1) {
                     const TIn scalar = *a;
                     for (int64_t i = 0; i < count; ++i)
                       out[i] = f(scalar, b[i]);
                   } else {
                     for (int64_t i = 0; i < count; ++i) {
                       out[i * so] = f(a[i * sa], b[i * sb]);
                     }
                   }
                 });
}

// VisitBinaryFn() calls visit.template operator()<TOut>(f) with op's
// element function f(T a, T b) -> TOut (T, or bool for comparisons), so
// Binary and BinaryScalar share one definition of each op.
template <class T, class Visit>
void VisitBinaryFn(BinaryOp op, const Visit& visit) {
  switch (op) {
    case BinaryOp::kAdd:
      return visit.template operator()<T>(
          [](T a, T b) { return WrapAdd(a, b); });
    case BinaryOp::kSub:
      return visit.template operator()<T>(
          [](T a, T b) { return WrapSub(a, b); });
    case BinaryOp::kMul:
      return visit.template operator()<T>(
          [](T a, T b) { return WrapMul(a, b); });
    case BinaryOp::kDiv:
      return visit.template operator()<T>(
          [](T a, T b) { return SafeDiv(a, b); });
    case BinaryOp::kPow:
      return visit.template operator()<T>([](T a, T b) {
        if constexpr (std::is_floating_point_v<T>) {
          return std::pow(a, b);
        } else {
          return IntPow(a, b);
        }
      });
    case BinaryOp::kMaximum:
      return visit.template operator()<T>(
          [](T a, T b) { return element_math::Maximum(a, b); });
    case BinaryOp::kMinimum:
      return visit.template operator()<T>(
          [](T a, T b) { return element_math::Minimum(a, b); });
    case BinaryOp::kReluBackward:
      return visit.template operator()<T>(
          [](T a, T b) { return element_math::ReluBackward(a, b); });
    case BinaryOp::kGeluBackward:
      // Floating-point only (the op's checks refuse other dtypes); f32
      // takes the vector path in BinaryKernel.
      if constexpr (std::is_floating_point_v<T>) {
        return visit.template operator()<T>(
            [](T a, T b) { return element_math::GeluBackward(a, b); });
      }
      break;
    case BinaryOp::kEqual:
      return visit.template operator()<bool>([](T a, T b) { return a == b; });
    case BinaryOp::kNotEqual:
      return visit.template operator()<bool>([](T a, T b) { return a != b; });
    case BinaryOp::kLess:
      return visit.template operator()<bool>([](T a, T b) { return a < b; });
    case BinaryOp::kLessEqual:
      return visit.template operator()<bool>([](T a, T b) { return a <= b; });
    case BinaryOp::kGreater:
      return visit.template operator()<bool>([](T a, T b) { return a > b; });
    case BinaryOp::kGreaterEqual:
      return visit.template operator()<bool>([](T a, T b) { return a >= b; });
    case BinaryOp::kLogicalAnd:
    case BinaryOp::kLogicalOr:
      break;
  }
  KINDLING_CHECK(false, "cpu binary op %d: unsupported dtype",
                 static_cast<int>(op));
}

// VisitBoolBinaryFn() is VisitBinaryFn() for bool operands: the logical ops
// and the comparisons.
template <class Visit>
void VisitBoolBinaryFn(BinaryOp op, const Visit& visit) {
  switch (op) {
    case BinaryOp::kLogicalAnd:
      return visit.template operator()<bool>(
          [](bool a, bool b) { return a && b; });
    case BinaryOp::kLogicalOr:
      return visit.template operator()<bool>(
          [](bool a, bool b) { return a || b; });
    case BinaryOp::kEqual:
      return visit.template operator()<bool>(
          [](bool a, bool b) { return a == b; });
    case BinaryOp::kNotEqual:
      return visit.template operator()<bool>(
          [](bool a, bool b) { return a != b; });
    // Ordered as PyTorch orders bools: false < true.
    case BinaryOp::kLess:
      return visit.template operator()<bool>(
          [](bool a, bool b) { return a < b; });
    case BinaryOp::kLessEqual:
      return visit.template operator()<bool>(
          [](bool a, bool b) { return a <= b; });
    case BinaryOp::kGreater:
      return visit.template operator()<bool>(
          [](bool a, bool b) { return a > b; });
    case BinaryOp::kGreaterEqual:
      return visit.template operator()<bool>(
          [](bool a, bool b) { return a >= b; });
    default:
      break;
  }
  KINDLING_CHECK(false, "cpu binary op %d: not defined for bool",
                 static_cast<int>(op));
}

// GeluBackwardFloats8() writes out[i] = grad[i] * GELU'(x[i]) for i <
// count, eight lanes at a time; out may alias grad or x exactly.
void GeluBackwardFloats8(float* out, const float* grad, const float* x,
                         int64_t count) {
  WriteFloats(out, count, /*stream=*/false, [&](int64_t i, int64_t lanes) {
    const __m256 slope = GeluSlope8(
        lanes == 8 ? _mm256_loadu_ps(x + i) : LoadPartial(x + i, lanes, 0.0f));
    return _mm256_mul_ps(lanes == 8 ? _mm256_loadu_ps(grad + i)
                                    : LoadPartial(grad + i, lanes, 0.0f),
                         slope);
  });
}

// GeluBackwardFloats16() is GeluBackwardFloats8() with sixteen lanes and
// the same bits. REQUIRES: HasAvx512().
KINDLING_AVX512_BEGIN
KINDLING_AVX512 void GeluBackwardFloats16(float* out, const float* grad,
                                          const float* x, int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(out + i,
                     _mm512_mul_ps(_mm512_loadu_ps(grad + i),
                                   GeluSlope16(_mm512_loadu_ps(x + i))));
  }
  if (i < count) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (count - i)) - 1);
    _mm512_mask_storeu_ps(
        out + i, mask,
        _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, grad + i),
                      GeluSlope16(_mm512_maskz_loadu_ps(mask, x + i))));
  }
}
KINDLING_AVX512_END

// RunGeluBackwardF32() is BinaryOp::kGeluBackward on f32 operands: unit-
// stride segments run the vector functions; strided and broadcast ones go
// through small buffers, so every layout gets the same bits.
void RunGeluBackwardF32(const StridedLayout<3>& layout) {
  const bool avx512 = HasAvx512();
  ForEachSegment(
      layout, kTranscendentalGrain,
      [avx512](char* const* data, const int64_t* stride, int64_t count) {
        float* out = reinterpret_cast<float*>(data[0]);
        const float* grad = reinterpret_cast<const float*>(data[1]);
        const float* x = reinterpret_cast<const float*>(data[2]);
        const int64_t so = stride[0] / int64_t{sizeof(float)};
        const int64_t sg = stride[1] / int64_t{sizeof(float)};
        const int64_t sx = stride[2] / int64_t{sizeof(float)};
        const auto run = [avx512](float* o, const float* g, const float* v,
                                  int64_t n) {
          if (avx512) return GeluBackwardFloats16(o, g, v, n);
          GeluBackwardFloats8(o, g, v, n);
        };
        if (so == 1 && sg == 1 && sx == 1) return run(out, grad, x, count);
        constexpr int64_t kBuffer = 64;
        float grads[kBuffer], inputs[kBuffer], results[kBuffer];
        for (int64_t i = 0; i < count; i += kBuffer) {
          const int64_t n = std::min(kBuffer, count - i);
          for (int64_t k = 0; k < n; ++k) {
            grads[k] = grad[(i + k) * sg];
            inputs[k] = x[(i + k) * sx];
          }
          run(results, grads, inputs, n);
          for (int64_t k = 0; k < n; ++k) out[(i + k) * so] = results[k];
        }
      });
}

// WithScalar() is `layout` (out, tensor) with *scalar as a third operand
// of stride 0: the first input when `scalar_is_lhs`, else the second.
StridedLayout<3> WithScalar(const StridedLayout<2>& layout, float* scalar,
                            bool scalar_is_lhs) {
  StridedLayout<3> result;
  result.rank = layout.rank;
  result.numel = layout.numel;
  const int tensor_slot = scalar_is_lhs ? 2 : 1;
  const int scalar_slot = scalar_is_lhs ? 1 : 2;
  for (int axis = 0; axis < layout.rank; ++axis) {
    result.shape[axis] = layout.shape[axis];
    result.strides[0][axis] = layout.strides[0][axis];
    result.strides[tensor_slot][axis] = layout.strides[1][axis];
    result.strides[scalar_slot][axis] = 0;
  }
  result.data[0] = layout.data[0];
  result.data[tensor_slot] = layout.data[1];
  result.data[scalar_slot] = reinterpret_cast<char*>(scalar);
  return result;
}

// RunBinaryScalar() writes out = f(tensor, scalar) (or f(scalar, tensor))
// over a 2-operand layout: a unary map with the scalar captured by value,
// so it gets RunUnary's contiguous, streaming and strided loops.
template <class TOut, class T, class F>
void RunBinaryScalar(const StridedLayout<2>& layout, T scalar,
                     bool scalar_is_lhs, F f) {
  if (scalar_is_lhs) {
    RunUnary<TOut, T>(layout, kElementGrain,
                      [f, scalar](T x) { return f(scalar, x); });
  } else {
    RunUnary<TOut, T>(layout, kElementGrain,
                      [f, scalar](T x) { return f(x, scalar); });
  }
}

}  // namespace

void BinaryKernel(BinaryOp op, const TensorBase& out, const TensorBase& lhs,
                  const TensorBase& rhs) {
  const auto layout = MakeLayout<3>({&out, &lhs, &rhs});
  if (lhs.dtype() == DType::kBool) {
    return VisitBoolBinaryFn(
        op, [&]<class TOut>(auto f) { RunBinary<TOut, bool>(layout, f); });
  }
  if (op == BinaryOp::kGeluBackward && lhs.dtype() == DType::kF32) {
    return RunGeluBackwardF32(layout);
  }
  DispatchDType<kArithmeticDTypes>(lhs.dtype(), "cpu binary", [&]<class T>() {
    VisitBinaryFn<T>(
        op, [&]<class TOut>(auto f) { RunBinary<TOut, T>(layout, f); });
  });
}

void BinaryScalarKernel(BinaryOp op, const TensorBase& out,
                        const TensorBase& tensor, double scalar,
                        bool scalar_is_lhs) {
  const auto layout = MakeLayout<2>({&out, &tensor});
  if (tensor.dtype() == DType::kBool) {
    const bool value = Convert<bool>(scalar);
    return VisitBoolBinaryFn(op, [&]<class TOut>(auto f) {
      RunBinaryScalar<TOut, bool>(layout, value, scalar_is_lhs, f);
    });
  }
  if (op == BinaryOp::kGeluBackward && tensor.dtype() == DType::kF32) {
    // The vector path, as Binary with a rank-0 operand takes (same bits).
    float value = Convert<float>(scalar);
    return RunGeluBackwardF32(WithScalar(layout, &value, scalar_is_lhs));
  }
  DispatchDType<kArithmeticDTypes>(
      tensor.dtype(), "cpu binary_scalar", [&]<class T>() {
        // Fill's conversion (element.h), so the result is Binary's with a
        // filled rank-0 operand.
        const T value = Convert<T>(scalar);
        VisitBinaryFn<T>(op, [&]<class TOut>(auto f) {
          RunBinaryScalar<TOut, T>(layout, value, scalar_is_lhs, f);
        });
      });
}

void WhereKernel(const TensorBase& out, const TensorBase& condition,
                 const TensorBase& on_true, const TensorBase& on_false) {
  const auto layout = MakeLayout<4>({&out, &condition, &on_true, &on_false});
  DispatchDType(out.dtype(), [&]<class T>() {
    ForEachSegment(layout, kElementGrain,
                   [](char* const* data, const int64_t* stride, int64_t count) {
                     T* result = reinterpret_cast<T*>(data[0]);
                     const bool* pick = reinterpret_cast<const bool*>(data[1]);
                     const T* a = reinterpret_cast<const T*>(data[2]);
                     const T* b = reinterpret_cast<const T*>(data[3]);
                     const int64_t so = stride[0] / int64_t{sizeof(T)};
                     const int64_t sc = stride[1];
                     const int64_t sa = stride[2] / int64_t{sizeof(T)};
                     const int64_t sb = stride[3] / int64_t{sizeof(T)};
                     for (int64_t i = 0; i < count; ++i) {
                       result[i * so] = pick[i * sc] ? a[i * sa] : b[i * sb];
                     }
                   });
  });
}

}  // namespace kindling::cpu
