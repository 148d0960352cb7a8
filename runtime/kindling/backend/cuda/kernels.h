// The CUDA kernels behind CudaBackend, one host function per Backend method
// (contracts in kindling/tensor/backend.h). Each enqueues its work on
// `stream` and returns without synchronizing, except AbsPowerSum, which
// returns a host value. The caller (cuda_backend.cc) has made the tensors'
// device current, `stream` is its current stream, and the caller has
// recorded every tensor argument's block as used on `stream`
// (CudaAllocator::RecordStream). A kernel's own scratch tensors come from the
// current stream, so they need no record.
#ifndef KINDLING_BACKEND_CUDA_KERNELS_H_
#define KINDLING_BACKEND_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <array>
#include <cstdint>

#include "kindling/backend/cuda/index_fault.h"
#include "kindling/backend/cuda/strided_index.h"
#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cuda {

// IndexerOf() describes N tensors of operands[0]'s shape by element strides.
template <int N>
StridedIndexer<N> IndexerOf(const std::array<const TensorBase*, N>& operands) {
  const Shape& shape = operands[0]->shape();
  KINDLING_CHECK(shape.rank() <= kMaxCudaRank, "cuda: rank %d above %d",
                 shape.rank(), kMaxCudaRank);
  int64_t dims[kMaxCudaRank];
  int64_t stride_rows[N][kMaxCudaRank];
  const int64_t* stride_pointers[N];
  for (int axis = 0; axis < shape.rank(); ++axis) dims[axis] = shape[axis];
  for (int k = 0; k < N; ++k) {
    for (int axis = 0; axis < shape.rank(); ++axis) {
      stride_rows[k][axis] = operands[k]->strides()[axis];
    }
    stride_pointers[k] = stride_rows[k];
  }
  return MakeStridedIndexer<N>(shape.rank(), dims, stride_pointers);
}

// elementwise.cu
void CopyKernel(cudaStream_t stream, const TensorBase& out,
                const TensorBase& in);
void FillKernel(cudaStream_t stream, const TensorBase& out, double value);
void UnaryKernel(cudaStream_t stream, UnaryOp op, const TensorBase& out,
                 const TensorBase& in, double arg0, double arg1);
void BinaryKernel(cudaStream_t stream, BinaryOp op, const TensorBase& out,
                  const TensorBase& lhs, const TensorBase& rhs);
void BinaryScalarKernel(cudaStream_t stream, BinaryOp op, const TensorBase& out,
                        const TensorBase& tensor, double scalar,
                        bool scalar_is_lhs);
void WhereKernel(cudaStream_t stream, const TensorBase& out,
                 const TensorBase& condition, const TensorBase& on_true,
                 const TensorBase& on_false);

// reduce.cu
void ReduceKernel(cudaStream_t stream, ReduceOp op, const TensorBase& out,
                  const TensorBase& in, int axis);

// softmax.cu
void SoftmaxKernel(cudaStream_t stream, const TensorBase& out,
                   const TensorBase& in, int axis, bool log);

// matmul.cc (cuBLAS) and matmul_int.cu (integer dtypes).
void MatmulKernel(int device_index, cudaStream_t stream, const TensorBase& out,
                  const TensorBase& lhs, const TensorBase& rhs);
void IntegerMatmulKernel(cudaStream_t stream, const TensorBase& out,
                         const TensorBase& lhs, const TensorBase& rhs);

// index.cu: `sink` receives out-of-range indices (index_fault.h).
void CheckIndicesKernel(cudaStream_t stream, const TensorBase& index,
                        int64_t bound, const IndexFaultSink& sink);
void IndexSelectKernel(cudaStream_t stream, const TensorBase& out,
                       const TensorBase& in, int axis, const TensorBase& index,
                       const IndexFaultSink& sink);
void GatherKernel(cudaStream_t stream, const TensorBase& out,
                  const TensorBase& in, int axis, const TensorBase& index,
                  const IndexFaultSink& sink);
void ScatterAddKernel(cudaStream_t stream, const TensorBase& out, int axis,
                      const TensorBase& index, const TensorBase& src,
                      const IndexFaultSink& sink);

// window.cu (Conv2d's im2col / col2im, max pooling and its backward).
void Im2ColKernel(cudaStream_t stream, const TensorBase& columns,
                  const TensorBase& input, const Window2dGeometry& window,
                  double pad_value);
void Col2ImKernel(cudaStream_t stream, const TensorBase& input_grad,
                  const TensorBase& columns, const Window2dGeometry& window);
void MaxPool2dKernel(cudaStream_t stream, const TensorBase& out,
                     const TensorBase& argmax, const TensorBase& input,
                     const Window2dGeometry& window, PoolActivation activation);
void MaxPool2dBackwardKernel(cudaStream_t stream, const TensorBase& input_grad,
                             const TensorBase& grad, const TensorBase& argmax,
                             const Window2dGeometry& window);

// layer_norm.cu
void LayerNormKernel(cudaStream_t stream, const TensorBase& out,
                     const TensorBase& mean, const TensorBase& rstd,
                     const TensorBase& input, const TensorBase& gamma,
                     const TensorBase& beta, double epsilon);
void LayerNormBackwardKernel(cudaStream_t stream, const TensorBase& input_grad,
                             const TensorBase& gamma_grad,
                             const TensorBase& beta_grad,
                             const TensorBase& grad, const TensorBase& input,
                             const TensorBase& mean, const TensorBase& rstd,
                             const TensorBase& gamma);

// random.cu
void FillRandomKernel(cudaStream_t stream, const TensorBase& out,
                      RandomDistribution distribution, uint64_t seed,
                      uint64_t offset, double a, double b);
void DropoutKernel(cudaStream_t stream, const TensorBase& out,
                   const TensorBase& in, double prob, uint64_t seed,
                   uint64_t offset);

// clip.cu
double AbsPowerSumKernel(cudaStream_t stream, const TensorBase& in, double p);
void ScaleClampKernel(cudaStream_t stream, const TensorBase& inout,
                      double scale, double max_abs);

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_KERNELS_H_
