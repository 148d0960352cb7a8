// WinogradConv3x3: a 3 x 3, stride-1, padding-1 convolution by Winograd's
// minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2015), between buffers in oneDNN's
// eight-channel blocked layout (nChw8c: [N, C / 8, H, W, 8]), for CPUs
// without AVX-512.
//
// Why: on AVX-512 oneDNN 2.6 runs such layers through its own Winograd
// kernel (onednn_conv2d.cc, AlgorithmOf()), but on AVX2 it has only the
// direct one (jit_avx2), which ran the example CNN's conv2 (32 -> 64
// channels, 14 x 14, batch 128) at about two thirds of the machine's GEMM
// rate, and conv2 is most of a CNN epoch's FLOPs. F(2x2, 3x3) computes each
// 2 x 2 output tile from a 4 x 4 input tile with 16 products per input and
// output channel instead of 36: the channel sums become 16 small matrix
// products ([tiles, C] x [C, K]), which run here on AVX2 register tiles
// while the transformed tiles stay in the L2 cache (a chunk of 36 tiles at
// a time). The input's gradient is the same convolution over the output's
// gradient with the filters turned, and the weights' gradient the
// forward's adjoint, the same products summed over the tiles. Measured in
// benches/conv_bench (BM_WinogradForward/conv2, BM_WinogradBackward/conv2;
// docs/performance.md).
//
// Rounding: the transforms add and subtract up to 16 inputs before the
// products (with the factors 1/2 of the weights' transform exact), so the
// result differs from the direct sum in the last bits, as oneDNN's own
// Winograd does on AVX-512; it does not depend on the thread count or on
// how a batch is cut into slabs (each tile's sums run in channel order;
// the weights' gradient sums a slab's tiles in order).
//
//   std::vector<float> u(WinogradWeightsSize(64, 32));
//   WinogradWeights(weight, 64, 32, u.data());      // weight: [64, 32, 3, 3]
//   WinogradConv3x3(src, u.data(), bias, {n, 32, 64, 14, 14}, dst);
#ifndef KINDLING_BACKEND_CPU_WINOGRAD_CONV3X3_H_
#define KINDLING_BACKEND_CPU_WINOGRAD_CONV3X3_H_

#include <cstdint>

namespace kindling::cpu {

// WinogradShape: the convolution's samples, input and output channels (both
// multiples of 8) and its input's (and output's) height and width.
struct WinogradShape {
  int64_t samples, in_channels, out_channels, height, width;
};

// WinogradWeightsSize() is the floats of the transformed weights of a layer
// with `out_channels` x `in_channels` filters: 16 planes of in x out.
int64_t WinogradWeightsSize(int64_t out_channels, int64_t in_channels);

// WinogradWeights() writes `u` [16, in, out] from `weight` [out, in, 3, 3]
// (contiguous, OIHW): the forward convolution's transformed filters.
void WinogradWeights(const float* weight, int64_t out_channels,
                     int64_t in_channels, float* u);

// WinogradDataGradientWeights() writes `u` [16, out, in] from the same
// `weight`: the transformed filters of the convolution that maps the
// output's gradient (out channels) to the input's (in channels), each
// filter turned by 180 degrees. With them, WinogradConv3x3() over the
// output's gradient, WinogradShape{n, out, in, H, W}, is the input's
// gradient.
void WinogradDataGradientWeights(const float* weight, int64_t out_channels,
                                 int64_t in_channels, float* u);

// WinogradConv3x3() overwrites `dst` [N, K / 8, H, W, 8] with the
// convolution of `src` [N, C / 8, H, W, 8] (zero padding of 1 on each side)
// by the filters transformed into `u` [16, C, K], plus `bias` [K] unless it
// is null. C = shape.in_channels, K = shape.out_channels, both multiples of
// 8. Runs on the calling thread.
void WinogradConv3x3(const float* src, const float* u, const float* bias,
                     const WinogradShape& shape, float* dst);

// WinogradWeightGradient() overwrites `weight_grad` [K, C, 3, 3] (OIHW)
// with the gradient of that convolution's weights, summed over the
// samples, given its input `src` [N, C / 8, H, W, 8] and its output's
// gradient `grad` [N, K / 8, H, W, 8], and `bias_grad` [K] (unless null)
// with the sum of `grad` per channel. It is the forward's adjoint: each of
// the 16 points' sum over the tiles of (A g A^T) (B^T d B) is one
// [K, tiles] x [tiles, C] product, and G^T (that sum) G is the 3 x 3
// filter's gradient. Runs on the calling thread; the tiles are summed in
// order. Each calling thread keeps its scratch for its next call (here and
// in WinogradConv3x3(): a chunk's transformed tiles; here also the 16
// points' sums, 16 x C x K floats, 4 MiB at 256 x 256 channels).
void WinogradWeightGradient(const float* src, const float* grad,
                            const WinogradShape& shape, float* weight_grad,
                            float* bias_grad);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_WINOGRAD_CONV3X3_H_
