#include "kindling/backend/cpu/cpu_backend.h"

#include <cstring>

#include "kindling/backend/cpu/cpu_allocator.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/tensor/storage.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

void* CpuBackend::Allocate(const Device& device, size_t nbytes) {
  return TheCpuAllocator().Allocate(nbytes);
}

void CpuBackend::Deallocate(const Device& device, void* data, size_t nbytes) {
  TheCpuAllocator().Deallocate(data, nbytes);
}

void CpuBackend::CopyFromHost(const TensorBase& out, const void* host) {
  std::memcpy(out.data(), host, out.numel() * out.element_size());
}

void CpuBackend::CopyToHost(void* host, const TensorBase& in) {
  if (in.is_contiguous()) {
    std::memcpy(host, in.data(), in.numel() * in.element_size());
    return;
  }
  // Host memory is CPU memory: view it as a tensor and copy strided.
  const size_t nbytes = in.numel() * in.element_size();
  const TensorBase target(
      Storage::Borrow(Device::Cpu(), host, nbytes, nullptr, false), in.dtype(),
      in.shape(), ContiguousStrides(in.shape()), 0);
  CopyKernel(target, in);
}

void CpuBackend::Copy(const TensorBase& out, const TensorBase& in) {
  CopyKernel(out, in);
}

void CpuBackend::Fill(const TensorBase& out, double value) {
  FillKernel(out, value);
}

void CpuBackend::Unary(UnaryOp op, const TensorBase& out, const TensorBase& in,
                       double arg0, double arg1) {
  UnaryKernel(op, out, in, arg0, arg1);
}

void CpuBackend::Binary(BinaryOp op, const TensorBase& out,
                        const TensorBase& lhs, const TensorBase& rhs) {
  BinaryKernel(op, out, lhs, rhs);
}

void CpuBackend::Where(const TensorBase& out, const TensorBase& condition,
                       const TensorBase& on_true, const TensorBase& on_false) {
  WhereKernel(out, condition, on_true, on_false);
}

void CpuBackend::Reduce(ReduceOp op, const TensorBase& out,
                        const TensorBase& in, int axis) {
  ReduceKernel(op, out, in, axis);
}

void CpuBackend::Softmax(const TensorBase& out, const TensorBase& in, int axis,
                         bool log) {
  SoftmaxKernel(out, in, axis, log);
}

void CpuBackend::Matmul(const TensorBase& out, const TensorBase& lhs,
                        const TensorBase& rhs) {
  MatmulKernel(out, lhs, rhs);
}

void CpuBackend::IndexSelect(const TensorBase& out, const TensorBase& in,
                             int axis, const TensorBase& index) {
  IndexSelectKernel(out, in, axis, index);
}

void CpuBackend::Gather(const TensorBase& out, const TensorBase& in, int axis,
                        const TensorBase& index) {
  GatherKernel(out, in, axis, index);
}

void RegisterCpuBackend() {
  static CpuBackend* const backend = new CpuBackend();
  RegisterBackend(DeviceKind::kCpu, backend);
}

namespace {

// Registers the backend before main() in every program that links this
// library (alwayslink keeps this object file in the link).
const bool kRegistered = [] {
  RegisterCpuBackend();
  return true;
}();

}  // namespace
}  // namespace kindling::cpu
