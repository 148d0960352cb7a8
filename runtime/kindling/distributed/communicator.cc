#include "kindling/distributed/communicator.h"

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "kindling/core/status_macros.h"
#include "kindling/tensor/device.h"

namespace kindling::distributed {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAverage:
      return "average";
    case ReduceOp::kMax:
      return "max";
  }
  return "unknown";
}

bool IsReducibleDType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF64:
    case DType::kF16:
    case DType::kBF16:
    case DType::kI64:
      return true;
    default:
      return false;
  }
}

absl::Status Communicator::CheckRoot(int root, const char* operation) const {
  if (root < 0 || root >= world_size_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: root rank %d is outside the world of %d ranks",
                        operation, root, world_size_));
  }
  return absl::OkStatus();
}

absl::Status Communicator::CheckBuffer(const TensorBase& tensor,
                                       const char* operation) const {
  if (!tensor.defined()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the tensor is undefined", operation));
  }
  if (tensor.device() != device()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the tensor is on %s, but the %s communicator works on %s",
        operation, tensor.device().ToString(), backend(), device().ToString()));
  }
  if (!tensor.is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the tensor of shape %s is not contiguous (call Contiguous())",
        operation, tensor.shape().ToString()));
  }
  return absl::OkStatus();
}

absl::Status Communicator::AllReduceHost(void* data, int64_t count, DType dtype,
                                         ReduceOp op) {
  if (device().is_cpu()) return AllReduce(data, count, dtype, op);
  TensorBase staged = TensorBase::Empty({count}, dtype, Device::Cpu());
  std::memcpy(staged.data(), data, count * DTypeSize(dtype));
  staged = staged.ToDevice(device());
  KINDLING_RETURN_IF_ERROR(AllReduce(staged.data(), count, dtype, op));
  staged.CopyToHost(data);
  return absl::OkStatus();
}

absl::Status Communicator::BroadcastHost(void* data, int64_t bytes, int root) {
  if (device().is_cpu()) return Broadcast(data, bytes, root);
  TensorBase staged = TensorBase::Empty({bytes}, DType::kU8, Device::Cpu());
  if (bytes > 0) std::memcpy(staged.data(), data, bytes);
  staged = staged.ToDevice(device());
  KINDLING_RETURN_IF_ERROR(Broadcast(staged.data(), bytes, root));
  if (bytes > 0) staged.CopyToHost(data);
  return absl::OkStatus();
}

absl::Status Communicator::AllReduce(const TensorBase& tensor, ReduceOp op) {
  if (absl::Status status = CheckBuffer(tensor, "AllReduce"); !status.ok()) {
    return status;
  }
  if (!IsReducibleDType(tensor.dtype())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AllReduce: dtype %s cannot be reduced (f32, f64, f16, bf16, i64 can)",
        std::string(DTypeName(tensor.dtype()))));
  }
  return AllReduce(tensor.data(), tensor.numel(), tensor.dtype(), op);
}

absl::Status Communicator::Broadcast(const TensorBase& tensor, int root) {
  if (absl::Status status = CheckBuffer(tensor, "Broadcast"); !status.ok()) {
    return status;
  }
  if (absl::Status status = CheckRoot(root, "Broadcast"); !status.ok()) {
    return status;
  }
  return Broadcast(tensor.data(), tensor.numel() * tensor.element_size(), root);
}

absl::Status Communicator::AllGather(const TensorBase& in,
                                     const TensorBase& out) {
  if (absl::Status status = CheckBuffer(in, "AllGather"); !status.ok()) {
    return status;
  }
  if (absl::Status status = CheckBuffer(out, "AllGather output");
      !status.ok()) {
    return status;
  }
  if (in.dtype() != out.dtype() || out.numel() != in.numel() * world_size_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AllGather: the output (%s, %d elements) must be %s with %d x %d "
        "elements",
        std::string(DTypeName(out.dtype())), out.numel(),
        std::string(DTypeName(in.dtype())), world_size_, in.numel()));
  }
  return AllGather(in.data(), out.data(),
                   in.numel() * static_cast<int64_t>(in.element_size()));
}

}  // namespace kindling::distributed
