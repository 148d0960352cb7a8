// Fused scaled-dot-product attention: softmax(q k^T * scale + masks) v in
// tiles with an online softmax (FlashAttention's algorithm), forward and
// backward, never materializing the [T, S] weights: the forward keeps the
// output and one log-sum-exp per query row, the backward recomputes the
// weights tile by tile. Memory beyond the inputs and outputs is O(T) per
// head.
//
// The kernels live in a per-device table, outside the tensor layer's
// Backend: a device's kernel library registers them at static
// initialization (the CPU's in nn/cpu/, linked with the CPU backend). On a
// device or dtype without a kernel, FusedAttention() returns nullopt and the
// caller composes tensor ops (ScaledDotProductAttention in attention.h does).
#ifndef KINDLING_NN_FUSED_ATTENTION_H_
#define KINDLING_NN_FUSED_ATTENTION_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::nn {

// FusedAttentionShape: one call's sizes. q is [B, H, T, Dh], k [B, H, S, Dh],
// v [B, H, S, Dv], of one floating dtype.
struct FusedAttentionShape {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t queries = 0;    // T
  int64_t keys = 0;       // S
  int64_t head_dim = 0;   // Dh
  int64_t value_dim = 0;  // Dv
  double scale = 1;
  // causal: query i sees keys 0..i.
  bool causal = false;
};

// FusedAttentionTensors: a call's tensors. q, k, v, out, grad_out and the
// gradients are [B, H, L, D] with unit stride along D and rows at least D
// apart, in any layout otherwise: the front end passes the projections'
// [B, L, H, D] memory viewed as heads as it is, and allocates out and the
// gradients in that layout, so no head is copied into or out of a layout of
// its own. padding is contiguous Bool [B, S] (true: ignore that key) or
// undefined; logsumexp is contiguous [B*H, T] of the inputs' dtype. Forward
// writes out and logsumexp; backward reads them and grad_out and
// overwrites grad_q, grad_k and grad_v (allocated, not initialized).
struct FusedAttentionTensors {
  TensorBase q, k, v, padding;
  TensorBase out, logsumexp;
  TensorBase grad_out, grad_q, grad_k, grad_v;
};

class FusedAttentionKernels {
 public:
  // A kernel returns false, having written nothing, for a dtype it lacks.
  using Kernel = bool (*)(const FusedAttentionShape& shape,
                          const FusedAttentionTensors& tensors);

  static void Register(DeviceKind device, Kernel forward, Kernel backward) {
    Table()[Index(device)][0].store(forward, std::memory_order_release);
    Table()[Index(device)][1].store(backward, std::memory_order_release);
  }
  static Kernel Forward(DeviceKind device) {
    return Table()[Index(device)][0].load(std::memory_order_acquire);
  }
  static Kernel Backward(DeviceKind device) {
    return Table()[Index(device)][1].load(std::memory_order_acquire);
  }

 private:
  static constexpr int kDeviceKinds = 2;  // DeviceKind::kCpu, kCuda
  static int Index(DeviceKind device) { return static_cast<int>(device); }
  static std::array<std::array<std::atomic<Kernel>, 2>, kDeviceKinds>& Table() {
    static std::array<std::array<std::atomic<Kernel>, 2>, kDeviceKinds> table{};
    return table;
  }
};

// FusedAttentionRegistration: a static object that registers kernels.
struct FusedAttentionRegistration {
  FusedAttentionRegistration(DeviceKind device,
                             FusedAttentionKernels::Kernel forward,
                             FusedAttentionKernels::Kernel backward) {
    FusedAttentionKernels::Register(device, forward, backward);
  }
};

// FusedAttention(): softmax(q k^T / sqrt(Dh) + masks) v for q [B, H, T, Dh],
// k [B, H, S, Dh], v [B, H, S, Dv] (any strides), recorded as one autodiff
// node when an input requires grad; nullopt when the device has no kernel
// for the dtype. `padding` is Bool [B, S] or undefined. A query whose keys
// are all masked gets NaN (and a zero gradient).
std::optional<Tensor<4>> FusedAttention(const Tensor<4>& q, const Tensor<4>& k,
                                        const Tensor<4>& v, bool causal,
                                        const TensorBase& padding);

}  // namespace kindling::nn

#endif  // KINDLING_NN_FUSED_ATTENTION_H_
