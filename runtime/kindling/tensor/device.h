// Device: where a tensor's storage lives.
//
// A device is a type (cpu or cuda) plus an index. It prints and parses in the
// PyTorch spelling, so a device can come from a flag or a checkpoint:
//
//   kindling::Device::Cpu().ToString();      // "cpu"
//   kindling::Device::Cuda(1).ToString();    // "cuda:1"
//   kindling::Device::Parse("cuda:0");       // StatusOr holding Cuda(0)
//   kindling::Device::Parse("tpu");          // InvalidArgument
//
// Which devices can hold tensors depends on the backends linked in (see
// backend.h): //runtime/kindling/backend/cpu registers cpu; a CUDA backend
// registers cuda:N.
#ifndef KINDLING_TENSOR_DEVICE_H_
#define KINDLING_TENSOR_DEVICE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace kindling {

// DeviceKind is the kind of memory a device has.
enum class DeviceKind : uint8_t { kCpu, kCuda };

inline constexpr int kNumDeviceKinds = 2;

class Device {
 public:
  // Device() is the CPU.
  constexpr Device() = default;
  static constexpr Device Cpu() { return Device(DeviceKind::kCpu, 0); }
  static constexpr Device Cuda(int index) {
    return Device(DeviceKind::kCuda, index);
  }

  // Parse() reads "cpu", "cuda" (index 0) or "cuda:N".
  [[nodiscard]] static absl::StatusOr<Device> Parse(std::string_view text);

  constexpr DeviceKind type() const { return type_; }
  constexpr int index() const { return index_; }
  constexpr bool is_cpu() const { return type_ == DeviceKind::kCpu; }

  // ToString() prints "cpu" or "cuda:N".
  std::string ToString() const;

  friend constexpr bool operator==(const Device& a, const Device& b) {
    return a.type_ == b.type_ && a.index_ == b.index_;
  }
  friend std::ostream& operator<<(std::ostream& os, const Device& device) {
    return os << device.ToString();
  }
  template <class H>
  friend H AbslHashValue(H state, const Device& device) {
    return H::combine(std::move(state), device.type_, device.index_);
  }

 private:
  constexpr Device(DeviceKind type, int index) : type_(type), index_(index) {}

  DeviceKind type_ = DeviceKind::kCpu;
  int index_ = 0;
};

namespace internal {

// BackendTarget() is the Bazel target (or build flag) that registers memory
// and kernels for `type`, for the message when none is linked.
constexpr const char* BackendTarget(DeviceKind type) {
  return type == DeviceKind::kCpu ? "//runtime/kindling/backend/cpu"
                                  : "the CUDA backend, --config=cuda";
}

}  // namespace internal
}  // namespace kindling

#endif  // KINDLING_TENSOR_DEVICE_H_
