// Conv2d on the CPU, one sample at a time.
//
// The batch is cut into one slab of samples per thread. For each sample the
// thread builds that sample's columns [C * K, OH * OW] (im2col) in a buffer
// of its own and multiplies: out[n] [O, OH * OW] = weight [O, C * K] x
// columns, written straight into the NCHW output (no permuting copy) on top
// of the bias it was filled with. The backward rebuilds the columns instead
// of saving them: d weight += grad[n] x columns^T into the slab's partial sum,
// d columns = weight^T x grad[n], then col2im into d input[n]. An f32 patch
// of at most 12 taps (a first layer on grey images) takes its weight and
// bias gradients from small_patch_products.h instead.
//
// Why per sample: the whole-batch alternative (one [C * K, N * OH * OW]
// columns matrix and one GEMM) moved that matrix -- 29 MB for the example
// CNN's second layer at batch 128 -- through memory four times a step, plus
// two permuting copies; one sample's columns (226 KB there) stay in L2
// between im2col and the GEMMs that read them. The partial weight and bias
// gradients are summed in slab order, so results do not depend on which
// thread ran which slab.
//
// With fewer samples than threads (inference on one image) the samples run
// in turn and each GEMM is split across the threads instead.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "kindling/backend/cpu/blocked_copy.h"
#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/max_pool_2x2.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/small_patch_products.h"
#include "kindling/backend/cpu/window_plane.h"
#include "kindling/tensor/dtype_dispatch.h"

namespace kindling::cpu {
namespace {

// ConvDims: the sizes a convolution's loops need.
struct ConvDims {
  int64_t batch;
  int64_t channels;
  int64_t out_channels;
  int64_t area;  // KH * KW
  PlaneGeometry plane;

  int64_t patch() const { return channels * area; }                // C * K
  int64_t positions() const { return plane.out_h * plane.out_w; }  // L
};

ConvDims DimsOf(const Shape& input, const Shape& weight, const Shape& out) {
  return {input[0], input[1], weight[0], weight[2] * weight[3],
          PlaneGeometry{input[2], input[3], out[2], out[3]}};
}

// SampleColumns() writes sample n's columns [C * K, L], row-major.
template <class T>
void SampleColumns(const TensorBase& input, const ConvDims& d,
                   const Window2dGeometry& window, int64_t n, T* columns) {
  const Shape& is = input.strides();
  const T* sample = input.data_as<const T>() + n * is[0];
  const int64_t positions = d.positions();
  for (int64_t c = 0; c < d.channels; ++c) {
    Im2ColPlane(sample + c * is[1], is[2], is[3], d.plane, window, T(0),
                columns + c * d.area * positions,
                ColumnStrides{positions, d.plane.out_w, 1});
  }
}

// SlabCount() is how many slabs RunSlabs() cuts a batch into.
int64_t SlabCount(int64_t batch) {
  const int64_t threads = MaxThreads();
  return batch < threads ? 1 : threads;
}

// RunSlabs() calls body(slab, begin, end, split_gemms) for the samples
// [begin, end) of each slab, one slab per thread; split_gemms says that the
// body's GEMMs should be split across the threads (a single slab).
template <class Body>
void RunSlabs(int64_t batch, const Body& body) {
  const int64_t slabs = SlabCount(batch);
  if (slabs == 1) {
    body(0, 0, batch, MaxThreads() > 1);
    return;
  }
  ParallelSlabs(slabs, [&](int64_t slab) {
    body(slab, batch * slab / slabs, batch * (slab + 1) / slabs, false);
  });
}

template <class T>
void RunGemm(bool split, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
             int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
             int64_t ldb, T* c, int64_t ldc, GemmAccumulate accumulate) {
  if (split) {
    ParallelGemm<T>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  } else {
    Gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  }
}

// UsesSmallPatchProducts(): an f32 patch (C * KH * KW) small enough for
// small_patch_products.h to take the weight and bias gradients instead of a
// library GEMM per sample and a scalar sum. Measured on the example CNN's
// first layer (1 -> 32 channels, 3 x 3, 28 x 28, batch 128, no input
// gradient; AMD EPYC Zen 5, 2 threads, benches/conv_bench, alternating
// runs): 0.45 ms with eight lanes (0.33 ms with sixteen), against 1.39 ms
// with OpenBLAS's sgemm per sample (the 32 x 9 output is below oneDNN
// matmul's 16-wide minimum, see onednn_gemm.h) and 0.41 ms for oneDNN's
// whole convolution backward (KINDLING_ONEDNN=all). libxsmm is not
// in the build (Debian's 1.17 takes no transposed operand in the layout
// this product needs: docs/performance.md).
bool UsesSmallPatchProducts(int64_t patch) {
  return patch > 0 && patch <= kMaxSmallPatch;
}

// ConvolveSample() writes sample n's output y_n [O, L]: the bias, plus
// weight x the sample's columns.
template <class T>
void ConvolveSample(const TensorBase& input, const T* w, const T* b,
                    const ConvDims& d, const Window2dGeometry& window,
                    int64_t n, bool split, T* columns, T* y_n) {
  const int64_t patch = d.patch(), positions = d.positions();
  for (int64_t o = 0; o < d.out_channels; ++o) {
    std::fill(y_n + o * positions, y_n + (o + 1) * positions,
              b != nullptr ? b[o] : T(0));
  }
  if (patch == 0) return;
  SampleColumns(input, d, window, n, columns);
  RunGemm<T>(split, CblasNoTrans, CblasNoTrans, d.out_channels, positions,
             patch, w, patch, columns, positions, y_n, positions,
             GemmAccumulate::kAdd);
}

template <class T>
void Conv2dTyped(const TensorBase& out, const TensorBase& input,
                 const TensorBase& weight, const TensorBase& bias,
                 const Window2dGeometry& window) {
  const ConvDims d = DimsOf(input.shape(), weight.shape(), out.shape());
  const T* w = weight.data_as<const T>();
  const T* b = bias.defined() ? bias.data_as<const T>() : nullptr;
  T* y = out.data_as<T>();
  RunSlabs(d.batch, [&](int64_t, int64_t begin, int64_t end, bool split) {
    std::vector<T> columns(d.patch() * d.positions());
    for (int64_t n = begin; n < end; ++n) {
      ConvolveSample(input, w, b, d, window, n, split, columns.data(),
                     y + n * d.out_channels * d.positions());
    }
  });
}

// Conv2dGrads: the kernel's view of Conv2dBackward's operands.
template <class T>
struct Conv2dGrads {
  T* input;   // [N, C, H, W] or null
  T* weight;  // [O, C * K] or null
  T* bias;    // [O] or null
};

template <class T>
void SampleBackward(const TensorBase& input, const T* w, const T* g,
                    const ConvDims& d, const Window2dGeometry& window,
                    int64_t n, bool split, T* columns, T* column_grad,
                    T* weight_partial, T* bias_partial, T* input_grad) {
  const int64_t patch = d.patch(), positions = d.positions();
  if (weight_partial != nullptr && patch > 0) {
    SampleColumns(input, d, window, n, columns);
    RunGemm<T>(split, CblasNoTrans, CblasTrans, d.out_channels, patch,
               positions, g, positions, columns, positions, weight_partial,
               patch, GemmAccumulate::kAdd);
  }
  if (input_grad != nullptr && patch > 0) {
    RunGemm<T>(split, CblasTrans, CblasNoTrans, patch, positions,
               d.out_channels, w, patch, g, positions, column_grad, positions,
               GemmAccumulate::kOverwrite);
    const int64_t plane_size = d.plane.height * d.plane.width;
    for (int64_t c = 0; c < d.channels; ++c) {
      Col2ImPlane(column_grad + c * d.area * positions,
                  ColumnStrides{positions, d.plane.out_w, 1}, d.plane, window,
                  input_grad + (n * d.channels + c) * plane_size);
    }
  }
  if (bias_partial != nullptr) {
    for (int64_t o = 0; o < d.out_channels; ++o) {
      const T* row = g + o * positions;
      T sum = 0;
      for (int64_t l = 0; l < positions; ++l) sum += row[l];
      bias_partial[o] += sum;
    }
  }
}

// SmallPatchSlab() writes the weight and bias gradients (each null when not
// wanted) of samples [begin, end) through small_patch_products.h;
// sample_grad(n) is sample n's output gradient [O, L].
template <class SampleGrad>
void SmallPatchSlab(const TensorBase& input, const SampleGrad& sample_grad,
                    const ConvDims& d, const Window2dGeometry& window,
                    int64_t begin, int64_t end, float* columns,
                    float* weight_partial, float* bias_partial) {
  const int64_t patch = d.patch(), positions = d.positions();
  std::vector<float> weight_lanes(
      weight_partial != nullptr ? d.out_channels * patch * kGradientLanes : 0);
  std::vector<float> bias_lanes(
      bias_partial != nullptr ? d.out_channels * kGradientLanes : 0);
  const SmallPatchGradients lanes{
      weight_partial != nullptr ? weight_lanes.data() : nullptr,
      bias_partial != nullptr ? bias_lanes.data() : nullptr};
  if (lanes.weight_lanes == nullptr && lanes.bias_lanes == nullptr) return;
  for (int64_t n = begin; n < end; ++n) {
    if (weight_partial != nullptr) {
      SampleColumns(input, d, window, n, columns);
    }
    SmallPatchAccumulate(sample_grad(n), columns, d.out_channels, patch,
                         positions, lanes);
  }
  if (weight_partial != nullptr) {
    SumLanes(weight_lanes.data(), d.out_channels * patch, weight_partial);
  }
  if (bias_partial != nullptr) {
    SumLanes(bias_lanes.data(), d.out_channels, bias_partial);
  }
}

// SumSlabs() writes the sum of `slabs` consecutive partials of `size`
// elements, added in slab order, to `out`.
template <class T>
void SumSlabs(const std::vector<T>& partials, int64_t slabs, int64_t size,
              T* out) {
  std::copy(partials.begin(), partials.begin() + size, out);
  for (int64_t s = 1; s < slabs; ++s) {
    const T* partial = partials.data() + s * size;
    for (int64_t i = 0; i < size; ++i) out[i] += partial[i];
  }
}

// Partials: each slab's partial weight and bias gradients (where wanted),
// summed in slab order by Sum().
template <class T>
class Partials {
 public:
  Partials(const Conv2dGrads<T>& grads, const ConvDims& d)
      : grads_(grads),
        slabs_(SlabCount(d.batch)),
        weight_size_(d.out_channels * d.patch()),
        bias_size_(d.out_channels),
        weight_(grads.weight != nullptr ? slabs_ * weight_size_ : 0),
        bias_(grads.bias != nullptr ? slabs_ * bias_size_ : 0) {}

  // weight(slab) and bias(slab) are slab `slab`'s sums, or null.
  T* weight(int64_t slab) {
    return weight_.empty() ? nullptr : weight_.data() + slab * weight_size_;
  }
  T* bias(int64_t slab) {
    return bias_.empty() ? nullptr : bias_.data() + slab * bias_size_;
  }

  // Sum() writes the gradients.
  void Sum() const {
    if (grads_.weight != nullptr) {
      SumSlabs(weight_, slabs_, weight_size_, grads_.weight);
    }
    if (grads_.bias != nullptr) {
      SumSlabs(bias_, slabs_, bias_size_, grads_.bias);
    }
  }

 private:
  Conv2dGrads<T> grads_;
  int64_t slabs_, weight_size_, bias_size_;
  std::vector<T> weight_, bias_;
};

template <class T>
void Conv2dBackwardTyped(const Conv2dGrads<T>& grads, const TensorBase& grad,
                         const TensorBase& input, const TensorBase& weight,
                         const Shape& input_shape, const Shape& weight_shape,
                         const Window2dGeometry& window) {
  const ConvDims d = DimsOf(input_shape, weight_shape, grad.shape());
  const int64_t patch = d.patch(), positions = d.positions();
  Partials<T> partials(grads, d);
  const T* w = grads.input != nullptr ? weight.data_as<const T>() : nullptr;
  const T* g = grad.data_as<const T>();
  RunSlabs(d.batch, [&](int64_t slab, int64_t begin, int64_t end, bool split) {
    std::vector<T> columns(grads.weight != nullptr ? patch * positions : 0);
    std::vector<T> column_grad(grads.input != nullptr ? patch * positions : 0);
    T* weight_partial = partials.weight(slab);
    T* bias_partial = partials.bias(slab);
    if constexpr (std::is_same_v<T, float>) {
      if (UsesSmallPatchProducts(patch)) {
        SmallPatchSlab(
            input,
            [&](int64_t n) { return g + n * d.out_channels * positions; }, d,
            window, begin, end, columns.data(), weight_partial, bias_partial);
        // What is left is the input's gradient, through the GEMM.
        weight_partial = bias_partial = nullptr;
        if (grads.input == nullptr) return;
      }
    }
    for (int64_t n = begin; n < end; ++n) {
      SampleBackward(input, w, g + n * d.out_channels * positions, d, window, n,
                     split, columns.data(), column_grad.data(), weight_partial,
                     bias_partial, grads.input);
    }
  });
  partials.Sum();
}

// PooledDims() is the dims of the convolution of an input of `input_shape`
// with a weight of `weight_shape` over `conv`, where the pooled kernels
// below take it and its `pool`: an f32 patch small enough for
// small_patch_products.h (the layer Kindling's kernels run: one input
// channel), a 2x2 pool at stride 2 over an even output side (every cell
// under exactly one window) whose rows have at least `min_windows` windows
// (max_pool_2x2.h's row kernels); nothing otherwise.
std::optional<ConvDims> PooledDims(DType dtype, const Shape& input_shape,
                                   const Shape& weight_shape,
                                   const Window2dGeometry& conv,
                                   const Window2dGeometry& pool,
                                   int64_t min_windows) {
  const int64_t out_h = conv.OutputSize(0, input_shape[2]);
  const int64_t out_w = conv.OutputSize(1, input_shape[3]);
  const ConvDims d =
      DimsOf(input_shape, weight_shape,
             Shape{input_shape[0], weight_shape[0], out_h, out_w});
  const bool fits = dtype == DType::kF32 && UsesSmallPatchProducts(d.patch()) &&
                    FitsMaxPool2x2Row(pool, out_w) && out_h % 2 == 0 &&
                    out_w % 2 == 0 && out_h > 0 && out_w / 2 >= min_windows;
  if (!fits) return std::nullopt;
  return d;
}

// PoolSample() pools sample n's convolution output y_n [O, OH, OW] into
// out_n [O, OH / 2, OW / 2] (and its window codes codes_n, unless null).
void PoolSample(const float* y_n, const ConvDims& d, bool relu, float* out_n,
                uint8_t* codes_n) {
  const int64_t width = d.plane.out_w, out_w = width / 2;
  const int64_t out_plane = (d.plane.out_h / 2) * out_w;
  for (int64_t o = 0; o < d.out_channels; ++o) {
    const float* plane = y_n + o * d.positions();
    for (int64_t oh = 0; oh < d.plane.out_h / 2; ++oh) {
      const int64_t at = o * out_plane + oh * out_w;
      MaxPool2x2CodesRow(plane + 2 * oh * width, plane + (2 * oh + 1) * width,
                         out_w, relu, out_n + at,
                         codes_n != nullptr ? codes_n + at : nullptr);
    }
  }
}

// UnpoolSample() writes sample n's convolution output gradient g_n
// [O, OH, OW] from its pooled gradient and window codes [O, OH / 2, OW / 2].
void UnpoolSample(const float* grad_n, const uint8_t* codes_n,
                  const ConvDims& d, float* g_n) {
  const int64_t width = d.plane.out_w, out_w = width / 2;
  const int64_t out_plane = (d.plane.out_h / 2) * out_w;
  for (int64_t o = 0; o < d.out_channels; ++o) {
    float* plane = g_n + o * d.positions();
    for (int64_t oh = 0; oh < d.plane.out_h / 2; ++oh) {
      const int64_t at = o * out_plane + oh * out_w;
      MaxPool2x2BackwardCodesRow(grad_n + at, codes_n + at, out_w,
                                 plane + 2 * oh * width,
                                 plane + (2 * oh + 1) * width);
    }
  }
}

template <class T>
T* DataOrNull(const TensorBase& tensor) {
  return tensor.defined() ? tensor.data_as<T>() : nullptr;
}

}  // namespace

void Conv2dKernel(const TensorBase& out, const TensorBase& input,
                  const TensorBase& weight, const TensorBase& bias,
                  const Window2dGeometry& window) {
  UseSingleThreadedBlas();
  DispatchDType<kF32F64>(out.dtype(), "cpu conv2d", [&]<class T>() {
    Conv2dTyped<T>(out, input, weight, bias, window);
  });
}

void Conv2dBackwardKernel(const TensorBase& input_grad,
                          const TensorBase& weight_grad,
                          const TensorBase& bias_grad, const TensorBase& grad,
                          const TensorBase& input, const TensorBase& weight,
                          const Window2dGeometry& window) {
  UseSingleThreadedBlas();
  const Shape input_shape =
      input_grad.defined() ? input_grad.shape() : input.shape();
  const Shape weight_shape =
      weight_grad.defined() ? weight_grad.shape() : weight.shape();
  DispatchDType<kF32F64>(grad.dtype(), "cpu conv2d backward", [&]<class T>() {
    Conv2dBackwardTyped<T>(
        Conv2dGrads<T>{DataOrNull<T>(input_grad), DataOrNull<T>(weight_grad),
                       DataOrNull<T>(bias_grad)},
        grad, input, weight, input_shape, weight_shape, window);
  });
}

bool Conv2dMaxPoolKernel(const TensorBase& out, const TensorBase& argmax,
                         const TensorBase& input, const TensorBase& weight,
                         const TensorBase& bias, const Window2dGeometry& conv,
                         const Window2dGeometry& pool,
                         PoolActivation activation) {
  const std::optional<ConvDims> dims =
      PooledDims(out.dtype(), input.shape(), weight.shape(), conv, pool,
                 /*min_windows=*/1);
  if (!dims.has_value()) return false;
  const ConvDims& d = *dims;
  UseSingleThreadedBlas();
  const float* w = weight.data_as<const float>();
  const float* b = bias.defined() ? bias.data_as<const float>() : nullptr;
  const int64_t pooled = out.numel() / d.batch;
  // Where the next layer, a convolution, reads this output in a blocked
  // layout, each sample is written in that layout only (blocked_copy.h);
  // the NCHW bytes are written if anything else reads them.
  const int64_t block = BlockedOf(BlockedUse::kInput, out.shape());
  const bool write_blocked = block > 0 && d.out_channels % block == 0 &&
                             KeepsBlockedInputs() && CanLeaveUnwritten(out);
  std::shared_ptr<Storage> blocked =
      write_blocked ? NewBlockedCopy(out) : nullptr;
  float* blocked_out =
      blocked != nullptr ? static_cast<float*>(blocked->data()) : nullptr;
  RunSlabs(d.batch, [&](int64_t, int64_t begin, int64_t end, bool split) {
    // One sample's output at a time, pooled while it is in cache.
    std::vector<float> columns(d.patch() * d.positions());
    std::vector<float> y_n(d.out_channels * d.positions());
    std::vector<float> out_n(blocked_out != nullptr ? pooled : 0);
    for (int64_t n = begin; n < end; ++n) {
      ConvolveSample(input, w, b, d, conv, n, split, columns.data(),
                     y_n.data());
      PoolSample(
          y_n.data(), d, activation == PoolActivation::kRelu,
          blocked_out != nullptr ? out_n.data()
                                 : out.data_as<float>() + n * pooled,
          argmax.defined() ? argmax.data_as<uint8_t>() + n * pooled : nullptr);
      if (blocked_out != nullptr) {
        BlockSample(out_n.data(), d.out_channels, pooled / d.out_channels,
                    block, blocked_out + n * pooled);
      }
    }
  });
  if (blocked != nullptr) KeepBlockedCopyOnly(out, block, std::move(blocked));
  return true;
}

bool Conv2dMaxPoolBackwardKernel(
    const TensorBase& input_grad, const TensorBase& weight_grad,
    const TensorBase& bias_grad, const TensorBase& pooled_grad,
    const TensorBase& argmax, const TensorBase& input, const TensorBase& weight,
    const Window2dGeometry& conv, const Window2dGeometry& pool) {
  // A first layer's: the parameters' gradients only.
  if (input_grad.defined() || !weight_grad.defined()) return false;
  const std::optional<ConvDims> dims =
      PooledDims(pooled_grad.dtype(), input.shape(), weight_grad.shape(), conv,
                 pool, /*min_windows=*/kMinBackwardRowWindows);
  if (!dims.has_value()) return false;
  const ConvDims& d = *dims;
  Partials<float> partials(
      Conv2dGrads<float>{nullptr, weight_grad.data_as<float>(),
                         DataOrNull<float>(bias_grad)},
      d);
  const int64_t pooled = pooled_grad.numel() / d.batch;
  // Where the next layer left the pooled gradient in a blocked layout
  // (blocked_copy.h), each sample is read from there; the layer is told
  // that this one reads it so.
  const int64_t block = BlockedOf(BlockedUse::kInput, pooled_grad.shape());
  NoteBlocked(BlockedUse::kGradient, pooled_grad.shape(), block);
  const float* blocked = FindBlockedCopy(pooled_grad, block);
  // Read only without a blocked copy: reading them would write them.
  const float* grad =
      blocked != nullptr ? nullptr : pooled_grad.data_as<const float>();
  RunSlabs(d.batch, [&](int64_t slab, int64_t begin, int64_t end, bool) {
    // One sample's output gradient at a time, read while it is in cache.
    std::vector<float> columns(d.patch() * d.positions());
    std::vector<float> g_n(d.out_channels * d.positions());
    std::vector<float> grad_n(blocked != nullptr ? pooled : 0);
    SmallPatchSlab(
        input,
        [&](int64_t n) {
          if (blocked != nullptr) {
            UnblockSample(blocked + n * pooled, d.out_channels,
                          pooled / d.out_channels, block, grad_n.data());
          }
          UnpoolSample(blocked != nullptr ? grad_n.data() : grad + n * pooled,
                       argmax.data_as<const uint8_t>() + n * pooled, d,
                       g_n.data());
          return g_n.data();
        },
        d, conv, begin, end, columns.data(), partials.weight(slab),
        partials.bias(slab));
  });
  partials.Sum();
  return true;
}

}  // namespace kindling::cpu
