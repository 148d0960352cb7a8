#include "kindling/tensor/saved_tensor.h"

#include "kindling/core/check.h"

namespace kindling {
namespace {

// The op whose backward function runs on this thread; null outside one.
thread_local const char* applying_node = nullptr;

}  // namespace

SavedTensor::SavedTensor(const TensorBase& tensor)
    : tensor_(tensor.defined() ? tensor.Detach() : TensorBase()),
      saved_version_(tensor.defined() ? tensor.storage()->version() : 0) {}

void SavedTensor::FailModified() const {
  KINDLING_CHECK(false,
                 "backward of '%s': a tensor it saved, %s, was modified by an "
                 "in-place write after the forward saved it (storage version "
                 "%d, saved at version %d). Write in place only after "
                 "Backward(), or write to a Clone()",
                 applying_node != nullptr ? applying_node : "an op",
                 tensor_.ToString(), tensor_.storage()->version(),
                 saved_version_);
  __builtin_unreachable();
}

namespace autodiff_internal {

ApplyingNodeScope::ApplyingNodeScope(const char* name)
    : previous_(applying_node) {
  applying_node = name;
}

ApplyingNodeScope::~ApplyingNodeScope() { applying_node = previous_; }

}  // namespace autodiff_internal
}  // namespace kindling
