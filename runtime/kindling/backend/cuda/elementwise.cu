// Element-wise CUDA kernels: copy/convert, fill, unary, binary, where.
//
// Each is one grid-stride launch over the output's shape (launch.h) with
// the operands' strides in a StridedIndexer, so broadcast (zero-stride) and
// transposed inputs need no copies. Results match the CPU backend's rules
// (element conversions from device_element.h, wrapping integer arithmetic,
// NaN-propagating maximum/minimum); the 16-bit floats, which the CPU front
// end computes in f32, are computed here in f32 and rounded on store.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/core/check.h"
#include "kindling/tensor/element_math.h"

namespace kindling::cuda {
namespace {

// Load() widens a stored element to its ComputeType; Store() rounds back.
template <class T>
__device__ inline ComputeType<T> Load(T value) {
  return ToCompute(value);
}
template <class T>
__device__ inline T Store(ComputeType<T> value) {
  return Convert<T>(value);
}

// --- Copy and fill ---------------------------------------------------------

template <class To, class From>
struct ConvertOp {
  To* out;
  const From* in;
  __device__ void operator()(const int64_t* offset) const {
    out[offset[0]] = Convert<To>(in[offset[1]]);
  }
};

template <class T>
struct FillOp {
  T* out;
  T value;
  __device__ void operator()(const int64_t* offset) const {
    out[offset[0]] = value;
  }
};

}  // namespace

void CopyKernel(cudaStream_t stream, const TensorBase& out,
                const TensorBase& in) {
  if (out.numel() == 0) return;
  if (out.dtype() == in.dtype() && out.is_contiguous() && in.is_contiguous()) {
    KINDLING_CUDA_CHECK(cudaMemcpyAsync(out.data(), in.data(),
                                        out.numel() * out.element_size(),
                                        cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const StridedIndexer<2> indexer = IndexerOf<2>({&out, &in});
  if (out.dtype() == in.dtype()) {
    DispatchBySize(out.element_size(), [&]<class U>() {
      LaunchStrided("ConvertOp", stream, indexer,
                    ConvertOp<U, U>{out.data_as<U>(), in.data_as<const U>()});
    });
    return;
  }
  DispatchDType(out.dtype(), [&]<class To>() {
    DispatchDType(in.dtype(), [&]<class From>() {
      LaunchStrided(
          "ConvertOp", stream, indexer,
          ConvertOp<To, From>{out.data_as<To>(), in.data_as<const From>()});
    });
  });
}

void FillKernel(cudaStream_t stream, const TensorBase& out, double value) {
  const StridedIndexer<1> indexer = IndexerOf<1>({&out});
  DispatchDType(out.dtype(), [&]<class T>() {
    LaunchStrided("FillOp", stream, indexer,
                  FillOp<T>{out.data_as<T>(), Convert<T>(value)});
  });
}

namespace {

// --- Unary -----------------------------------------------------------------

using element_math::IntPow;
using element_math::SafeDiv;
using element_math::WrapAdd;
using element_math::WrapMul;
using element_math::WrapSub;

// Floating functions in float or double (C is the compute type).
__device__ inline float Exp(float x) { return expf(x); }
__device__ inline double Exp(double x) { return exp(x); }
__device__ inline float Log(float x) { return logf(x); }
__device__ inline double Log(double x) { return log(x); }
__device__ inline float Sqrt(float x) { return sqrtf(x); }
__device__ inline double Sqrt(double x) { return sqrt(x); }
__device__ inline float Tanh(float x) { return tanhf(x); }
__device__ inline double Tanh(double x) { return tanh(x); }
__device__ inline float Pow(float x, float y) { return powf(x, y); }
__device__ inline double Pow(double x, double y) { return pow(x, y); }
__device__ inline float Abs(float x) { return fabsf(x); }
__device__ inline double Abs(double x) { return fabs(x); }

// The unary functions on the compute type C.
struct NegFn {
  template <class C>
  __device__ C operator()(C x) const {
    return WrapSub(C{0}, x);
  }
};
struct AbsFn {
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else if constexpr (std::is_floating_point_v<C>) {
      return Abs(x);
    } else {
      return x < 0 ? WrapSub(C{0}, x) : x;
    }
  }
};
struct ReluFn {
  template <class C>
  __device__ C operator()(C x) const {
    return element_math::Relu(x);
  }
};
template <class C>
struct ClampFn {
  C low;
  C high;
  __device__ C operator()(C x) const {
    return element_math::Clamp(x, low, high);
  }
};
struct ExpFn {
  template <class C>
  __device__ C operator()(C x) const {
    return Exp(x);
  }
};
struct LogFn {
  template <class C>
  __device__ C operator()(C x) const {
    return Log(x);
  }
};
struct SqrtFn {
  template <class C>
  __device__ C operator()(C x) const {
    return Sqrt(x);
  }
};
struct GeluFn {
  template <class C>
  __device__ C operator()(C x) const {
    return element_math::Gelu(x);
  }
};
struct SigmoidFn {
  template <class C>
  __device__ C operator()(C x) const {
    return element_math::Sigmoid(x);
  }
};
struct TanhFn {
  template <class C>
  __device__ C operator()(C x) const {
    return Tanh(x);
  }
};

template <class T, class F>
struct UnaryApplyOp {
  T* out;
  const T* in;
  F f;
  __device__ void operator()(const int64_t* offset) const {
    out[offset[0]] = Store<T>(f(Load(in[offset[1]])));
  }
};

struct LogicalNotOp {
  bool* out;
  const bool* in;
  __device__ void operator()(const int64_t* offset) const {
    out[offset[0]] = !in[offset[1]];
  }
};

template <class T, class F>
void RunUnary(cudaStream_t stream, const StridedIndexer<2>& indexer,
              const TensorBase& out, const TensorBase& in, F f) {
  LaunchStrided("UnaryApplyOp", stream, indexer,
                UnaryApplyOp<T, F>{out.data_as<T>(), in.data_as<const T>(), f});
}

template <class T>
void UnaryTyped(cudaStream_t stream, UnaryOp op,
                const StridedIndexer<2>& indexer, const TensorBase& out,
                const TensorBase& in, double arg0, double arg1) {
  using C = ComputeType<T>;
  switch (op) {
    case UnaryOp::kNeg:
      return RunUnary<T>(stream, indexer, out, in, NegFn{});
    case UnaryOp::kAbs:
      return RunUnary<T>(stream, indexer, out, in, AbsFn{});
    case UnaryOp::kRelu:
      return RunUnary<T>(stream, indexer, out, in, ReluFn{});
    case UnaryOp::kClamp: {
      // The bounds are rounded to T first, as the CPU does.
      const C low = ToCompute(Convert<T>(arg0));
      const C high = ToCompute(Convert<T>(arg1));
      return RunUnary<T>(stream, indexer, out, in, ClampFn<C>{low, high});
    }
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case UnaryOp::kExp:
        return RunUnary<T>(stream, indexer, out, in, ExpFn{});
      case UnaryOp::kLog:
        return RunUnary<T>(stream, indexer, out, in, LogFn{});
      case UnaryOp::kSqrt:
        return RunUnary<T>(stream, indexer, out, in, SqrtFn{});
      case UnaryOp::kGelu:
        return RunUnary<T>(stream, indexer, out, in, GeluFn{});
      case UnaryOp::kSigmoid:
        return RunUnary<T>(stream, indexer, out, in, SigmoidFn{});
      case UnaryOp::kTanh:
        return RunUnary<T>(stream, indexer, out, in, TanhFn{});
      default:
        break;
    }
  }
  KINDLING_CHECK(false, "cuda unary op %d: unsupported dtype %s",
                 static_cast<int>(op), std::string(DTypeName(in.dtype())));
}

}  // namespace

void UnaryKernel(cudaStream_t stream, UnaryOp op, const TensorBase& out,
                 const TensorBase& in, double arg0, double arg1) {
  const StridedIndexer<2> indexer = IndexerOf<2>({&out, &in});
  if (op == UnaryOp::kLogicalNot) {
    LaunchStrided("LogicalNotOp", stream, indexer,
                  LogicalNotOp{out.data_as<bool>(), in.data_as<const bool>()});
    return;
  }
  DispatchDType<kNumericDTypes>(in.dtype(), "cuda unary", [&]<class T>() {
    UnaryTyped<T>(stream, op, indexer, out, in, arg0, arg1);
  });
}

namespace {

// --- Binary ----------------------------------------------------------------

struct AddFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return WrapAdd(a, b);
  }
};
struct SubFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return WrapSub(a, b);
  }
};
struct MulFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return WrapMul(a, b);
  }
};
struct DivFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return SafeDiv(a, b);
  }
};
struct PowFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return Pow(a, b);
    } else {
      return IntPow(a, b);
    }
  }
};
struct MaximumFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return element_math::Maximum(a, b);
  }
};
struct MinimumFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return element_math::Minimum(a, b);
  }
};
struct ReluBackwardFn {
  template <class C>
  __device__ C operator()(C grad, C input) const {
    return element_math::ReluBackward(grad, input);
  }
};
struct GeluBackwardFn {
  template <class C>
  __device__ C operator()(C grad, C input) const {
    return element_math::GeluBackward(grad, input);
  }
};
struct EqualFn {
  template <class C>
  __device__ bool operator()(C a, C b) const {
    return a == b;
  }
};
struct NotEqualFn {
  template <class C>
  __device__ bool operator()(C a, C b) const {
    return a != b;
  }
};
struct LessFn {
  template <class C>
  __device__ bool operator()(C a, C b) const {
    return a < b;
  }
};
struct LessEqualFn {
  template <class C>
  __device__ bool operator()(C a, C b) const {
    return a <= b;
  }
};
struct GreaterFn {
  template <class C>
  __device__ bool operator()(C a, C b) const {
    return a > b;
  }
};
struct GreaterEqualFn {
  template <class C>
  __device__ bool operator()(C a, C b) const {
    return a >= b;
  }
};
struct LogicalAndFn {
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};
struct LogicalOrFn {
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};

// out[i] = f(lhs[i], rhs[i]) in the compute type; TOut is T, or bool for
// comparisons. Each thread reads its own element before writing it, so out
// may alias lhs exactly.
template <class TOut, class T, class F>
struct BinaryApplyOp {
  TOut* out;
  const T* lhs;
  const T* rhs;
  F f;
  __device__ void operator()(const int64_t* offset) const {
    const auto value = f(Load(lhs[offset[1]]), Load(rhs[offset[2]]));
    if constexpr (std::is_same_v<TOut, bool>) {
      out[offset[0]] = value;
    } else {
      out[offset[0]] = Store<TOut>(value);
    }
  }
};

// Vector16<T>: 16 bytes of T, loaded and stored with one instruction.
template <class T>
struct alignas(16) Vector16 {
  static constexpr int kLanes = 16 / sizeof(T);
  T lane[kLanes];
};

// VectorBinaryKernel: out[i] = f(lhs[i], rhs[i]) over `count` contiguous
// elements, 16 bytes of each operand a thread per step (every pointer
// 16-byte aligned), then the last count % kLanes elements one by one. A
// thread reads its vector before writing it, so out may alias lhs exactly.
template <class T, class F>
__global__ void VectorBinaryKernel(int64_t count, T* out, const T* lhs,
                                   const T* rhs, F f) {
  using V = Vector16<T>;
  const int64_t vectors = count / V::kLanes;
  for (int64_t i = GlobalThread(); i < vectors; i += GridThreads()) {
    const V a = reinterpret_cast<const V*>(lhs)[i];
    const V b = reinterpret_cast<const V*>(rhs)[i];
    V c;
#pragma unroll
    for (int k = 0; k < V::kLanes; ++k) {
      c.lane[k] = Store<T>(f(Load(a.lane[k]), Load(b.lane[k])));
    }
    reinterpret_cast<V*>(out)[i] = c;
  }
  for (int64_t i = vectors * V::kLanes + GlobalThread(); i < count;
       i += GridThreads()) {
    out[i] = Store<T>(f(Load(lhs[i]), Load(rhs[i])));
  }
}

bool Aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

// RunVectorBinary(): the VectorBinaryKernel launch when it applies (same
// dtype out, every operand contiguous in the output's order, 16-byte
// aligned); false otherwise. Scalar loads left `a + b` at 0.78x of a
// device-to-device memcpy's bandwidth on an H100.
template <class TOut, class T, class F>
bool RunVectorBinary(cudaStream_t stream, const StridedIndexer<3>& indexer,
                     const TensorBase& out, const TensorBase& lhs,
                     const TensorBase& rhs, F f) {
  if constexpr (!std::is_same_v<TOut, T> || std::is_same_v<T, bool> ||
                16 % sizeof(T) != 0) {
    return false;
  } else {
    if (indexer.rank != 1) return false;
    for (int k = 0; k < 3; ++k) {
      if (indexer.strides[k][0] != 1) return false;
    }
    T* out_data = out.data_as<T>();
    const T* lhs_data = lhs.data_as<const T>();
    const T* rhs_data = rhs.data_as<const T>();
    if (!Aligned16(out_data) || !Aligned16(lhs_data) || !Aligned16(rhs_data)) {
      return false;
    }
    const LaunchGrid grid =
        GridFor(std::max<int64_t>(1, indexer.numel / Vector16<T>::kLanes));
    VectorBinaryKernel<T, F>
        <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(
            indexer.numel, out_data, lhs_data, rhs_data, f);
    KINDLING_CUDA_CHECK_LAUNCH("VectorBinaryKernel");
    return true;
  }
}

template <class TOut, class T, class F>
void RunBinary(cudaStream_t stream, const StridedIndexer<3>& indexer,
               const TensorBase& out, const TensorBase& lhs,
               const TensorBase& rhs, F f) {
  if (indexer.numel == 0) return;
  if (RunVectorBinary<TOut, T>(stream, indexer, out, lhs, rhs, f)) return;
  LaunchStrided(
      "BinaryApplyOp", stream, indexer,
      BinaryApplyOp<TOut, T, F>{out.data_as<TOut>(), lhs.data_as<const T>(),
                                rhs.data_as<const T>(), f});
}

// VisitBinaryFn() calls visit.template operator()<kBoolResult>(f) with
// op's functor f on the compute type (kBoolResult for the comparisons,
// which write bool), so Binary and BinaryScalar share one definition of
// each op. `dtype` is for the message.
template <class Visit>
void VisitBinaryFn(BinaryOp op, DType dtype, const Visit& visit) {
  switch (op) {
    case BinaryOp::kAdd:
      return visit.template operator()<false>(AddFn{});
    case BinaryOp::kSub:
      return visit.template operator()<false>(SubFn{});
    case BinaryOp::kMul:
      return visit.template operator()<false>(MulFn{});
    case BinaryOp::kDiv:
      return visit.template operator()<false>(DivFn{});
    case BinaryOp::kPow:
      return visit.template operator()<false>(PowFn{});
    case BinaryOp::kMaximum:
      return visit.template operator()<false>(MaximumFn{});
    case BinaryOp::kMinimum:
      return visit.template operator()<false>(MinimumFn{});
    case BinaryOp::kReluBackward:
      return visit.template operator()<false>(ReluBackwardFn{});
    case BinaryOp::kGeluBackward:
      return visit.template operator()<false>(GeluBackwardFn{});
    case BinaryOp::kEqual:
      return visit.template operator()<true>(EqualFn{});
    case BinaryOp::kNotEqual:
      return visit.template operator()<true>(NotEqualFn{});
    case BinaryOp::kLess:
      return visit.template operator()<true>(LessFn{});
    case BinaryOp::kLessEqual:
      return visit.template operator()<true>(LessEqualFn{});
    case BinaryOp::kGreater:
      return visit.template operator()<true>(GreaterFn{});
    case BinaryOp::kGreaterEqual:
      return visit.template operator()<true>(GreaterEqualFn{});
    case BinaryOp::kLogicalAnd:
    case BinaryOp::kLogicalOr:
      break;
  }
  KINDLING_CHECK(false, "cuda binary op %d: not defined for dtype %s",
                 static_cast<int>(op), std::string(DTypeName(dtype)));
}

// VisitBoolBinaryFn() is VisitBinaryFn() for bool operands: the logical ops
// and the comparisons, all writing bool.
template <class Visit>
void VisitBoolBinaryFn(BinaryOp op, const Visit& visit) {
  switch (op) {
    case BinaryOp::kLogicalAnd:
      return visit(LogicalAndFn{});
    case BinaryOp::kLogicalOr:
      return visit(LogicalOrFn{});
    case BinaryOp::kEqual:
      return visit(EqualFn{});
    case BinaryOp::kNotEqual:
      return visit(NotEqualFn{});
    // Ordered as PyTorch orders bools: false < true.
    case BinaryOp::kLess:
      return visit(LessFn{});
    case BinaryOp::kLessEqual:
      return visit(LessEqualFn{});
    case BinaryOp::kGreater:
      return visit(GreaterFn{});
    case BinaryOp::kGreaterEqual:
      return visit(GreaterEqualFn{});
    default:
      break;
  }
  KINDLING_CHECK(false, "cuda binary op %d: not defined for bool",
                 static_cast<int>(op));
}

// out[i] = f(in[i], scalar), or f(scalar, in[i]) when kScalarIsLhs, in the
// compute type. The scalar is stored as T in the kernel's arguments (no
// device memory) and widened like any loaded element, so the result equals
// BinaryApplyOp's with a rank-0 operand holding it. Each thread reads its own
// element before writing it, so out may alias in exactly.
template <class TOut, class T, class F, bool kScalarIsLhs>
struct BinaryScalarApplyOp {
  TOut* out;
  const T* in;
  T scalar;
  F f;
  __device__ void operator()(const int64_t* offset) const {
    const auto x = Load(in[offset[1]]);
    const auto s = Load(scalar);
    const auto value = [&] {
      if constexpr (kScalarIsLhs) {
        return f(s, x);
      } else {
        return f(x, s);
      }
    }();
    if constexpr (std::is_same_v<TOut, bool>) {
      out[offset[0]] = value;
    } else {
      out[offset[0]] = Store<TOut>(value);
    }
  }
};

template <class TOut, class T, class F>
void RunBinaryScalar(cudaStream_t stream, const StridedIndexer<2>& indexer,
                     const TensorBase& out, const TensorBase& in, T scalar,
                     bool scalar_is_lhs, F f) {
  if (scalar_is_lhs) {
    LaunchStrided("BinaryScalarApplyOp", stream, indexer,
                  BinaryScalarApplyOp<TOut, T, F, true>{
                      out.data_as<TOut>(), in.data_as<const T>(), scalar, f});
  } else {
    LaunchStrided("BinaryScalarApplyOp", stream, indexer,
                  BinaryScalarApplyOp<TOut, T, F, false>{
                      out.data_as<TOut>(), in.data_as<const T>(), scalar, f});
  }
}

}  // namespace

void BinaryKernel(cudaStream_t stream, BinaryOp op, const TensorBase& out,
                  const TensorBase& lhs, const TensorBase& rhs) {
  const StridedIndexer<3> indexer = IndexerOf<3>({&out, &lhs, &rhs});
  if (lhs.dtype() == DType::kBool) {
    return VisitBoolBinaryFn(op, [&](auto f) {
      RunBinary<bool, bool>(stream, indexer, out, lhs, rhs, f);
    });
  }
  DispatchDType<kNumericDTypes>(lhs.dtype(), "cuda binary", [&]<class T>() {
    VisitBinaryFn(op, lhs.dtype(), [&]<bool kBoolResult>(auto f) {
      using TOut = std::conditional_t<kBoolResult, bool, T>;
      RunBinary<TOut, T>(stream, indexer, out, lhs, rhs, f);
    });
  });
}

void BinaryScalarKernel(cudaStream_t stream, BinaryOp op, const TensorBase& out,
                        const TensorBase& tensor, double scalar,
                        bool scalar_is_lhs) {
  const StridedIndexer<2> indexer = IndexerOf<2>({&out, &tensor});
  if (tensor.dtype() == DType::kBool) {
    const bool value = Convert<bool>(scalar);
    return VisitBoolBinaryFn(op, [&](auto f) {
      RunBinaryScalar<bool, bool>(stream, indexer, out, tensor, value,
                                  scalar_is_lhs, f);
    });
  }
  DispatchDType<kNumericDTypes>(
      tensor.dtype(), "cuda binary_scalar", [&]<class T>() {
        // Converted on the host exactly as FillKernel converts its value.
        const T value = Convert<T>(scalar);
        VisitBinaryFn(op, tensor.dtype(), [&]<bool kBoolResult>(auto f) {
          using TOut = std::conditional_t<kBoolResult, bool, T>;
          RunBinaryScalar<TOut, T>(stream, indexer, out, tensor, value,
                                   scalar_is_lhs, f);
        });
      });
}

namespace {

template <class U>
struct WhereOp {
  U* out;
  const bool* condition;
  const U* on_true;
  const U* on_false;
  __device__ void operator()(const int64_t* offset) const {
    out[offset[0]] =
        condition[offset[1]] ? on_true[offset[2]] : on_false[offset[3]];
  }
};

}  // namespace

void WhereKernel(cudaStream_t stream, const TensorBase& out,
                 const TensorBase& condition, const TensorBase& on_true,
                 const TensorBase& on_false) {
  const StridedIndexer<4> indexer =
      IndexerOf<4>({&out, &condition, &on_true, &on_false});
  DispatchBySize(out.element_size(), [&]<class U>() {
    LaunchStrided(
        "WhereOp", stream, indexer,
        WhereOp<U>{out.data_as<U>(), condition.data_as<const bool>(),
                   on_true.data_as<const U>(), on_false.data_as<const U>()});
  });
}

}  // namespace kindling::cuda
