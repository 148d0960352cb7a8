// OnDevice: the setup of one call into CUDA kernels, shared by the backend
// (cuda_backend.cc) and the kernels registered outside it (the update
// rules' fused kernels, optim/cuda/).
#ifndef KINDLING_BACKEND_CUDA_ON_DEVICE_H_
#define KINDLING_BACKEND_CUDA_ON_DEVICE_H_

#include <cuda_runtime.h>

#include <type_traits>

#include "kindling/backend/cuda/cuda_allocator.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/backend/cuda/cuda_device_memory.h"
#include "kindling/core/check.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cuda {

// OnDevice: one backend call's setup, and the single place where the
// backend tells the allocator which streams use which blocks. It makes the
// device of its first tensor current and takes that device's current
// stream; every tensor the call's kernels read or write must be passed to
// it (undefined ones are skipped), and each is recorded as used on that
// stream (CudaAllocator::RecordStream). So a tensor allocated on one stream
// and used by a kernel on another is not reused, once freed, before that
// kernel has run. Costs a relaxed load per tensor when the program has only
// ever used one stream.
class OnDevice {
 public:
  template <class... Tensors>
  explicit OnDevice(const TensorBase& first, const Tensors&... rest)
      : index_(CheckedIndex(first)),
        guard_(index_),
        stream_(CurrentCudaStream(index_)),
        allocator_(CudaAllocatorFor(index_)) {
    static_assert((std::is_same_v<Tensors, TensorBase> && ...),
                  "OnDevice takes the call's tensors");
    RecordUse(first);
    (RecordUse(rest), ...);
  }
  int index() const { return index_; }
  cudaStream_t stream() const { return stream_; }

  // RecordUse() records one more tensor the call's kernels use (for calls
  // whose tensors are not known up front). The storage's own address: no
  // interior lookup. Memory of another device (which the front end's checks
  // keep out) would need that device's allocator and events, so it is not
  // recorded here.
  void RecordUse(const TensorBase& tensor) const {
    if (!tensor.defined() || tensor.device() != Device::Cuda(index_)) return;
    allocator_.RecordStream(tensor.storage()->data(), stream_);
  }

 private:
  static int CheckedIndex(const TensorBase& tensor) {
    KINDLING_CHECK(tensor.device().type() == DeviceKind::kCuda,
                   "cuda backend: tensor %s is not on a cuda device",
                   tensor.ToString());
    return tensor.device().index();
  }
  int index_;
  CudaDeviceGuard guard_;
  cudaStream_t stream_;
  CudaAllocator& allocator_;
};

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_ON_DEVICE_H_
