// Tensor<D, K>: an n-dimensional array with static rank D and kind K.
//
// A Tensor is a cheap refcounted handle: copying one, or taking a view
// (reshape, transpose, slice, expand, ...), shares the storage and copies no
// elements. Rank and kind (Float, Int, Bool) are part of the type, so mixing
// them up is a compile error; the exact element format (f32, bf16, i32, ...)
// is a run-time DType. Shape errors the type cannot catch abort with a message
// naming the op and both shapes.
//
//   using kindling::Tensor;
//   kindling::Generator generator(/*seed=*/7);
//   Tensor<2> x = Tensor<2>::RandomNormal({4, 3}, generator);
//   Tensor<2> w = Tensor<2>::Ones({3, 2});
//   Tensor<1> b = Tensor<1>::FromData<float>({0.5f, -0.5f}, {2});
//   Tensor<2> y = (matmul(x, w) + b).relu();       // b broadcasts over rows
//   Tensor<2, kindling::Int> labels = y.argmax(1);  // [4, 1]
//   std::vector<float> values = y.to_data<float>();
//
// Tensor satisfies kindling::Parameter, so modules hold weights as
// Param<Tensor<2>>. A tensor that requires grad records the ops applied to it
// (the graph hangs off the results); kindling::Backward()
// (kindling/autodiff/backward.h) returns the gradients keyed by ParamId.
//
// Element-wise ops broadcast like NumPy: shapes align at the right, size-1
// dimensions stretch, and the result rank is the larger of the two ranks.
// Reductions along an axis keep it with size 1 (sum_dim(1) of [4, 3] is
// [4, 1]); whole-tensor reductions return a rank-0 Tensor<0>.
//
// This header is the one to include. The class itself is in tensor_class.h;
// the free functions and operators (add, matmul, cat, where, ...) are in
// tensor_functions.h.
//
// Thread safety: const members may be called concurrently; in-place members
// (add_, fill_, ...) write shared storage and must not race with readers.
#ifndef KINDLING_TENSOR_TENSOR_H_
#define KINDLING_TENSOR_TENSOR_H_

#include "kindling/tensor/tensor_class.h"      // IWYU pragma: export
#include "kindling/tensor/tensor_functions.h"  // IWYU pragma: export

#endif  // KINDLING_TENSOR_TENSOR_H_
