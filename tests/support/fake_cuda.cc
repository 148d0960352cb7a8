#include "tests/support/fake_cuda.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::testing {
namespace {

struct AtomicCounters {
  std::atomic<int64_t> h2d_copies{0};
  std::atomic<int64_t> h2d_bytes{0};
  std::atomic<int64_t> max_h2d_copy_bytes{0};
  std::atomic<int64_t> d2h_copies{0};
  std::atomic<int64_t> d2h_bytes{0};
  std::atomic<int64_t> d2d_copies{0};
  std::atomic<int64_t> d2d_bytes{0};
  std::atomic<int64_t> kernel_calls{0};
  std::atomic<int64_t> live_bytes{0};
};

AtomicCounters& Counters() {
  static AtomicCounters counters;
  return counters;
}

void Add(std::atomic<int64_t>& counter, int64_t value) {
  counter.fetch_add(value, std::memory_order_relaxed);
}

void RaiseMax(std::atomic<int64_t>& max, int64_t value) {
  int64_t current = max.load(std::memory_order_relaxed);
  while (value > current && !max.compare_exchange_weak(
                                current, value, std::memory_order_relaxed)) {
  }
}

void CheckFakeDevice(const Device& device, const char* what) {
  KINDLING_CHECK(device.type() == DeviceKind::kCuda && device.index() >= 0 &&
                     device.index() < kFakeCudaDevices,
                 "fake cuda: %s on device %s; the fake serves cuda:0..cuda:%d",
                 what, device.ToString(), kFakeCudaDevices - 1);
}

// CheckKernelTensors() checks that the defined tensors among `tensors` share
// one fake cuda device, aborting naming `kernel` otherwise, and counts the
// call.
void CheckKernelTensors(const char* kernel,
                        std::span<const TensorBase* const> tensors) {
  const TensorBase* first = nullptr;
  for (const TensorBase* tensor : tensors) {
    if (!tensor->defined()) continue;
    const Device& device = tensor->device();
    KINDLING_CHECK(device.type() == DeviceKind::kCuda,
                   "fake cuda: kernel %s got %s, a tensor not on a cuda "
                   "device; the front end must reject mixed devices",
                   kernel, tensor->ToString());
    if (first == nullptr) {
      first = tensor;
      CheckFakeDevice(device, kernel);
    }
    KINDLING_CHECK(device == first->device(),
                   "fake cuda: kernel %s got %s together with %s; a "
                   "kernel's tensors must share one device",
                   kernel, first->ToString(), tensor->ToString());
  }
  Add(Counters().kernel_calls, 1);
}

// Host memory posing as device memory, with books kept on every byte moved.
class FakeCudaMemory final : public DeviceMemory {
 public:
  void* Allocate(const Device& device, size_t nbytes) override {
    CheckFakeDevice(device, "Allocate");
    void* data = std::aligned_alloc(64, RoundUp(nbytes));
    KINDLING_CHECK(data != nullptr,
                   "fake cuda: out of host memory for %d bytes", nbytes);
    Add(Counters().live_bytes, static_cast<int64_t>(nbytes));
    return data;
  }
  void Deallocate(const Device& device, void* data, size_t nbytes) override {
    CheckFakeDevice(device, "Deallocate");
    std::free(data);
    Add(Counters().live_bytes, -static_cast<int64_t>(nbytes));
  }
  void CopyHostToDevice(const Device& device, void* device_dst,
                        const void* host_src, size_t nbytes) override {
    CheckFakeDevice(device, "CopyHostToDevice");
    Add(Counters().h2d_copies, 1);
    Add(Counters().h2d_bytes, static_cast<int64_t>(nbytes));
    RaiseMax(Counters().max_h2d_copy_bytes, static_cast<int64_t>(nbytes));
    if (nbytes > 0) std::memcpy(device_dst, host_src, nbytes);
  }
  void CopyDeviceToHost(const Device& device, void* host_dst,
                        const void* device_src, size_t nbytes) override {
    CheckFakeDevice(device, "CopyDeviceToHost");
    Add(Counters().d2h_copies, 1);
    Add(Counters().d2h_bytes, static_cast<int64_t>(nbytes));
    if (nbytes > 0) std::memcpy(host_dst, device_src, nbytes);
  }
  void CopyDeviceToDevice(const Device& device, void* dst, const void* src,
                          size_t nbytes) override {
    CheckFakeDevice(device, "CopyDeviceToDevice");
    Add(Counters().d2d_copies, 1);
    Add(Counters().d2d_bytes, static_cast<int64_t>(nbytes));
    if (nbytes > 0) std::memcpy(dst, src, nbytes);
  }

 private:
  // aligned_alloc wants a multiple of the alignment (and some bytes even
  // for an empty tensor, so that every allocation is a distinct pointer).
  static size_t RoundUp(size_t nbytes) {
    return nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
  }
};

// The CPU kernels behind a device check: every defined tensor a kernel gets
// must live on one fake cuda device.
class FakeCudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "fake-cuda"; }
  // The CPU kernels it runs do no 16-bit arithmetic, so unlike the real
  // CUDA backend the fake gets f16/bf16 ops as f32 from the front end.
  bool ComputesHalfNatively() const override { return false; }

  void Copy(const TensorBase& out, const TensorBase& in) override {
    Cpu("Copy", {&out, &in}).Copy(out, in);
  }
  void Fill(const TensorBase& out, double value) override {
    Cpu("Fill", {&out}).Fill(out, value);
  }
  void Unary(UnaryOp op, const TensorBase& out, const TensorBase& in,
             double arg0, double arg1) override {
    Cpu("Unary", {&out, &in}).Unary(op, out, in, arg0, arg1);
  }
  void Binary(BinaryOp op, const TensorBase& out, const TensorBase& lhs,
              const TensorBase& rhs) override {
    Cpu("Binary", {&out, &lhs, &rhs}).Binary(op, out, lhs, rhs);
  }
  void Where(const TensorBase& out, const TensorBase& condition,
             const TensorBase& on_true, const TensorBase& on_false) override {
    Cpu("Where", {&out, &condition, &on_true, &on_false})
        .Where(out, condition, on_true, on_false);
  }
  void Reduce(ReduceOp op, const TensorBase& out, const TensorBase& in,
              int axis) override {
    Cpu("Reduce", {&out, &in}).Reduce(op, out, in, axis);
  }
  void Softmax(const TensorBase& out, const TensorBase& in, int axis,
               bool log) override {
    Cpu("Softmax", {&out, &in}).Softmax(out, in, axis, log);
  }
  void Matmul(const TensorBase& out, const TensorBase& lhs,
              const TensorBase& rhs) override {
    Cpu("Matmul", {&out, &lhs, &rhs}).Matmul(out, lhs, rhs);
  }
  void CheckIndices(const TensorBase& index, int64_t bound,
                    const char* op) override {
    Cpu("CheckIndices", {&index}).CheckIndices(index, bound, op);
  }
  void IndexSelect(const TensorBase& out, const TensorBase& in, int axis,
                   const TensorBase& index) override {
    Cpu("IndexSelect", {&out, &in, &index}).IndexSelect(out, in, axis, index);
  }
  void Gather(const TensorBase& out, const TensorBase& in, int axis,
              const TensorBase& index) override {
    Cpu("Gather", {&out, &in, &index}).Gather(out, in, axis, index);
  }
  void FillRandom(const TensorBase& out, RandomDistribution distribution,
                  uint64_t seed, uint64_t offset, double a, double b) override {
    Cpu("FillRandom", {&out}).FillRandom(out, distribution, seed, offset, a, b);
  }
  void Dropout(const TensorBase& out, const TensorBase& in, double prob,
               uint64_t seed, uint64_t offset) override {
    Cpu("Dropout", {&out, &in}).Dropout(out, in, prob, seed, offset);
  }
  double AbsPowerSum(const TensorBase& in, double p) override {
    return Cpu("AbsPowerSum", {&in}).AbsPowerSum(in, p);
  }
  void ScaleClamp(const TensorBase& inout, double scale,
                  double max_abs) override {
    Cpu("ScaleClamp", {&inout}).ScaleClamp(inout, scale, max_abs);
  }
  void ScatterAdd(const TensorBase& out, int axis, const TensorBase& index,
                  const TensorBase& src) override {
    Cpu("ScatterAdd", {&out, &index, &src}).ScatterAdd(out, axis, index, src);
  }
  void Im2Col(const TensorBase& columns, const TensorBase& input,
              const Window2dGeometry& window, double pad_value) override {
    Cpu("Im2Col", {&columns, &input}).Im2Col(columns, input, window, pad_value);
  }
  void Col2Im(const TensorBase& input_grad, const TensorBase& columns,
              const Window2dGeometry& window) override {
    Cpu("Col2Im", {&input_grad, &columns}).Col2Im(input_grad, columns, window);
  }
  void MaxPool2d(const TensorBase& out, const TensorBase& argmax,
                 const TensorBase& input, const Window2dGeometry& window,
                 PoolActivation activation) override {
    Cpu("MaxPool2d", {&out, &argmax, &input})
        .MaxPool2d(out, argmax, input, window, activation);
  }
  void MaxPool2dBackward(const TensorBase& input_grad, const TensorBase& grad,
                         const TensorBase& argmax,
                         const Window2dGeometry& window) override {
    Cpu("MaxPool2dBackward", {&input_grad, &grad, &argmax})
        .MaxPool2dBackward(input_grad, grad, argmax, window);
  }
  void Conv2d(const TensorBase& out, const TensorBase& input,
              const TensorBase& weight, const TensorBase& bias,
              const Window2dGeometry& window) override {
    Cpu("Conv2d", {&out, &input, &weight, &bias})
        .Conv2d(out, input, weight, bias, window);
  }
  void Conv2dBackward(const TensorBase& input_grad,
                      const TensorBase& weight_grad,
                      const TensorBase& bias_grad, const TensorBase& grad,
                      const TensorBase& input, const TensorBase& weight,
                      const Window2dGeometry& window) override {
    Cpu("Conv2dBackward",
        {&input_grad, &weight_grad, &bias_grad, &grad, &input, &weight})
        .Conv2dBackward(input_grad, weight_grad, bias_grad, grad, input, weight,
                        window);
  }
  void BinaryScalar(BinaryOp op, const TensorBase& out,
                    const TensorBase& tensor, double scalar,
                    bool scalar_is_lhs) override {
    Cpu("BinaryScalar", {&out, &tensor})
        .BinaryScalar(op, out, tensor, scalar, scalar_is_lhs);
  }
  void LayerNorm(const TensorBase& out, const TensorBase& mean,
                 const TensorBase& rstd, const TensorBase& input,
                 const TensorBase& gamma, const TensorBase& beta,
                 double epsilon) override {
    Cpu("LayerNorm", {&out, &mean, &rstd, &input, &gamma, &beta})
        .LayerNorm(out, mean, rstd, input, gamma, beta, epsilon);
  }
  void LayerNormBackward(const TensorBase& input_grad,
                         const TensorBase& gamma_grad,
                         const TensorBase& beta_grad, const TensorBase& grad,
                         const TensorBase& input, const TensorBase& mean,
                         const TensorBase& rstd,
                         const TensorBase& gamma) override {
    Cpu("LayerNormBackward", {&input_grad, &gamma_grad, &beta_grad, &grad,
                              &input, &mean, &rstd, &gamma})
        .LayerNormBackward(input_grad, gamma_grad, beta_grad, grad, input, mean,
                           rstd, gamma);
  }

 private:
  // Cpu() checks the call's tensors (CheckKernelTensors) and returns the CPU
  // backend to run it.
  static Backend& Cpu(const char* kernel,
                      std::initializer_list<const TensorBase*> tensors) {
    CheckKernelTensors(kernel, {tensors.begin(), tensors.size()});
    return GetBackend(Device::Cpu());
  }
};

// FakeFusedUpdate<Step>: the update rules' fused kernels on the fake device
// are the CPU's (optim/fused_update.h), behind the same checks as the
// Backend's kernels, so a rule steps the fake device bit-identically to the
// CPU, as it does through its real CUDA kernel to rounding.
template <class Step>
bool FakeFusedUpdate(const Step& step, const TensorBase& param,
                     const TensorBase& grad,
                     std::span<const TensorBase> state) {
  std::vector<const TensorBase*> tensors = {&param, &grad};
  for (const TensorBase& tensor : state) tensors.push_back(&tensor);
  CheckKernelTensors("fused optimizer update", tensors);
  const auto cpu_kernel = FusedUpdates<Step>::Find(DeviceKind::kCpu);
  return cpu_kernel != nullptr && cpu_kernel(step, param, grad, state);
}

template <class... Steps>
void RegisterFakeFusedUpdates() {
  (FusedUpdates<Steps>::Register(DeviceKind::kCuda, &FakeFusedUpdate<Steps>),
   ...);
}

const bool kInstalled = [] {
  InstallFakeCuda();
  return true;
}();

}  // namespace

FakeCudaCounters GetFakeCudaCounters() {
  const AtomicCounters& c = Counters();
  constexpr auto kRelaxed = std::memory_order_relaxed;
  FakeCudaCounters result;
  result.h2d_copies = c.h2d_copies.load(kRelaxed);
  result.h2d_bytes = c.h2d_bytes.load(kRelaxed);
  result.max_h2d_copy_bytes = c.max_h2d_copy_bytes.load(kRelaxed);
  result.d2h_copies = c.d2h_copies.load(kRelaxed);
  result.d2h_bytes = c.d2h_bytes.load(kRelaxed);
  result.d2d_copies = c.d2d_copies.load(kRelaxed);
  result.d2d_bytes = c.d2d_bytes.load(kRelaxed);
  result.kernel_calls = c.kernel_calls.load(kRelaxed);
  result.live_bytes = c.live_bytes.load(kRelaxed);
  return result;
}

void ResetFakeCudaCounters() {
  AtomicCounters& c = Counters();
  for (std::atomic<int64_t>* counter :
       {&c.h2d_copies, &c.h2d_bytes, &c.max_h2d_copy_bytes, &c.d2h_copies,
        &c.d2h_bytes, &c.d2d_copies, &c.d2d_bytes, &c.kernel_calls}) {
    counter->store(0, std::memory_order_relaxed);
  }
}

void InstallFakeCuda() {
  static FakeCudaMemory* const memory = new FakeCudaMemory();
  static FakeCudaBackend* const backend = new FakeCudaBackend();
  RegisterDeviceMemory(DeviceKind::kCuda, memory);
  RegisterBackend(DeviceKind::kCuda, backend);
  RegisterFakeFusedUpdates<SgdStep, AdamStep, RmsPropStep, LionStep>();
}

}  // namespace kindling::testing
