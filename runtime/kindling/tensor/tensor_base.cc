#include "kindling/tensor/tensor_base.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kindling/core/check.h"
#include "kindling/tensor/autodiff_meta.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/grad_node.h"

namespace kindling {

TensorBase::TensorBase(std::shared_ptr<Storage> storage, DType dtype,
                       Shape shape, Shape strides, int64_t offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset) {
  KINDLING_CHECK(storage_ != nullptr, "tensor: null storage");
  KINDLING_CHECK(shape_.rank() == strides_.rank(),
                 "tensor: shape %s and strides %s differ in rank",
                 shape_.ToString(), strides_.ToString());
  // The lowest and highest element addressed must lie inside the storage.
  int64_t low = offset_;
  int64_t high = offset_;
  bool empty = false;
  for (int axis = 0; axis < shape_.rank(); ++axis) {
    KINDLING_CHECK(shape_[axis] >= 0, "tensor: negative dimension in %s",
                   shape_.ToString());
    if (shape_[axis] == 0) empty = true;
  }
  // Overflow-checked: a huge shape must not wrap around into a small layout
  // that passes the bounds check.
  bool overflow = false;
  for (int axis = 0; !empty && axis < shape_.rank(); ++axis) {
    int64_t span = 0;
    overflow |= __builtin_mul_overflow(shape_[axis] - 1, strides_[axis], &span);
    overflow |= span < 0 ? __builtin_add_overflow(low, span, &low)
                         : __builtin_add_overflow(high, span, &high);
  }
  int64_t end_byte = 0;
  overflow |= __builtin_mul_overflow(
      high + 1, static_cast<int64_t>(DTypeSize(dtype_)), &end_byte);
  if (!empty) {
    KINDLING_CHECK(
        !overflow && low >= 0 &&
            end_byte <= static_cast<int64_t>(storage_->nbytes()),
        "tensor: layout %s strides %s offset %d exceeds storage of %d bytes",
        shape_.ToString(), strides_.ToString(), offset_, storage_->nbytes());
  }
}

TensorBase TensorBase::Empty(const Shape& shape, DType dtype,
                             const Device& device) {
  for (int64_t dim : shape) {
    KINDLING_CHECK(dim >= 0, "empty: negative dimension in %s",
                   shape.ToString());
  }
  int64_t nbytes = 0;
  KINDLING_CHECK(
      !__builtin_mul_overflow(shape.num_elements(),
                              static_cast<int64_t>(DTypeSize(dtype)), &nbytes),
      "empty: %s of %s needs more bytes than fit in 64 bits", shape.ToString(),
      DTypeName(dtype));
  return TensorBase(Storage::Allocate(device, nbytes), dtype, shape,
                    ContiguousStrides(shape), 0);
}

TensorBase TensorBase::FromHost(const void* host, const Shape& shape,
                                DType dtype, const Device& device) {
  TensorBase result = Empty(shape, dtype, device);
  if (result.numel() > 0) {
    GetDeviceMemory(device).CopyHostToDevice(
        device, result.data(), host, result.numel() * result.element_size());
  }
  return result;
}

const Device& TensorBase::device() const {
  KINDLING_CHECK(storage_ != nullptr, "tensor: use of an undefined tensor");
  return storage_->device();
}

void* TensorBase::data() const {
  KINDLING_CHECK(storage_ != nullptr, "tensor: use of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * element_size();
}

bool TensorBase::is_contiguous() const {
  int64_t expected = 1;
  for (int axis = rank() - 1; axis >= 0; --axis) {
    if (shape_[axis] == 1) continue;
    if (strides_[axis] != expected) return false;
    expected *= shape_[axis];
  }
  return true;
}

bool TensorBase::is_leaf() const {
  return autodiff_ == nullptr || autodiff_->is_leaf();
}

ParamId TensorBase::leaf_id() const {
  KINDLING_CHECK(
      is_require_grad() && is_leaf(), "leaf_id: %s is %s", ToString(),
      is_require_grad() ? "an op result, not a leaf" : "not require-grad");
  return autodiff_->id;
}

TensorBase TensorBase::set_require_grad(bool require_grad) const {
  if (!require_grad) return Detach();
  if (is_require_grad()) return *this;
  auto meta = std::make_shared<AutodiffMeta>();
  meta->id = ParamId::New();
  return WithAutodiffMeta(std::move(meta));
}

TensorBase TensorBase::Detach() const {
  TensorBase result = *this;
  result.autodiff_.reset();
  return result;
}

TensorBase TensorBase::AsParamLeaf(ParamId id) const {
  if (!is_require_grad()) return *this;
  if (autodiff_->is_leaf() && autodiff_->id == id) return *this;
  auto meta = std::make_shared<AutodiffMeta>();
  meta->id = id;
  return WithAutodiffMeta(std::move(meta));
}

TensorBase TensorBase::RetainGrad() const {
  if (is_leaf() || autodiff_->retain_grad) return *this;
  auto meta = std::make_shared<AutodiffMeta>(*autodiff_);
  meta->retain_grad = true;
  meta->id = ParamId::New();
  return WithAutodiffMeta(std::move(meta));
}

TensorBase TensorBase::WithAutodiffMeta(
    std::shared_ptr<const AutodiffMeta> meta) const {
  TensorBase result = *this;
  result.autodiff_ = std::move(meta);
  return result;
}

int TensorBase::NormalizeAxis(int axis, const char* op) const {
  const int normalized = axis < 0 ? axis + rank() : axis;
  KINDLING_CHECK(normalized >= 0 && normalized < rank(),
                 "%s: axis %d out of range for shape %s", op, axis,
                 shape_.ToString());
  return normalized;
}

namespace {

// Tries to express a row-major view with `new_shape` over (shape, strides)
// without copying (the algorithm of PyTorch's view()): input dims are grouped
// into chunks that are contiguous among themselves, and each chunk is split
// into output dims.
bool ComputeViewStrides(const Shape& shape, const Shape& strides,
                        const Shape& new_shape, Shape* new_strides) {
  Shape result = new_shape;
  if (shape.rank() == 0 || shape.num_elements() == 0) {
    *new_strides = ContiguousStrides(new_shape);
    return true;
  }
  int view_axis = new_shape.rank() - 1;
  int64_t chunk_base_stride = strides[shape.rank() - 1];
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int axis = shape.rank() - 1; axis >= 0; --axis) {
    tensor_numel *= shape[axis];
    const bool chunk_ends =
        axis == 0 || (shape[axis - 1] != 1 &&
                      strides[axis - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_axis >= 0 &&
           (view_numel < tensor_numel || new_shape[view_axis] == 1)) {
      result[view_axis] = view_numel * chunk_base_stride;
      view_numel *= new_shape[view_axis];
      --view_axis;
    }
    if (view_numel != tensor_numel) return false;
    if (axis > 0) {
      chunk_base_stride = strides[axis - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_axis != -1) return false;
  *new_strides = std::move(result);
  return true;
}

}  // namespace

TensorBase TensorBase::Reshape(const Shape& requested) const {
  Shape shape = requested;
  int inferred = -1;
  int64_t known = 1;
  for (int axis = 0; axis < shape.rank(); ++axis) {
    if (shape[axis] == -1) {
      KINDLING_CHECK(inferred == -1, "reshape: more than one -1 in %s",
                     requested.ToString());
      inferred = axis;
    } else {
      KINDLING_CHECK(shape[axis] >= 0, "reshape: negative dimension in %s",
                     requested.ToString());
      known *= shape[axis];
    }
  }
  if (inferred >= 0) {
    KINDLING_CHECK(known != 0 && numel() % known == 0,
                   "reshape: cannot infer -1 in %s from shape %s",
                   requested.ToString(), shape_.ToString());
    shape[inferred] = numel() / known;
  }
  KINDLING_CHECK(shape.num_elements() == numel(),
                 "reshape: shape %s has %d elements, input shape %s has %d",
                 shape.ToString(), shape.num_elements(), shape_.ToString(),
                 numel());
  Shape strides;
  if (!ComputeViewStrides(shape_, strides_, shape, &strides)) {
    return Contiguous().Reshape(shape);
  }
  TensorBase view(storage_, dtype_, std::move(shape), std::move(strides),
                  offset_);
  if (!autodiff::ShouldRecord(*this)) return view;
  return autodiff::Record("reshape", {*this}, std::move(view),
                          [input_shape = shape_](const TensorBase& grad) {
                            return GradList{grad.Reshape(input_shape)};
                          });
}

TensorBase TensorBase::Permute(std::span<const int> axes) const {
  KINDLING_CHECK(static_cast<int>(axes.size()) == rank(),
                 "permute: %d axes given for shape %s", axes.size(),
                 shape_.ToString());
  Shape shape = shape_;
  Shape strides = strides_;
  uint64_t seen = 0;
  for (int i = 0; i < rank(); ++i) {
    const int axis = NormalizeAxis(axes[i], "permute");
    KINDLING_CHECK((seen & (1ull << axis)) == 0,
                   "permute: axis %d repeated for shape %s", axis,
                   shape_.ToString());
    seen |= 1ull << axis;
    shape[i] = shape_[axis];
    strides[i] = strides_[axis];
  }
  TensorBase view(storage_, dtype_, std::move(shape), std::move(strides),
                  offset_);
  if (!autodiff::ShouldRecord(*this)) return view;
  // The gradient goes through the inverse permutation.
  std::vector<int> inverse(rank());
  for (int i = 0; i < rank(); ++i) {
    inverse[NormalizeAxis(axes[i], "permute")] = i;
  }
  return autodiff::Record("permute", {*this}, std::move(view),
                          [inverse](const TensorBase& grad) {
                            return GradList{grad.Permute(inverse)};
                          });
}

TensorBase TensorBase::Transpose(int axis0, int axis1) const {
  const int a = NormalizeAxis(axis0, "transpose");
  const int b = NormalizeAxis(axis1, "transpose");
  std::vector<int> axes(rank());
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[a], axes[b]);
  return Permute(axes);
}

TensorBase TensorBase::Narrow(int axis, int64_t start, int64_t length) const {
  const int a = NormalizeAxis(axis, "narrow");
  KINDLING_CHECK(start >= 0 && length >= 0 && start + length <= shape_[a],
                 "narrow: range [%d, %d) out of bounds for axis %d of shape %s",
                 start, start + length, a, shape_.ToString());
  Shape shape = shape_;
  shape[a] = length;
  TensorBase view(storage_, dtype_, std::move(shape), strides_,
                  offset_ + start * strides_[a]);
  if (!autodiff::ShouldRecord(*this)) return view;
  // The gradient is zero outside the narrowed range.
  return autodiff::Record(
      "narrow", {*this}, std::move(view),
      [input_shape = shape_, a, start, length](const TensorBase& grad) {
        TensorBase full =
            autodiff::Zeros(input_shape, grad.dtype(), grad.device());
        if (grad.numel() > 0) {
          GetBackend(grad.device()).Copy(full.Narrow(a, start, length), grad);
        }
        return GradList{full};
      });
}

TensorBase TensorBase::Slice(int axis, int64_t start, int64_t end,
                             int64_t step) const {
  const int a = NormalizeAxis(axis, "slice");
  KINDLING_CHECK(step > 0, "slice: step %d must be positive", step);
  const int64_t size = shape_[a];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape shape = shape_;
  Shape strides = strides_;
  shape[a] = (end - start + step - 1) / step;
  strides[a] = strides_[a] * step;
  TensorBase view(storage_, dtype_, std::move(shape), std::move(strides),
                  offset_ + start * strides_[a]);
  if (!autodiff::ShouldRecord(*this)) return view;
  // The gradient is zero at the entries the slice skips.
  return autodiff::Record(
      "slice", {*this}, std::move(view),
      [input_shape = shape_, a, start, end, step](const TensorBase& grad) {
        TensorBase full =
            autodiff::Zeros(input_shape, grad.dtype(), grad.device());
        if (grad.numel() > 0) {
          GetBackend(grad.device()).Copy(full.Slice(a, start, end, step), grad);
        }
        return GradList{full};
      });
}

TensorBase TensorBase::Expand(const Shape& shape) const {
  KINDLING_CHECK(shape.rank() >= rank(), "expand: cannot expand %s to %s",
                 shape_.ToString(), shape.ToString());
  const int lead = shape.rank() - rank();
  Shape strides = shape;
  for (int axis = 0; axis < shape.rank(); ++axis) {
    if (axis < lead) {
      strides[axis] = 0;
      continue;
    }
    const int64_t dim = shape_[axis - lead];
    KINDLING_CHECK(dim == shape[axis] || dim == 1,
                   "expand: cannot expand %s to %s", shape_.ToString(),
                   shape.ToString());
    strides[axis] = dim == shape[axis] ? strides_[axis - lead] : 0;
  }
  // Copied, not moved: gcc 12 reports a false "may be used uninitialized"
  // inside absl::InlinedVector's move here, and 8 strides cost nothing.
  TensorBase view(storage_, dtype_, shape, strides, offset_);
  if (!autodiff::ShouldRecord(*this)) return view;
  // Each input element fed every output element it was broadcast to.
  return autodiff::Record(
      "expand", {*this}, std::move(view),
      [input_shape = shape_](const TensorBase& grad) {
        return GradList{autodiff::SumToShape(grad, input_shape)};
      });
}

TensorBase TensorBase::Unsqueeze(int axis) const {
  const int a = axis < 0 ? axis + rank() + 1 : axis;
  KINDLING_CHECK(a >= 0 && a <= rank(),
                 "unsqueeze: axis %d out of range for shape %s", axis,
                 shape_.ToString());
  Shape shape = shape_;
  Shape strides = strides_;
  const int64_t stride = a < rank() ? strides_[a] * shape_[a] : 1;
  shape.insert(a, 1);
  strides.insert(a, stride);
  TensorBase view(storage_, dtype_, std::move(shape), std::move(strides),
                  offset_);
  if (!autodiff::ShouldRecord(*this)) return view;
  return autodiff::Record(
      "unsqueeze", {*this}, std::move(view),
      [a](const TensorBase& grad) { return GradList{grad.Squeeze(a)}; });
}

TensorBase TensorBase::Squeeze(int axis) const {
  const int a = NormalizeAxis(axis, "squeeze");
  KINDLING_CHECK(shape_[a] == 1, "squeeze: axis %d of shape %s is not 1", a,
                 shape_.ToString());
  Shape shape = shape_;
  Shape strides = strides_;
  shape.erase(a);
  strides.erase(a);
  TensorBase view(storage_, dtype_, std::move(shape), std::move(strides),
                  offset_);
  if (!autodiff::ShouldRecord(*this)) return view;
  return autodiff::Record(
      "squeeze", {*this}, std::move(view),
      [a](const TensorBase& grad) { return GradList{grad.Unsqueeze(a)}; });
}

TensorBase TensorBase::Contiguous() const {
  if (is_contiguous()) return *this;
  return Clone();
}

TensorBase TensorBase::Clone() const {
  TensorBase result = Empty(shape_, dtype_, device());
  if (numel() > 0) GetBackend(device()).Copy(result, *this);
  if (!autodiff::ShouldRecord(*this)) return result;
  return autodiff::Record(
      "clone", {*this}, std::move(result),
      [](const TensorBase& grad) { return GradList{grad}; });
}

TensorBase TensorBase::To(DType dtype) const {
  if (dtype == dtype_) return *this;
  TensorBase result = Empty(shape_, dtype, device());
  if (numel() > 0) GetBackend(device()).Copy(result, *this);
  if (!autodiff::ShouldRecord(*this)) return result;
  // Integer and bool results are not recorded (Record drops them).
  return autodiff::Record("to", {*this}, std::move(result),
                          [input_dtype = dtype_](const TensorBase& grad) {
                            return GradList{grad.To(input_dtype)};
                          });
}

TensorBase TensorBase::ToDevice(const Device& device) const {
  if (device == this->device()) return *this;
  // One direct copy of the contiguous bytes: host <-> device, or peer.
  const TensorBase source = is_contiguous() ? *this : Detach().Contiguous();
  TensorBase result = Empty(shape_, dtype_, device);
  CopyBetweenDevices(device, result.data(), source.device(), source.data(),
                     numel() * element_size());
  // A leaf moves as a leaf (a Param's value on its new device keeps the
  // Param's id); a result records the move, whose gradient moves back.
  if (is_leaf()) return result.WithAutodiffMeta(autodiff_);
  if (!autodiff::ShouldRecord(*this)) return result;
  return autodiff::Record("to_device", {*this}, std::move(result),
                          [source = this->device()](const TensorBase& grad) {
                            return GradList{grad.ToDevice(source)};
                          });
}

void TensorBase::CopyToHost(void* host) const {
  if (numel() == 0) return;
  const size_t nbytes = numel() * element_size();
  if (is_contiguous()) {
    GetDeviceMemory(device()).CopyDeviceToHost(device(), host, data(), nbytes);
    return;
  }
  if (device().is_cpu()) {
    // Host memory is CPU memory: view it as a contiguous tensor and let the
    // copy kernel gather the strided elements straight into it.
    const TensorBase target(
        Storage::Borrow(Device::Cpu(), host, nbytes, nullptr, false), dtype_,
        shape_, ContiguousStrides(shape_), 0);
    GetBackend(device()).Copy(target, *this);
    return;
  }
  Contiguous().CopyToHost(host);
}

void TensorBase::MakeWritable() {
  KINDLING_CHECK(storage_ != nullptr, "tensor: use of an undefined tensor");
  if (storage_->is_read_only()) {
    // The private copy is the same tensor to autodiff: keep the metadata.
    std::shared_ptr<const AutodiffMeta> meta = autodiff_;
    *this = Detach().Clone();
    autodiff_ = std::move(meta);
  }
  storage_->BumpVersion();
}

std::string TensorBase::ToString() const {
  if (!defined()) return "Tensor(undefined)";
  return absl::StrCat("Tensor(", std::string(DTypeName(dtype_)),
                      shape_.ToString(), ", ", device().ToString(), ")");
}

}  // namespace kindling
