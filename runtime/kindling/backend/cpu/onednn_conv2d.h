// Conv2d and its backward through oneDNN (Debian's libdnnl, the CPU
// primitive library PyTorch and ONNX Runtime use), in the blocked layouts
// and with the algorithms (direct or Winograd: AlgorithmOf() in the .cc)
// oneDNN picks for the shape, with reorders from and to Kindling's NCHW at
// the call's ends, except where a blocked copy stands for the input or its
// gradient (blocked_copy.h: the input reordered once a step, or written
// blocked by the layer before, which also reads the input's gradient
// blocked). Where oneDNN has only its direct AVX2 kernel for a 3 x 3
// layer, Kindling's Winograd kernels (winograd_conv3x3.h) compute it in
// oneDNN's layout instead (SetWinogradConv3x3() below).
//
// Each function takes the contract of Backend::Conv2d / Conv2dBackward
// (kindling/tensor/backend.h) and returns false, having written nothing,
// where it does not apply (not f32, a window oneDNN cannot express, a
// negative or zero stride in a view, a batch smaller than the thread count,
// oneDNN refusing the shape) or where Kindling's own kernel
// (backend/cpu/conv2d.cc) measured faster (a single input channel); the
// caller then runs that kernel.
//
// The batch is cut into one slab per thread of Kindling's pool
// (backend/cpu/parallel.h), and each slab runs single-threaded oneDNN
// primitives, built once per shape and kept with their buffers. oneDNN's
// own OpenMP threads never start, so it follows the pool's wait policy: on 2
// cores, with oneDNN's threads spinning after each primitive, a CNN epoch
// ran slower than without oneDNN.
//
// Measured on the example CNN at batch 128 (AVX-512, 2 threads), oneDNN's
// time over Kindling's (benches/conv_bench): conv2 (32 -> 64, 14 x 14)
// forward 0.46, backward 0.61 on an AMD Zen 5 host, oneDNN's forward and
// data gradient through Winograd (0.77 and 0.83 on the Zen 4 host where this
// split was chosen, with the direct algorithm, where a CNN epoch took 0.91x
// the time of Kindling's kernels alone). conv1 (1 -> 32, 28 x 28): see
// KindlingsKernelIsFaster() in the .cc.
//
// KINDLING_ONEDNN=0 in the environment turns the path off (every call
// returns false), to compare or to rule oneDNN out; KINDLING_ONEDNN=all also
// takes the shapes Kindling's kernel wins (benches/conv_bench measures them
// that way).
#ifndef KINDLING_BACKEND_CPU_ONEDNN_CONV2D_H_
#define KINDLING_BACKEND_CPU_ONEDNN_CONV2D_H_

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

// OneDnnEnabled() is false when KINDLING_ONEDNN=0 (read once).
bool OneDnnEnabled();

// SetWinogradConv3x3() chooses whether the 3 x 3, stride-1, padding-1
// convolutions (forward, data gradient and, with the data gradient, the
// weights' and bias's) that oneDNN would run with its direct AVX2 kernel,
// in nChw8c, run through winograd_conv3x3.h instead, in the same layouts
// and slabs: on by default, off where KINDLING_WINOGRAD=0 (read once).
// Figures: Blocked8() in the .cc and docs/performance.md. For benches and
// tests that compare the two; not to be called while a convolution runs.
void SetWinogradConv3x3(bool enabled);

// OneDnnLeavesToKindling() is true where OneDnnConv2d() and
// OneDnnConv2dBackward() decline every convolution of an input of this shape
// (KINDLING_ONEDNN=0, or a single input channel): Kindling's kernels run
// them.
bool OneDnnLeavesToKindling(const Shape& input);

bool OneDnnConv2d(const TensorBase& out, const TensorBase& input,
                  const TensorBase& weight, const TensorBase& bias,
                  const Window2dGeometry& window);

bool OneDnnConv2dBackward(const TensorBase& input_grad,
                          const TensorBase& weight_grad,
                          const TensorBase& bias_grad, const TensorBase& grad,
                          const TensorBase& input, const TensorBase& weight,
                          const Window2dGeometry& window);

// OneDnnConv2dMaxPool() and OneDnnConv2dMaxPoolBackward() take the
// contract of Backend::Conv2dMaxPool / Conv2dMaxPoolBackward: the convolution
// as above, its output pooled where oneDNN leaves it (nChw16c on AVX-512,
// nChw8c on AVX2) and its gradient written there, by blocked_max_pool.h.
// They return false, having written nothing, where the convolution does not
// run on oneDNN, oneDNN's layout is neither (fewer input channels than a
// block, say) or the pool is not blocked_max_pool.h's
// (FitsBlockedMaxPool()). The pool is
// Kindling's, not oneDNN's pooling primitive: with its output and argmax
// turned into Kindling's layout it measured slower (blocked_max_pool.h).
// On the example CNN's conv2 at batch 128 (benches/conv_bench, Pooled) the
// pooled convolution took 0.73x the time of the convolution and the pool as
// two ops forward and 0.93x backward.
bool OneDnnConv2dMaxPool(const TensorBase& out, const TensorBase& argmax,
                         const TensorBase& input, const TensorBase& weight,
                         const TensorBase& bias, const Window2dGeometry& conv,
                         const Window2dGeometry& pool,
                         PoolActivation activation);

bool OneDnnConv2dMaxPoolBackward(
    const TensorBase& input_grad, const TensorBase& weight_grad,
    const TensorBase& bias_grad, const TensorBase& pooled_grad,
    const TensorBase& argmax, const TensorBase& input, const TensorBase& weight,
    const Window2dGeometry& conv, const Window2dGeometry& pool);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_ONEDNN_CONV2D_H_
