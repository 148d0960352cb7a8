// Tensor<D, K>: the class. Include "kindling/tensor/tensor.h", which also
// brings the free functions and operators (tensor_functions.h).
//
// A Tensor is a cheap refcounted handle over a TensorBase: copying one, or
// taking a view (reshape, transpose, slice, expand, ...), shares the storage
// and copies no elements. Rank and kind (Float, Int, Bool) are part of the
// type, so mixing them up is a compile error; the exact element format (f32,
// bf16, i32, ...) is a run-time DType. Shape errors the type cannot catch
// abort with a message naming the op and both shapes.
//
// This header holds what needs the object: creation, metadata, views,
// conversions, the unary and reduction members and the in-place writers.
// Ops of two or more tensors are free functions in tensor_functions.h.
//
// Thread safety: const members may be called concurrently; in-place members
// (add_, fill_, ...) write shared storage and must not race with readers.
#ifndef KINDLING_TENSOR_TENSOR_CLASS_H_
#define KINDLING_TENSOR_TENSOR_CLASS_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/core/parameter.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/storage.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

// [[nodiscard]]: every Tensor-returning op is pure, so a discarded result
// (`x.relu();` meant as `x = x.relu();`) is a bug. gcc reports it as
// -Wunused-result, which KINDLING_COPTS (runtime/defs.bzl, used by every
// kindling_cc_library and kindling_cc_test) turns into an error. In-place
// members return Tensor& (a reference is never flagged) and may be discarded.
template <int D, TensorKind K = Float>
class [[nodiscard]] Tensor {
  static_assert(D >= 0 && D <= 8, "Tensor rank must be in 0..8");

 public:
  using DeviceType = Device;
  using ShapeType = Shape;
  using Kind = K;
  static constexpr int kRank = D;
  static constexpr bool kIsBool = std::is_same_v<K, Bool>;
  static constexpr bool kIsFloat = std::is_same_v<K, Float>;

  // Tensor() is undefined (like a null handle) until assigned.
  Tensor() = default;

  // Tensor(base) adopts an untyped tensor. REQUIRES: base has rank D and a
  // dtype of kind K (checked).
  explicit Tensor(TensorBase base) : base_(std::move(base)) {
    KINDLING_CHECK(base_.rank() == D,
                   "tensor: rank-%d shape %s used as rank %d", base_.rank(),
                   base_.shape().ToString(), D);
    KINDLING_CHECK(DTypeMatchesKind<K>(base_.dtype()),
                   "tensor: dtype %s does not match the tensor kind",
                   std::string(DTypeName(base_.dtype())));
  }

  // --- Creation --------------------------------------------------------------

  // FromData() copies host elements into a new tensor of `shape`. The dtype
  // is T's (float -> f32, int64_t -> i64, Half -> f16, ...).
  template <class T>
  static Tensor FromData(std::span<const T> data, const Shape& shape,
                         const Device& device = Device::Cpu()) {
    static_assert(DTypeMatchesKind<K>(DTypeOf<T>),
                  "from_data: element type does not match the tensor kind "
                  "(e.g. Tensor<1>::FromData<float>, Tensor<1, Int>::"
                  "FromData<int64_t>)");
    CheckShape(shape, "from_data");
    KINDLING_CHECK(static_cast<int64_t>(data.size()) == shape.num_elements(),
                   "from_data: %d elements for shape %s", data.size(),
                   shape.ToString());
    return Tensor(TensorBase::FromHost(data.data(), shape, DTypeOf<T>, device));
  }
  template <class T>
  static Tensor FromData(std::initializer_list<T> data, const Shape& shape,
                         const Device& device = Device::Cpu()) {
    return FromData(std::span<const T>(data.begin(), data.size()), shape,
                    device);
  }
  template <class T>
  static Tensor FromData(const std::vector<T>& data, const Shape& shape,
                         const Device& device = Device::Cpu()) {
    return FromData(std::span<const T>(data), shape, device);
  }

  // Borrow() views foreign contiguous memory without copying; `owner` keeps
  // it alive. Read-only memory is copied on the first in-place write.
  static Tensor Borrow(void* data, const Shape& shape, DType dtype,
                       std::shared_ptr<const void> owner, bool read_only,
                       const Device& device = Device::Cpu()) {
    CheckShape(shape, "borrow");
    auto storage =
        Storage::Borrow(device, data, shape.num_elements() * DTypeSize(dtype),
                        std::move(owner), read_only);
    return Tensor(TensorBase(std::move(storage), dtype, shape,
                             ContiguousStrides(shape), 0));
  }

  // Empty() has uninitialized elements.
  static Tensor Empty(const Shape& shape, const Device& device = Device::Cpu(),
                      DType dtype = K::kDefaultDType) {
    CheckShape(shape, "empty");
    return Tensor(TensorBase::Empty(shape, dtype, device));
  }
  static Tensor Full(const Shape& shape, double value,
                     const Device& device = Device::Cpu(),
                     DType dtype = K::kDefaultDType) {
    CheckShape(shape, "full");
    return Tensor(ops::Full(shape, value, dtype, device));
  }
  static Tensor Zeros(const Shape& shape, const Device& device = Device::Cpu(),
                      DType dtype = K::kDefaultDType) {
    return Full(shape, 0.0, device, dtype);
  }
  static Tensor Ones(const Shape& shape, const Device& device = Device::Cpu(),
                     DType dtype = K::kDefaultDType) {
    return Full(shape, 1.0, device, dtype);
  }

  // Arange() is start, start+step, ... below end.
  static Tensor Arange(double start, double end, double step = 1,
                       const Device& device = Device::Cpu(),
                       DType dtype = K::kDefaultDType) requires(D == 1 &&
                                                                !kIsBool) {
    return Tensor(ops::Arange(start, end, step, dtype, device));
  }

  // RandomUniform() draws from [low, high) of `dtype`; RandomNormal() from
  // N(mean, std^2). One pass on the device's backend writes `dtype` directly
  // from the counter-based stream of philox.h and advances `generator` past
  // the blocks it used, so the same generator state gives the same tensor on
  // every run, thread count and backend.
  static Tensor RandomUniform(
      const Shape& shape, PhiloxGenerator& generator, double low = 0,
      double high = 1, const Device& device = Device::Cpu(),
      DType dtype = K::kDefaultDType) requires kIsFloat {
    CheckShape(shape, "random_uniform");
    return Tensor(
        ops::RandomUniform(shape, dtype, device, generator, low, high));
  }
  static Tensor RandomNormal(const Shape& shape, PhiloxGenerator& generator,
                             double mean = 0, double std = 1,
                             const Device& device = Device::Cpu(),
                             DType dtype = K::kDefaultDType) requires kIsFloat {
    CheckShape(shape, "random_normal");
    return Tensor(
        ops::RandomNormal(shape, dtype, device, generator, mean, std));
  }
  // With a host Generator (generator.h), each call seeds a fresh Philox
  // stream from generator.NextBits(): convenient where a Generator is
  // already at hand, but only a PhiloxGenerator's state is two integers a
  // checkpoint can restore mid-stream.
  static Tensor RandomUniform(
      const Shape& shape, Generator& generator, double low = 0, double high = 1,
      const Device& device = Device::Cpu(),
      DType dtype = K::kDefaultDType) requires kIsFloat {
    PhiloxGenerator philox(generator.NextBits());
    return RandomUniform(shape, philox, low, high, device, dtype);
  }
  static Tensor RandomNormal(const Shape& shape, Generator& generator,
                             double mean = 0, double std = 1,
                             const Device& device = Device::Cpu(),
                             DType dtype = K::kDefaultDType) requires kIsFloat {
    PhiloxGenerator philox(generator.NextBits());
    return RandomNormal(shape, philox, mean, std, device, dtype);
  }

  // --- Metadata (Parameter concept) ------------------------------------------

  const TensorBase& base() const { return base_; }
  bool defined() const { return base_.defined(); }
  DType dtype() const { return base_.dtype(); }
  Shape shape() const { return base_.shape(); }
  Device device() const { return base_.device(); }
  int64_t dim(int axis) const {
    return base_.shape()[base_.NormalizeAxis(axis, "dim")];
  }
  int64_t numel() const { return base_.numel(); }
  bool is_contiguous() const { return base_.is_contiguous(); }
  // --- Autodiff (kindling/autodiff/backward.h) ------------------------------

  // is_require_grad() is true for a leaf that requires grad and for an op
  // result recorded on one.
  bool is_require_grad() const { return base_.is_require_grad(); }
  // set_require_grad() returns a handle sharing this storage: with true, a
  // leaf with a fresh ParamId (this tensor when it already requires grad);
  // with false, detach().
  Tensor set_require_grad(bool require_grad) const {
    return Tensor(base_.set_require_grad(require_grad));
  }
  // detach() shares the storage but carries no graph: no gradient flows
  // through it.
  Tensor detach() const { return Tensor(base_.Detach()); }
  // is_leaf() is false for an op result that requires grad.
  bool is_leaf() const { return base_.is_leaf(); }
  // leaf_id() is the key of a leaf's gradient in Gradients.
  // REQUIRES: a leaf that requires grad (checked).
  ParamId leaf_id() const { return base_.leaf_id(); }
  // retain_grad() returns a handle whose gradient Backward() also reports
  // (Gradients::Get), for an op result; use it in place of this one.
  Tensor retain_grad() const { return Tensor(base_.RetainGrad()); }
  // as_param_leaf() is how Param stores a value (core/param.h): detached,
  // and a leaf under `id` when it requires grad.
  Tensor as_param_leaf(ParamId id) const {
    return Tensor(base_.AsParamLeaf(id));
  }
  // shares_storage_with() is true when both view one storage.
  template <int D2, TensorKind K2>
  bool shares_storage_with(const Tensor<D2, K2>& other) const {
    return base_.storage() == other.base().storage();
  }

  // to_data() copies the elements to the host in row-major order, converted
  // to T.
  template <class T>
  std::vector<T> to_data() const {
    if constexpr (std::is_same_v<T, bool>) {
      const std::vector<uint8_t> bytes = to_data<uint8_t>();
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      const TensorBase converted = base_.To(DTypeOf<T>).Contiguous();
      std::vector<T> result(converted.numel());
      converted.CopyToHost(result.data());
      return result;
    }
  }
  // item() is the single element of a one-element tensor.
  template <class T>
  T item() const {
    KINDLING_CHECK(numel() == 1, "item: tensor of shape %s has %d elements",
                   base_.shape().ToString(), numel());
    return to_data<T>()[0];
  }

  // --- Views (no copy) -------------------------------------------------------

  // reshape() keeps the elements' row-major order; copies only when the
  // strides make a view impossible. One dimension may be -1.
  template <int D2>
  Tensor<D2, K> reshape(const Shape& shape) const {
    return Tensor<D2, K>(base_.Reshape(shape));
  }
  Tensor<1, K> flatten() const {
    return Tensor<1, K>(base_.Reshape(Shape{numel()}));
  }
  Tensor transpose(int axis0, int axis1) const {
    return Tensor(base_.Transpose(axis0, axis1));
  }
  // t() swaps the last two axes.
  Tensor t() const requires(D >= 2) { return transpose(D - 2, D - 1); }
  Tensor permute(const std::array<int, D>& axes) const {
    return Tensor(base_.Permute(axes));
  }
  Tensor narrow(int axis, int64_t start, int64_t length) const {
    return Tensor(base_.Narrow(axis, start, length));
  }
  Tensor slice(int axis, int64_t start, int64_t end, int64_t step = 1) const {
    return Tensor(base_.Slice(axis, start, end, step));
  }
  template <int D2>
  Tensor<D2, K> expand(const Shape& shape) const {
    return Tensor<D2, K>(base_.Expand(shape));
  }
  Tensor<D + 1, K> unsqueeze(int axis) const {
    return Tensor<D + 1, K>(base_.Unsqueeze(axis));
  }
  Tensor<D - 1, K> squeeze(int axis) const requires(D >= 1) {
    return Tensor<D - 1, K>(base_.Squeeze(axis));
  }

  // --- Copies and conversions ------------------------------------------------

  Tensor contiguous() const { return Tensor(base_.Contiguous()); }
  Tensor clone() const { return Tensor(base_.Clone()); }
  // to() converts to another dtype of the same kind.
  Tensor to(DType dtype) const { return Tensor(base_.To(dtype)); }
  // to_kind() converts to another kind (Float -> Int truncates toward zero;
  // nonzero -> true).
  template <TensorKind K2>
  Tensor<D, K2> to_kind(DType dtype = K2::kDefaultDType) const {
    return Tensor<D, K2>(base_.To(dtype));
  }
  Tensor to_device(const Device& device) const {
    return Tensor(base_.ToDevice(device));
  }

  // --- Element-wise ----------------------------------------------------------

  Tensor neg() const requires(!kIsBool) { return Unary(UnaryOp::kNeg); }
  Tensor abs() const requires(!kIsBool) { return Unary(UnaryOp::kAbs); }
  Tensor exp() const requires kIsFloat { return Unary(UnaryOp::kExp); }
  Tensor log() const requires kIsFloat { return Unary(UnaryOp::kLog); }
  Tensor sqrt() const requires kIsFloat { return Unary(UnaryOp::kSqrt); }
  Tensor relu() const requires(!kIsBool) { return Unary(UnaryOp::kRelu); }
  // gelu() is the exact GELU, x * Phi(x) (erf form, PyTorch's default).
  Tensor gelu() const requires kIsFloat { return Unary(UnaryOp::kGelu); }
  Tensor sigmoid() const requires kIsFloat { return Unary(UnaryOp::kSigmoid); }
  Tensor tanh() const requires kIsFloat { return Unary(UnaryOp::kTanh); }
  Tensor clamp(double min, double max) const requires(!kIsBool) {
    return Unary(UnaryOp::kClamp, min, max);
  }
  Tensor pow(double exponent) const requires(!kIsBool) {
    return Tensor(ops::BinaryScalar(BinaryOp::kPow, base_, exponent));
  }
  Tensor logical_not() const requires kIsBool {
    return Unary(UnaryOp::kLogicalNot);
  }

  // Comparisons with a scalar give Bool masks.
  Tensor<D, Bool> equal(double value) const {
    return Compare(BinaryOp::kEqual, value);
  }
  Tensor<D, Bool> not_equal(double value) const {
    return Compare(BinaryOp::kNotEqual, value);
  }
  Tensor<D, Bool> less(double value) const {
    return Compare(BinaryOp::kLess, value);
  }
  Tensor<D, Bool> less_equal(double value) const {
    return Compare(BinaryOp::kLessEqual, value);
  }
  Tensor<D, Bool> greater(double value) const {
    return Compare(BinaryOp::kGreater, value);
  }
  Tensor<D, Bool> greater_equal(double value) const {
    return Compare(BinaryOp::kGreaterEqual, value);
  }

  // mask_fill() is this tensor with `value` where `mask` holds.
  template <int DM>
  Tensor mask_fill(const Tensor<DM, Bool>& mask, double value) const {
    return Tensor(ops::MaskFill(base_, mask.base(), value));
  }

  // --- Reductions ------------------------------------------------------------

  // Whole-tensor reductions give a rank-0 tensor; read it with item<T>().
  Tensor<0, K> sum() const requires(!kIsBool) {
    return Tensor<0, K>(ops::ReduceAll(ReduceOp::kSum, base_));
  }
  Tensor<0, K> mean() const requires(!kIsBool) {
    return Tensor<0, K>(ops::ReduceAll(ReduceOp::kMean, base_));
  }
  Tensor<0, K> max() const requires(!kIsBool) {
    return Tensor<0, K>(ops::ReduceAll(ReduceOp::kMax, base_));
  }
  Tensor<0, K> min() const requires(!kIsBool) {
    return Tensor<0, K>(ops::ReduceAll(ReduceOp::kMin, base_));
  }
  // The _dim reductions keep `axis` with size 1.
  Tensor sum_dim(int axis) const requires(!kIsBool) {
    return Tensor(ops::Reduce(ReduceOp::kSum, base_, axis));
  }
  Tensor mean_dim(int axis) const requires(!kIsBool) {
    return Tensor(ops::Reduce(ReduceOp::kMean, base_, axis));
  }
  Tensor max_dim(int axis) const requires(!kIsBool) {
    return Tensor(ops::Reduce(ReduceOp::kMax, base_, axis));
  }
  Tensor min_dim(int axis) const requires(!kIsBool) {
    return Tensor(ops::Reduce(ReduceOp::kMin, base_, axis));
  }
  // argmax() / argmin() give i64 indices along `axis` (kept with size 1); the
  // first index wins ties; a NaN counts as the largest value.
  Tensor<D, Int> argmax(int axis) const requires(!kIsBool) {
    return Tensor<D, Int>(ops::Reduce(ReduceOp::kArgMax, base_, axis));
  }
  Tensor<D, Int> argmin(int axis) const requires(!kIsBool) {
    return Tensor<D, Int>(ops::Reduce(ReduceOp::kArgMin, base_, axis));
  }
  // softmax() / log_softmax() along `axis`, stable for large inputs.
  Tensor softmax(int axis) const requires kIsFloat {
    return Tensor(ops::Softmax(base_, axis, /*log=*/false));
  }
  Tensor log_softmax(int axis) const requires kIsFloat {
    return Tensor(ops::Softmax(base_, axis, /*log=*/true));
  }

  // --- In place (copy on write for borrowed read-only storage) ---------------

  // These write the storage this handle views, so every handle sharing it
  // sees the change, except that a read-only borrowed storage is first
  // copied into one private to this handle.
  template <int D2>
  Tensor& add_(const Tensor<D2, K>& other) {
    ops::BinaryInPlace(BinaryOp::kAdd, base_, other.base());
    return *this;
  }
  template <int D2>
  Tensor& sub_(const Tensor<D2, K>& other) {
    ops::BinaryInPlace(BinaryOp::kSub, base_, other.base());
    return *this;
  }
  template <int D2>
  Tensor& mul_(const Tensor<D2, K>& other) {
    ops::BinaryInPlace(BinaryOp::kMul, base_, other.base());
    return *this;
  }
  template <int D2>
  Tensor& div_(const Tensor<D2, K>& other) {
    ops::BinaryInPlace(BinaryOp::kDiv, base_, other.base());
    return *this;
  }
  Tensor& mul_(double scalar) {
    ops::BinaryScalarInPlace(BinaryOp::kMul, base_, scalar);
    return *this;
  }
  Tensor& fill_(double value) {
    ops::FillInPlace(base_, value);
    return *this;
  }
  // assign_() copies `src` (broadcast, converted) into this tensor's elements.
  template <int D2, TensorKind K2>
  Tensor& assign_(const Tensor<D2, K2>& src) {
    ops::AssignInPlace(base_, src.base());
    return *this;
  }

  // ToString() is e.g. "Tensor(f32[2, 3], cpu)".
  std::string ToString() const { return base_.ToString(); }
  friend std::ostream& operator<<(std::ostream& os, const Tensor& tensor) {
    return os << tensor.ToString();
  }

 private:
  static void CheckShape(const Shape& shape, const char* op) {
    KINDLING_CHECK(shape.rank() == D, "%s: shape %s given for a rank-%d tensor",
                   op, shape.ToString(), D);
  }
  Tensor Unary(UnaryOp op, double arg0 = 0, double arg1 = 0) const {
    return Tensor(ops::Unary(op, base_, arg0, arg1));
  }
  Tensor<D, Bool> Compare(BinaryOp op, double value) const {
    return Tensor<D, Bool>(ops::BinaryScalar(op, base_, value));
  }

  TensorBase base_;
};

static_assert(Parameter<Tensor<2>>);

}  // namespace kindling

#endif  // KINDLING_TENSOR_TENSOR_CLASS_H_
