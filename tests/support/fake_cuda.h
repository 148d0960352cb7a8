// FakeCuda: a test-only "cuda" device made of host memory, so every layer
// above the backend (modules, records, checkpoints, the trainer) can be
// tested on cuda:0 and cuda:1 on a machine without a GPU.
//
// Linking //tests/support:fake_cuda (testonly, alwayslink) registers, for
// DeviceKind::kCuda:
//   * a DeviceMemory that allocates host memory but keeps its own books: the
//     bytes it holds, and every copy by direction (host to device, device to
//     host, device to device) with its byte count and the largest single
//     host-to-device copy. A test reads them to prove what a device path
//     stages on the host (a lazy init on the device must copy nothing from
//     the host; a checkpoint load must copy one staging chunk at a time);
//   * a Backend whose kernels are the CPU backend's (kernels only take
//     pointers, and these pointers are host memory), so results on the fake
//     device are bit-identical to the CPU's. Before delegating, every kernel
//     checks that all its tensors live on one cuda device and aborts naming
//     the kernel and the offending tensor otherwise: a CPU tensor that slips
//     past the front end's device checks into a cuda kernel fails loudly here,
//     as it would crash (or read garbage) on a real GPU.
//
//   kindling::testing::ResetFakeCudaCounters();
//   auto t = kindling::Tensor<1>::Zeros({256}, kindling::Device::Cuda(0));
//   kindling::testing::GetFakeCudaCounters().h2d_bytes;  // 0: filled there
//
// What the fake cannot catch: host code that dereferences a device pointer
// directly (on a real GPU that faults; here it reads host memory). Device
// memory is only reached through DeviceMemory and the kernels in the code
// under test, which is what these tests rely on.
//
// Thread safety: the counters are atomics; every function may be called from
// any thread.
#ifndef KINDLING_TESTS_SUPPORT_FAKE_CUDA_H_
#define KINDLING_TESTS_SUPPORT_FAKE_CUDA_H_

#include <cstdint>

namespace kindling::testing {

// kFakeCudaDevices: the fake serves cuda:0 .. cuda:kFakeCudaDevices-1; any
// other index aborts.
inline constexpr int kFakeCudaDevices = 4;

// FakeCudaCounters: what the fake device did since ResetFakeCudaCounters().
struct FakeCudaCounters {
  // Host-to-device copies (DeviceMemory::CopyHostToDevice).
  int64_t h2d_copies = 0;
  int64_t h2d_bytes = 0;
  // The largest single host-to-device copy, in bytes.
  int64_t max_h2d_copy_bytes = 0;
  // Device-to-host copies (DeviceMemory::CopyDeviceToHost).
  int64_t d2h_copies = 0;
  int64_t d2h_bytes = 0;
  // Device-to-device copies (DeviceMemory::CopyDeviceToDevice).
  int64_t d2d_copies = 0;
  int64_t d2d_bytes = 0;
  // Kernel calls through the fake Backend.
  int64_t kernel_calls = 0;
  // Bytes the fake memory holds now, all fake devices together (never reset:
  // a fact, not a statistic).
  int64_t live_bytes = 0;
};

// GetFakeCudaCounters() reads the counters.
FakeCudaCounters GetFakeCudaCounters();

// ResetFakeCudaCounters() zeroes every counter but live_bytes.
void ResetFakeCudaCounters();

// InstallFakeCuda() registers the fake memory and backend for
// DeviceKind::kCuda (idempotent). A static initializer calls it; call it
// yourself only if your link drops alwayslink libraries.
void InstallFakeCuda();

}  // namespace kindling::testing

#endif  // KINDLING_TESTS_SUPPORT_FAKE_CUDA_H_
