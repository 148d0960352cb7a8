// TensorBase: a tensor whose rank and kind are known only at run time.
//
// TensorBase is the untyped handle under Tensor<D, K>: a shared_ptr to a
// Storage plus dtype, shape, element strides and element offset, and a
// pointer to immutable autodiff metadata (autodiff_meta.h; null when the
// tensor needs no gradient). Copying it copies no data. Code that does not know
// ranks at compile time (checkpoint I/O, the generator's record types,
// backends) works with TensorBase; user code uses Tensor<D, K> (tensor.h),
// which adds the compile-time checks and the operator syntax.
//
// Views (Reshape when strides allow, Permute, Transpose, Narrow, Slice,
// Expand, Unsqueeze, Squeeze) share the storage; Contiguous() and To() copy
// only when they must. In-place writers call MakeWritable() first, which
// copies a read-only borrowed storage (copy on write).
//
// Autodiff: views, Contiguous(), Clone(), To() and ToDevice() of a tensor
// that requires grad record a node (grad_node.h) when grad mode is on, so
// gradients flow through them; their backward sits right under each in
// tensor_base.cc. In-place writers are never recorded and keep the metadata;
// they refuse tensors in the graph while grad mode is on (elementwise_ops.h).
#ifndef KINDLING_TENSOR_TENSOR_BASE_H_
#define KINDLING_TENSOR_TENSOR_BASE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "kindling/core/param_id.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/storage.h"

namespace kindling {

struct AutodiffMeta;

// [[nodiscard]] like Tensor: a discarded TensorBase result is a lost op.
class [[nodiscard]] TensorBase {
 public:
  // TensorBase() is an undefined tensor: only defined(), copy, assignment and
  // destruction are allowed.
  TensorBase() = default;

  // TensorBase() views `storage` with explicit layout. REQUIRES: every element
  // the layout addresses lies inside the storage (checked).
  // The result requires no grad.
  TensorBase(std::shared_ptr<Storage> storage, DType dtype, Shape shape,
             Shape strides, int64_t offset);

  // Empty() allocates a contiguous tensor with uninitialized elements.
  static TensorBase Empty(const Shape& shape, DType dtype,
                          const Device& device);

  // FromHost() allocates a contiguous tensor and copies `host` (which holds
  // shape.num_elements() elements of `dtype`) into it.
  static TensorBase FromHost(const void* host, const Shape& shape, DType dtype,
                             const Device& device);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int rank() const { return shape_.rank(); }
  int64_t numel() const { return shape_.num_elements(); }
  size_t element_size() const { return DTypeSize(dtype_); }
  const Device& device() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // data() is the address of the first element (storage + offset).
  void* data() const;
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data());
  }

  // is_contiguous() is true for row-major layout without gaps (size-1 dims
  // may have any stride).
  bool is_contiguous() const;

  // --- Autodiff (see autodiff_meta.h) ---------------------------------------

  // is_require_grad() is true for a leaf that requires grad and for the
  // result of an op recorded on one.
  bool is_require_grad() const { return autodiff_ != nullptr; }
  // is_leaf() is true unless the tensor is a recorded op's result.
  bool is_leaf() const;
  // leaf_id() is the ParamId a leaf's gradient is reported under.
  // REQUIRES: a leaf that requires grad (checked).
  ParamId leaf_id() const;
  // autodiff_meta() is null when no gradient is needed.
  const std::shared_ptr<const AutodiffMeta>& autodiff_meta() const {
    return autodiff_;
  }
  // set_require_grad() returns a handle sharing the storage: with true, this
  // tensor when it already requires grad, else a leaf with a fresh ParamId;
  // with false, Detach().
  TensorBase set_require_grad(bool require_grad) const;
  // Detach() returns a handle sharing the storage with no autodiff metadata:
  // gradients do not flow through it.
  TensorBase Detach() const;
  // AsParamLeaf() is what a Param stores: detached, and a leaf with `id` when
  // this tensor requires grad.
  TensorBase AsParamLeaf(ParamId id) const;
  // RetainGrad() returns a handle whose gradient Backward() reports
  // (Gradients::Get) although it is an op result. A leaf, or a
  // tensor that requires no grad, is returned as is.
  TensorBase RetainGrad() const;
  // WithAutodiffMeta() returns a handle sharing the storage with `meta`: for
  // the autodiff machinery (autodiff::Record, leaves).
  TensorBase WithAutodiffMeta(std::shared_ptr<const AutodiffMeta> meta) const;

  // NormalizeAxis() maps -rank..rank-1 to 0..rank-1, aborting with `op` in
  // the message when out of range.
  int NormalizeAxis(int axis, const char* op) const;

  // --- Views (no copy) ------------------------------------------------------

  // Reshape() views the elements in row-major order with `shape`; copies
  // (through Contiguous()) only when the strides make a view impossible. One
  // entry may be -1 and is inferred.
  TensorBase Reshape(const Shape& shape) const;
  // Permute(): output axis i is input axis axes[i].
  TensorBase Permute(std::span<const int> axes) const;
  TensorBase Transpose(int axis0, int axis1) const;
  // Narrow(): `length` entries of `axis` starting at `start`.
  TensorBase Narrow(int axis, int64_t start, int64_t length) const;
  // Slice(): entries start, start+step, ... below end (negative start/end
  // count from the back, Python style; step > 0).
  TensorBase Slice(int axis, int64_t start, int64_t end,
                   int64_t step = 1) const;
  // Expand(): broadcasts to `shape` (NumPy rules, leading dims added) with
  // zero strides.
  TensorBase Expand(const Shape& shape) const;
  TensorBase Unsqueeze(int axis) const;
  TensorBase Squeeze(int axis) const;

  // --- Copies ---------------------------------------------------------------

  // Contiguous() is this tensor when already contiguous, else a packed copy.
  TensorBase Contiguous() const;
  // Clone() is always a fresh contiguous copy.
  TensorBase Clone() const;
  // To() converts to `dtype` (this tensor when it already has it).
  TensorBase To(DType dtype) const;
  // ToDevice() copies to another device (this tensor when already there).
  TensorBase ToDevice(const Device& device) const;
  // CopyToHost() writes numel() elements of dtype() to `host`, row-major.
  void CopyToHost(void* host) const;

  // MakeWritable() prepares this handle for an in-place write: it gives the
  // handle a private owned copy of its elements if its storage is read-only
  // (copy on write; other handles keep viewing the original storage), then
  // bumps the storage's version, so autodiff can tell that tensors it saved
  // from this storage are stale (saved_tensor.h). Every writer that changes
  // an existing tensor's elements calls it first. The handle keeps its
  // autodiff metadata.
  void MakeWritable();

  // ToString() prints dtype, shape and device, e.g. "Tensor(f32[2, 3], cpu)".
  std::string ToString() const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::kF32;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  std::shared_ptr<const AutodiffMeta> autodiff_;
};

}  // namespace kindling

#endif  // KINDLING_TENSOR_TENSOR_BASE_H_
