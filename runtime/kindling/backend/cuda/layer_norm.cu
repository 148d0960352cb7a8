// Layer normalization on CUDA (Backend::LayerNorm, LayerNormBackward).
//
// Shapes: x, y, dy, dx [R, D]; gamma, beta and their gradients [D], all of
// storage type T (f32, f64, f16, bf16); mean and rstd [R] of C =
// ComputeType<T> (float, or double for f64). Every tensor is contiguous.
// Arithmetic and the row sums run in C; rstd's square root in double.
//
// Forward, a row per warp when D <= kMaxWarpFeatures: each lane keeps its
// kPerLane elements (i = lane + 32 k) in registers across the three passes
// (mean, variance around the mean, output), so x is read from DRAM once and
// the sums are warp shuffles. Longer rows go to a block each (kRowThreads
// threads, element i on thread i % kRowThreads); the block keeps the row in
// dynamic shared memory when it fits (kCacheBytes), else re-reads it from
// global memory (then mostly from L2) in the later passes (f32 rows that
// fit and are 16-byte aligned are read as float4). Each thread only
// ever touches its own cache entries, so the cache needs no barrier; the
// block sums do.
//
// Backward dx mirrors the forward (a warp or a block per row): one pass
// for sum(g) and sum(g * xhat) (g = dy * gamma), one for dx, with xhat and g
// kept in registers or shared memory in between. dgamma and dbeta are
// column sums over rows without atomics: LayerNormParameterPartials gives
// each (32-column tile, row chunk) a block whose 8 row lanes sum strided
// rows, then adds the 8 lanes in order into a [chunks, D] partial;
// LayerNormParameterFinal adds the chunks in order. The chunking depends on R
// only, so results are the same on every run and GPU.
//
// Warp and block sums are butterflies (__shfl_xor_sync) and fixed-order
// shared-memory sums: every lane ends with the same bits, and no result
// depends on scheduling.
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "kindling/backend/cuda/block_reduce.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/tensor/dtype.h"

namespace kindling::cuda {
namespace {

// Rows of kWarp threads per block in the warp-per-row kernels.
constexpr int kWarpRows = 4;
// Rows up to this long go to a warp (kPerLane up to 32).
constexpr int64_t kMaxWarpFeatures = 32 * kWarp;
// Threads of the block-per-row kernels (BlockAllReduce's limits apply: a
// multiple of kWarp, at most kMaxBlockReduceThreads).
constexpr int kRowThreads = 256;
static_assert(kRowThreads % kWarp == 0 &&
              kRowThreads <= kMaxBlockReduceThreads);
// Dynamic shared memory a block-per-row kernel may use for its row cache:
// below the 48 KiB a launch gets without opting in, leaving room for the
// static scratch.
constexpr int64_t kCacheBytes = 46 * 1024;
// The parameter gradients' tiles: kWarp columns by kTileRows row lanes.
constexpr int kTileRows = 8;
// Row chunks of the parameter gradients: at least kMinChunkRows rows each,
// at most kMaxChunks chunks (gridDim.y).
constexpr int64_t kMinChunkRows = 32;
constexpr int64_t kMaxChunks = 128;

// InverseStd() is 1 / sqrt(variance + epsilon), taken in double.
template <class C>
__device__ inline C InverseStd(C variance, double epsilon) {
  return static_cast<C>(1.0 / sqrt(static_cast<double>(variance) + epsilon));
}

// Parameter(): gamma[i] or beta[i], or `fallback` (1 or 0) when the
// parameter is undefined (null).
template <class T>
__device__ inline ComputeType<T> Parameter(const T* parameter, int64_t i,
                                           ComputeType<T> fallback) {
  return parameter != nullptr ? ToCompute(parameter[i]) : fallback;
}

// --- Forward -----------------------------------------------------------------

// LayerNormWarpRows: a row per warp (threadIdx.y picks the warp's row),
// D <= kWarp * kPerLane, the row in registers.
template <class T, int kPerLane>
__global__ void __launch_bounds__(kWarp* kWarpRows)
    LayerNormWarpRows(const T* __restrict__ x, const T* __restrict__ gamma,
                      const T* __restrict__ beta, T* __restrict__ y,
                      ComputeType<T>* __restrict__ mean,
                      ComputeType<T>* __restrict__ rstd, int64_t rows, int d,
                      double epsilon) {
  using C = ComputeType<T>;
  const int lane = threadIdx.x;
  // The loop bound depends on threadIdx.y only: a warp's lanes run the same
  // iterations, as the full-mask shuffles need.
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRows + threadIdx.y;
       row < rows; row += static_cast<int64_t>(gridDim.x) * kWarpRows) {
    const T* x_row = x + row * d;
    C v[kPerLane];
    C sum = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + kWarp * k;
      v[k] = i < d ? ToCompute(x_row[i]) : C(0);
      sum += v[k];
    }
    const C mu = WarpAllReduce(sum, AddCombine{}) / static_cast<C>(d);
    C squares = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + kWarp * k;
      const C centered = i < d ? v[k] - mu : C(0);
      squares += centered * centered;
    }
    const C rs = InverseStd(
        WarpAllReduce(squares, AddCombine{}) / static_cast<C>(d), epsilon);
    T* y_row = y + row * d;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + kWarp * k;
      if (i < d) {
        y_row[i] = Convert<T>((v[k] - mu) * rs * Parameter(gamma, i, C(1)) +
                              Parameter(beta, i, C(0)));
      }
    }
    if (lane == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// LayerNormBlockRows: a row per block (grid-stride over rows), the row
// cached as C in dynamic shared memory when `cached` (d * sizeof(C) bytes
// given at launch).
template <class T>
__global__ void __launch_bounds__(kRowThreads)
    LayerNormBlockRows(const T* __restrict__ x, const T* __restrict__ gamma,
                       const T* __restrict__ beta, T* __restrict__ y,
                       ComputeType<T>* __restrict__ mean,
                       ComputeType<T>* __restrict__ rstd, int64_t rows,
                       int64_t d, double epsilon, bool cached) {
  using C = ComputeType<T>;
  // The row cache, sized at launch (bytes, as every kernel declares it).
  extern __shared__ __align__(16) unsigned char row_cache_bytes[];
  C* cache = reinterpret_cast<C*>(row_cache_bytes);
  __shared__ C scratch[kWarp];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x_row = x + row * d;
    C sum = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const C v = ToCompute(x_row[i]);
      if (cached) cache[i] = v;
      sum += v;
    }
    const C mu = BlockAllReduce(sum, scratch, AddCombine{}) / static_cast<C>(d);
    C squares = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const C centered = (cached ? cache[i] : ToCompute(x_row[i])) - mu;
      squares += centered * centered;
    }
    const C rs = InverseStd(
        BlockAllReduce(squares, scratch, AddCombine{}) / static_cast<C>(d),
        epsilon);
    T* y_row = y + row * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const C v = cached ? cache[i] : ToCompute(x_row[i]);
      y_row[i] = Convert<T>((v - mu) * rs * Parameter(gamma, i, C(1)) +
                            Parameter(beta, i, C(0)));
    }
    if (threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// --- Backward: the input's gradient ------------------------------------------

// LayerNormBackwardWarpRows: dx for a row per warp, xhat and g in
// registers.
template <class T, int kPerLane>
__global__ void __launch_bounds__(kWarp* kWarpRows)
    LayerNormBackwardWarpRows(const T* __restrict__ dy, const T* __restrict__ x,
                              const ComputeType<T>* __restrict__ mean,
                              const ComputeType<T>* __restrict__ rstd,
                              const T* __restrict__ gamma, T* __restrict__ dx,
                              int64_t rows, int d) {
  using C = ComputeType<T>;
  const int lane = threadIdx.x;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRows + threadIdx.y;
       row < rows; row += static_cast<int64_t>(gridDim.x) * kWarpRows) {
    const T* x_row = x + row * d;
    const T* dy_row = dy + row * d;
    const C mu = mean[row];
    const C rs = rstd[row];
    C xhat[kPerLane];
    C g[kPerLane];
    C sum_g = 0;
    C sum_g_xhat = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + kWarp * k;
      if (i < d) {
        xhat[k] = (ToCompute(x_row[i]) - mu) * rs;
        g[k] = ToCompute(dy_row[i]) * Parameter(gamma, i, C(1));
      } else {
        xhat[k] = 0;
        g[k] = 0;
      }
      sum_g += g[k];
      sum_g_xhat += g[k] * xhat[k];
    }
    const C mean_g = WarpAllReduce(sum_g, AddCombine{}) / static_cast<C>(d);
    const C mean_g_xhat =
        WarpAllReduce(sum_g_xhat, AddCombine{}) / static_cast<C>(d);
    T* dx_row = dx + row * d;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + kWarp * k;
      if (i < d) {
        dx_row[i] = Convert<T>(rs * (g[k] - mean_g - xhat[k] * mean_g_xhat));
      }
    }
  }
}

// LayerNormBlockRowsF32x4: LayerNormBlockRows for f32 rows that fit the
// cache, d a multiple of 4 and every pointer 16-byte aligned
// (Aligned16Rows): the row is read as float4 (element i on thread
// (i / 4) % kRowThreads), gamma and beta likewise. The scalar-load kernel
// reached 0.66x of a device-to-device memcpy on [8192, 4096] on an H100.
__global__ void __launch_bounds__(kRowThreads)
    LayerNormBlockRowsF32x4(const float* __restrict__ x,
                            const float* __restrict__ gamma,
                            const float* __restrict__ beta,
                            float* __restrict__ y, float* __restrict__ mean,
                            float* __restrict__ rstd, int64_t rows, int64_t d,
                            double epsilon) {
  extern __shared__ __align__(16) unsigned char row_cache_bytes[];
  float4* cache = reinterpret_cast<float4*>(row_cache_bytes);
  __shared__ float scratch[kWarp];
  const int64_t d4 = d / 4;
  const float4* gamma4 = reinterpret_cast<const float4*>(gamma);
  const float4* beta4 = reinterpret_cast<const float4*>(beta);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* x_row = reinterpret_cast<const float4*>(x + row * d);
    float sum = 0;
    for (int64_t i = threadIdx.x; i < d4; i += blockDim.x) {
      const float4 v = x_row[i];
      cache[i] = v;
      sum += (v.x + v.y) + (v.z + v.w);
    }
    const float mu =
        BlockAllReduce(sum, scratch, AddCombine{}) / static_cast<float>(d);
    float squares = 0;
    for (int64_t i = threadIdx.x; i < d4; i += blockDim.x) {
      const float4 v = cache[i];
      const float a = v.x - mu, b = v.y - mu, c = v.z - mu, e = v.w - mu;
      squares += (a * a + b * b) + (c * c + e * e);
    }
    const float rs = InverseStd(
        BlockAllReduce(squares, scratch, AddCombine{}) / static_cast<float>(d),
        epsilon);
    float4* y_row = reinterpret_cast<float4*>(y + row * d);
    for (int64_t i = threadIdx.x; i < d4; i += blockDim.x) {
      const float4 v = cache[i];
      const float4 g =
          gamma4 != nullptr ? gamma4[i] : make_float4(1.f, 1.f, 1.f, 1.f);
      const float4 b =
          beta4 != nullptr ? beta4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
      y_row[i] =
          make_float4((v.x - mu) * rs * g.x + b.x, (v.y - mu) * rs * g.y + b.y,
                      (v.z - mu) * rs * g.z + b.z, (v.w - mu) * rs * g.w + b.w);
    }
    if (threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// Aligned16Rows(): every pointer (null ones aside) 16-byte aligned and rows
// of a multiple of 4 floats, so each row starts aligned too.
bool Aligned16Rows(int64_t d, std::initializer_list<const void*> pointers) {
  if (d % 4 != 0) return false;
  for (const void* pointer : pointers) {
    if (reinterpret_cast<uintptr_t>(pointer) % 16 != 0) return false;
  }
  return true;
}

// LayerNormBackwardBlockRows: dx for a row per block; xhat and g cached in
// dynamic shared memory (2 * d * sizeof(C) bytes) when `cached`, else
// recomputed from global memory.
template <class T>
__global__ void __launch_bounds__(kRowThreads)
    LayerNormBackwardBlockRows(const T* __restrict__ dy,
                               const T* __restrict__ x,
                               const ComputeType<T>* __restrict__ mean,
                               const ComputeType<T>* __restrict__ rstd,
                               const T* __restrict__ gamma, T* __restrict__ dx,
                               int64_t rows, int64_t d, bool cached) {
  using C = ComputeType<T>;
  extern __shared__ __align__(16) unsigned char row_cache_bytes[];
  C* xhat_cache = reinterpret_cast<C*>(row_cache_bytes);
  C* g_cache = xhat_cache + (cached ? d : 0);
  __shared__ C scratch[kWarp];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x_row = x + row * d;
    const T* dy_row = dy + row * d;
    const C mu = mean[row];
    const C rs = rstd[row];
    C sum_g = 0;
    C sum_g_xhat = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const C xhat = (ToCompute(x_row[i]) - mu) * rs;
      const C g = ToCompute(dy_row[i]) * Parameter(gamma, i, C(1));
      if (cached) {
        xhat_cache[i] = xhat;
        g_cache[i] = g;
      }
      sum_g += g;
      sum_g_xhat += g * xhat;
    }
    const C mean_g =
        BlockAllReduce(sum_g, scratch, AddCombine{}) / static_cast<C>(d);
    const C mean_g_xhat =
        BlockAllReduce(sum_g_xhat, scratch, AddCombine{}) / static_cast<C>(d);
    T* dx_row = dx + row * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      C xhat, g;
      if (cached) {
        xhat = xhat_cache[i];
        g = g_cache[i];
      } else {
        xhat = (ToCompute(x_row[i]) - mu) * rs;
        g = ToCompute(dy_row[i]) * Parameter(gamma, i, C(1));
      }
      dx_row[i] = Convert<T>(rs * (g - mean_g - xhat * mean_g_xhat));
    }
  }
}

// --- Backward: gamma's and beta's gradients ----------------------------------

// LayerNormParameterPartials: block (kWarp, kTileRows) at grid (column
// tile, row chunk). Thread (tx, ty) sums column tile * kWarp + tx over rows
// begin + ty, begin + ty + kTileRows, ... of the chunk; the kTileRows lanes
// are then added in ty order into gamma_partial / beta_partial[chunk, col].
template <class T>
__global__ void __launch_bounds__(kWarp* kTileRows)
    LayerNormParameterPartials(const T* __restrict__ dy,
                               const T* __restrict__ x,
                               const ComputeType<T>* __restrict__ mean,
                               const ComputeType<T>* __restrict__ rstd,
                               int64_t rows, int64_t d, int64_t rows_per_chunk,
                               ComputeType<T>* __restrict__ gamma_partial,
                               ComputeType<T>* __restrict__ beta_partial) {
  using C = ComputeType<T>;
  // +1 column: the ty-order reads of one warp hit distinct banks.
  __shared__ C gamma_scratch[kTileRows][kWarp + 1];
  __shared__ C beta_scratch[kTileRows][kWarp + 1];
  const int64_t column = static_cast<int64_t>(blockIdx.x) * kWarp + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * rows_per_chunk;
  const int64_t end =
      begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  C sum_gamma = 0;
  C sum_beta = 0;
  if (column < d) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kTileRows) {
      const C g = ToCompute(dy[r * d + column]);
      const C xhat = (ToCompute(x[r * d + column]) - mean[r]) * rstd[r];
      sum_gamma += g * xhat;
      sum_beta += g;
    }
  }
  gamma_scratch[threadIdx.y][threadIdx.x] = sum_gamma;
  beta_scratch[threadIdx.y][threadIdx.x] = sum_beta;
  __syncthreads();
  if (threadIdx.y == 0 && column < d) {
    C total_gamma = 0;
    C total_beta = 0;
#pragma unroll
    for (int k = 0; k < kTileRows; ++k) {
      total_gamma += gamma_scratch[k][threadIdx.x];
      total_beta += beta_scratch[k][threadIdx.x];
    }
    gamma_partial[chunk * d + column] = total_gamma;
    beta_partial[chunk * d + column] = total_beta;
  }
}

// LayerNormParameterFinal: column j of each gradient is the sum of the
// chunks' partials in chunk order, in double. Either output may be null.
template <class T>
__global__ void LayerNormParameterFinal(
    const ComputeType<T>* __restrict__ gamma_partial,
    const ComputeType<T>* __restrict__ beta_partial, int64_t chunks, int64_t d,
    T* __restrict__ gamma_grad, T* __restrict__ beta_grad) {
  for (int64_t j = GlobalThread(); j < d; j += GridThreads()) {
    double total_gamma = 0;
    double total_beta = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      total_gamma += static_cast<double>(gamma_partial[c * d + j]);
      total_beta += static_cast<double>(beta_partial[c * d + j]);
    }
    if (gamma_grad != nullptr) gamma_grad[j] = Convert<T>(total_gamma);
    if (beta_grad != nullptr) beta_grad[j] = Convert<T>(total_beta);
  }
}

// --- Host side
// -----------------------------------------------------------------

// WarpRowBlocks() is the grid of a warp-per-row launch.
unsigned WarpRowBlocks(int64_t rows) {
  const int64_t needed = (rows + kWarpRows - 1) / kWarpRows;
  return static_cast<unsigned>(needed < kMaxGridBlocks ? needed
                                                       : kMaxGridBlocks);
}

// RowBlocks() is the grid of a block-per-row launch.
unsigned RowBlocks(int64_t rows) {
  return static_cast<unsigned>(rows < kMaxGridBlocks ? rows : kMaxGridBlocks);
}

// DispatchPerLane() calls f.template operator()<kPerLane>() with the
// smallest power of two kPerLane such that d <= kWarp * kPerLane
// (d <= kMaxWarpFeatures).
template <class F>
void DispatchPerLane(int64_t d, F&& f) {
  if (d <= kWarp) return f.template operator()<1>();
  if (d <= 2 * kWarp) return f.template operator()<2>();
  if (d <= 4 * kWarp) return f.template operator()<4>();
  if (d <= 8 * kWarp) return f.template operator()<8>();
  if (d <= 16 * kWarp) return f.template operator()<16>();
  return f.template operator()<32>();
}

// DataOrNull() is tensor's typed data, or null when it is undefined.
template <class T>
T* DataOrNull(const TensorBase& tensor) {
  return tensor.defined() ? tensor.data_as<T>() : nullptr;
}

// kComputeDType<C>: the DType of a compute type (the statistics' dtype).
template <class C>
constexpr DType kComputeDType =
    std::is_same_v<C, double> ? DType::kF64 : DType::kF32;

// CheckOperands() aborts unless every defined tensor of `operands` has
// input's dtype and is contiguous: the kernels read them all as T*.
void CheckOperands(const char* op, const TensorBase& input,
                   std::initializer_list<const TensorBase*> operands) {
  for (const TensorBase* operand : operands) {
    if (!operand->defined()) continue;
    KINDLING_CHECK(
        operand->dtype() == input.dtype() && operand->is_contiguous(),
        "cuda %s: operand %s must be contiguous and of input %s's dtype", op,
        operand->ToString(), input.ToString());
  }
}

}  // namespace

void LayerNormKernel(cudaStream_t stream, const TensorBase& out,
                     const TensorBase& mean, const TensorBase& rstd,
                     const TensorBase& input, const TensorBase& gamma,
                     const TensorBase& beta, double epsilon) {
  const int64_t rows = input.shape()[0];
  const int64_t d = input.shape()[1];
  if (rows == 0 || d == 0) return;
  CheckOperands("layer_norm", input, {&out, &input, &gamma, &beta});
  DispatchDType<kFloatingDTypes>(
      input.dtype(), "cuda layer_norm", [&]<class T>() {
        using C = ComputeType<T>;
        KINDLING_CHECK(mean.dtype() == kComputeDType<C> &&
                           rstd.dtype() == kComputeDType<C>,
                       "cuda layer_norm: statistics %s and %s for a %s input",
                       mean.ToString(), rstd.ToString(), input.ToString());
        const T* x = input.data_as<const T>();
        const T* gamma_data = DataOrNull<const T>(gamma);
        const T* beta_data = DataOrNull<const T>(beta);
        T* y = out.data_as<T>();
        C* means = mean.data_as<C>();
        C* rstds = rstd.data_as<C>();
        if (d <= kMaxWarpFeatures) {
          DispatchPerLane(d, [&]<int kPerLane>() {
            LayerNormWarpRows<T, kPerLane>
                <<<WarpRowBlocks(rows), dim3(kWarp, kWarpRows), 0, stream>>>(
                    x, gamma_data, beta_data, y, means, rstds, rows,
                    static_cast<int>(d), epsilon);
            KINDLING_CUDA_CHECK_LAUNCH("LayerNormWarpRows");
          });
        } else {
          const bool cached =
              d * static_cast<int64_t>(sizeof(C)) <= kCacheBytes;
          const size_t cache_bytes = cached ? d * sizeof(C) : 0;
          if constexpr (std::is_same_v<T, float>) {
            if (cached && Aligned16Rows(d, {x, gamma_data, beta_data, y})) {
              LayerNormBlockRowsF32x4<<<RowBlocks(rows), kRowThreads,
                                        cache_bytes, stream>>>(
                  x, gamma_data, beta_data, y, means, rstds, rows, d, epsilon);
              KINDLING_CUDA_CHECK_LAUNCH("LayerNormBlockRowsF32x4");
              return;
            }
          }
          LayerNormBlockRows<T>
              <<<RowBlocks(rows), kRowThreads, cache_bytes, stream>>>(
                  x, gamma_data, beta_data, y, means, rstds, rows, d, epsilon,
                  cached);
          KINDLING_CUDA_CHECK_LAUNCH("LayerNormBlockRows");
        }
      });
}

void LayerNormBackwardKernel(cudaStream_t stream, const TensorBase& input_grad,
                             const TensorBase& gamma_grad,
                             const TensorBase& beta_grad,
                             const TensorBase& grad, const TensorBase& input,
                             const TensorBase& mean, const TensorBase& rstd,
                             const TensorBase& gamma) {
  const int64_t rows = input.shape()[0];
  const int64_t d = input.shape()[1];
  if (rows == 0 || d == 0) return;
  CheckOperands("layer_norm backward", input,
                {&input_grad, &gamma_grad, &beta_grad, &grad, &input, &gamma});
  DispatchDType<kFloatingDTypes>(
      input.dtype(), "cuda layer_norm backward", [&]<class T>() {
        using C = ComputeType<T>;
        KINDLING_CHECK(
            mean.dtype() == kComputeDType<C> &&
                rstd.dtype() == kComputeDType<C>,
            "cuda layer_norm backward: statistics %s and %s for a %s "
            "input",
            mean.ToString(), rstd.ToString(), input.ToString());
        const T* dy = grad.data_as<const T>();
        const T* x = input.data_as<const T>();
        const C* means = mean.data_as<const C>();
        const C* rstds = rstd.data_as<const C>();
        if (input_grad.defined()) {
          const T* gamma_data = DataOrNull<const T>(gamma);
          T* dx = input_grad.data_as<T>();
          if (d <= kMaxWarpFeatures) {
            DispatchPerLane(d, [&]<int kPerLane>() {
              LayerNormBackwardWarpRows<T, kPerLane>
                  <<<WarpRowBlocks(rows), dim3(kWarp, kWarpRows), 0, stream>>>(
                      dy, x, means, rstds, gamma_data, dx, rows,
                      static_cast<int>(d));
              KINDLING_CUDA_CHECK_LAUNCH("LayerNormBackwardWarpRows");
            });
          } else {
            const bool cached =
                2 * d * static_cast<int64_t>(sizeof(C)) <= kCacheBytes;
            const size_t cache_bytes = cached ? 2 * d * sizeof(C) : 0;
            LayerNormBackwardBlockRows<T>
                <<<RowBlocks(rows), kRowThreads, cache_bytes, stream>>>(
                    dy, x, means, rstds, gamma_data, dx, rows, d, cached);
            KINDLING_CUDA_CHECK_LAUNCH("LayerNormBackwardBlockRows");
          }
        }
        if (!gamma_grad.defined() && !beta_grad.defined()) return;
        // The row chunks: a function of R only (see the file comment).
        int64_t chunks = (rows + kMinChunkRows - 1) / kMinChunkRows;
        if (chunks > kMaxChunks) chunks = kMaxChunks;
        const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
        chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
        // [2, chunks, D] partials from the device's caching allocator; freeing
        // it at return is safe, since its blocks are reused only by work queued
        // on this stream after these kernels.
        const TensorBase partials = TensorBase::Empty(
            Shape{2, chunks, d}, kComputeDType<C>, input.device());
        C* gamma_partial = partials.data_as<C>();
        C* beta_partial = gamma_partial + chunks * d;
        const dim3 tiles(static_cast<unsigned>((d + kWarp - 1) / kWarp),
                         static_cast<unsigned>(chunks));
        LayerNormParameterPartials<T>
            <<<tiles, dim3(kWarp, kTileRows), 0, stream>>>(
                dy, x, means, rstds, rows, d, rows_per_chunk, gamma_partial,
                beta_partial);
        KINDLING_CUDA_CHECK_LAUNCH("LayerNormParameterPartials");
        const LaunchGrid grid = GridFor(d);
        LayerNormParameterFinal<T>
            <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(
                gamma_partial, beta_partial, chunks, d,
                DataOrNull<T>(gamma_grad), DataOrNull<T>(beta_grad));
        KINDLING_CUDA_CHECK_LAUNCH("LayerNormParameterFinal");
      });
}

}  // namespace kindling::cuda
