// Index kernels on CUDA: index_select (embedding lookup), gather, and
// scatter_add (the gradient of both).
//
// Each is one element-wise launch over the output's shape (scatter_add:
// over src's) with three operands: the data tensor's strides with `axis`
// zeroed, so its offset points at the start of the line, plus the index
// tensor's offset; the index entry times the data's axis stride completes
// the address. Inputs may be any strided view, indices i64 or i32. Every
// kernel checks each index it uses (index_fault.h): an out-of-range one is
// recorded for the host to report at its next synchronization, and the
// kernel writes 0 (index_select, gather) or adds nothing (scatter_add)
// instead of touching memory out of bounds. Nothing here waits for the host.
// index_select and gather move elements by size, so they serve every dtype;
// scatter_add accumulates with atomicAdd (f32, f64), so repeated indices sum
// in an unspecified order (within rounding of the CPU's sequential sum).
#include <cstdint>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/index_fault.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"

namespace kindling::cuda {
namespace {

// OperandStrides: per-operand element strides over one shape.
template <int N>
struct OperandStrides {
  int64_t rows[N][kMaxCudaRank] = {};
};

template <int N>
StridedIndexer<N> IndexerFor(const Shape& shape,
                             const OperandStrides<N>& strides) {
  KINDLING_CHECK(shape.rank() <= kMaxCudaRank, "cuda: rank %d above %d",
                 shape.rank(), kMaxCudaRank);
  const int64_t* pointers[N];
  for (int k = 0; k < N; ++k) pointers[k] = strides.rows[k];
  return MakeStridedIndexer<N>(shape.rank(), shape.data(), pointers);
}

// Copies `tensor`'s strides into row `k`, with `axis` zeroed when asked.
template <int N>
void SetStrides(OperandStrides<N>& strides, int k, const TensorBase& tensor,
                int zero_axis) {
  for (int i = 0; i < tensor.rank(); ++i) {
    strides.rows[k][i] = i == zero_axis ? 0 : tensor.strides()[i];
  }
}

// Reports the first entry of index[o0] outside [0, bound).
template <class I>
struct CheckOp {
  const I* index;
  int64_t bound;
  IndexFaultSink sink;
  __device__ void operator()(const int64_t* offset) const {
    CheckedIndex(sink, static_cast<int64_t>(index[offset[0]]), bound);
  }
};

// DispatchIndex(): f<I>() for the index's integer type, i64 or i32.
template <class F>
void DispatchIndex(const TensorBase& index, const char* op, F&& f) {
  if (index.dtype() == DType::kI64) return f.template operator()<int64_t>();
  KINDLING_CHECK(index.dtype() == DType::kI32,
                 "cuda %s: index dtype %s (i64 or i32 expected)", op,
                 std::string(DTypeName(index.dtype())));
  f.template operator()<int32_t>();
}

// out[o0] = in[o1 + index[o2] * axis_stride], 0 for an index outside
// [0, bound).
template <class U, class I>
struct PickOp {
  U* out;
  const U* in;
  const I* index;
  int64_t axis_stride;
  int64_t bound;
  IndexFaultSink sink;
  __device__ void operator()(const int64_t* offset) const {
    const int64_t entry =
        CheckedIndex(sink, static_cast<int64_t>(index[offset[2]]), bound);
    out[offset[0]] = entry < 0 ? U{0} : in[offset[1] + entry * axis_stride];
  }
};

void Pick(cudaStream_t stream, const StridedIndexer<3>& indexer,
          const TensorBase& out, const TensorBase& in, const TensorBase& index,
          int axis, const IndexFaultSink& sink) {
  DispatchIndex(index, sink.op, [&]<class I>() {
    DispatchBySize(out.element_size(), [&]<class U>() {
      LaunchStrided("PickOp", stream, indexer,
                    PickOp<U, I>{out.data_as<U>(), in.data_as<const U>(),
                                 index.data_as<const I>(), in.strides()[axis],
                                 in.shape()[axis], sink});
    });
  });
}

}  // namespace

void CheckIndicesKernel(cudaStream_t stream, const TensorBase& index,
                        int64_t bound, const IndexFaultSink& sink) {
  DispatchIndex(index, sink.op, [&]<class I>() {
    LaunchStrided("CheckOp", stream, IndexerOf<1>({&index}),
                  CheckOp<I>{index.data_as<const I>(), bound, sink});
  });
}

void IndexSelectKernel(cudaStream_t stream, const TensorBase& out,
                       const TensorBase& in, int axis, const TensorBase& index,
                       const IndexFaultSink& sink) {
  OperandStrides<3> strides;
  SetStrides(strides, 0, out, -1);
  SetStrides(strides, 1, in, axis);
  strides.rows[2][axis] = index.strides()[0];  // 1-D index along `axis`
  Pick(stream, IndexerFor(out.shape(), strides), out, in, index, axis, sink);
}

void GatherKernel(cudaStream_t stream, const TensorBase& out,
                  const TensorBase& in, int axis, const TensorBase& index,
                  const IndexFaultSink& sink) {
  OperandStrides<3> strides;
  SetStrides(strides, 0, out, -1);
  SetStrides(strides, 1, in, axis);
  SetStrides(strides, 2, index, -1);
  Pick(stream, IndexerFor(out.shape(), strides), out, in, index, axis, sink);
}

namespace {

// out[o2 + index[o1] * axis_stride] += src[o0]; nothing for an index
// outside [0, bound).
template <class T, class I>
struct ScatterAddOp {
  T* out;
  const T* src;
  const I* index;
  int64_t axis_stride;
  int64_t bound;
  IndexFaultSink sink;
  __device__ void operator()(const int64_t* offset) const {
    const int64_t entry =
        CheckedIndex(sink, static_cast<int64_t>(index[offset[1]]), bound);
    if (entry >= 0) {
      atomicAdd(out + offset[2] + entry * axis_stride, src[offset[0]]);
    }
  }
};

template <class T>
void LaunchScatterAdd(cudaStream_t stream, const StridedIndexer<3>& indexer,
                      const TensorBase& out, int axis, const TensorBase& index,
                      const TensorBase& src, const IndexFaultSink& sink) {
  DispatchIndex(index, sink.op, [&]<class I>() {
    LaunchStrided(
        "ScatterAddOp", stream, indexer,
        ScatterAddOp<T, I>{out.data_as<T>(), src.data_as<const T>(),
                           index.data_as<const I>(), out.strides()[axis],
                           out.shape()[axis], sink});
  });
}

}  // namespace

void ScatterAddKernel(cudaStream_t stream, const TensorBase& out, int axis,
                      const TensorBase& index, const TensorBase& src,
                      const IndexFaultSink& sink) {
  OperandStrides<3> strides;
  SetStrides(strides, 0, src, -1);
  SetStrides(strides, 1, index, -1);
  SetStrides(strides, 2, out, axis);
  const StridedIndexer<3> indexer = IndexerFor(src.shape(), strides);
  DispatchDType<kF32F64>(out.dtype(), "cuda scatter_add", [&]<class T>() {
    LaunchScatterAdd<T>(stream, indexer, out, axis, index, src, sink);
  });
}

}  // namespace kindling::cuda
