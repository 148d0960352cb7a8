// The free functions and operators over Tensor<D, K>: binary element-wise
// ops and comparisons (NumPy broadcasting), where(), matmul(), and the
// indexing ops (cat, stack, index_select, gather, one_hot).
//
// They are free functions rather than members because their operands are
// symmetric and of different ranks; the result rank is computed at compile
// time (BroadcastRank). Include "kindling/tensor/tensor.h" rather than this
// header.
#ifndef KINDLING_TENSOR_TENSOR_FUNCTIONS_H_
#define KINDLING_TENSOR_TENSOR_FUNCTIONS_H_

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "kindling/tensor/backend.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor_base.h"
#include "kindling/tensor/tensor_class.h"

namespace kindling {

// --- Binary element-wise ops (NumPy broadcasting) ----------------------------

// BroadcastRank is the rank of a broadcast result.
template <int D1, int D2>
inline constexpr int BroadcastRank = D1 > D2 ? D1 : D2;

#define KINDLING_TENSOR_BINARY_OP(name, op_enum, requirement)        \
  template <int D1, int D2, TensorKind K>                            \
  requires(requirement) Tensor<BroadcastRank<D1, D2>, K> name(       \
      const Tensor<D1, K>& lhs, const Tensor<D2, K>& rhs) {          \
    return Tensor<BroadcastRank<D1, D2>, K>(                         \
        ops::Binary(BinaryOp::op_enum, lhs.base(), rhs.base()));     \
  }                                                                  \
  template <int D, TensorKind K>                                     \
  requires(requirement) Tensor<D, K> name(const Tensor<D, K>& lhs,   \
                                          double rhs) {              \
    return Tensor<D, K>(                                             \
        ops::BinaryScalar(BinaryOp::op_enum, lhs.base(), rhs));      \
  }                                                                  \
  template <int D, TensorKind K>                                     \
  requires(requirement) Tensor<D, K> name(double lhs,                \
                                          const Tensor<D, K>& rhs) { \
    return Tensor<D, K>(                                             \
        ops::ScalarBinary(BinaryOp::op_enum, lhs, rhs.base()));      \
  }

#define KINDLING_NOT_BOOL (!std::is_same_v<K, Bool>)
KINDLING_TENSOR_BINARY_OP(add, kAdd, KINDLING_NOT_BOOL)
KINDLING_TENSOR_BINARY_OP(sub, kSub, KINDLING_NOT_BOOL)
KINDLING_TENSOR_BINARY_OP(mul, kMul, KINDLING_NOT_BOOL)
KINDLING_TENSOR_BINARY_OP(div, kDiv, KINDLING_NOT_BOOL)
KINDLING_TENSOR_BINARY_OP(pow, kPow, KINDLING_NOT_BOOL)
KINDLING_TENSOR_BINARY_OP(maximum, kMaximum, KINDLING_NOT_BOOL)
KINDLING_TENSOR_BINARY_OP(minimum, kMinimum, KINDLING_NOT_BOOL)
#undef KINDLING_NOT_BOOL
#undef KINDLING_TENSOR_BINARY_OP

// Comparisons give Bool masks of the broadcast shape.
#define KINDLING_TENSOR_COMPARISON(name, op_enum)                      \
  template <int D1, int D2, TensorKind K>                              \
  Tensor<BroadcastRank<D1, D2>, Bool> name(const Tensor<D1, K>& lhs,   \
                                           const Tensor<D2, K>& rhs) { \
    return Tensor<BroadcastRank<D1, D2>, Bool>(                        \
        ops::Binary(BinaryOp::op_enum, lhs.base(), rhs.base()));       \
  }
KINDLING_TENSOR_COMPARISON(equal, kEqual)
KINDLING_TENSOR_COMPARISON(not_equal, kNotEqual)
KINDLING_TENSOR_COMPARISON(less, kLess)
KINDLING_TENSOR_COMPARISON(less_equal, kLessEqual)
KINDLING_TENSOR_COMPARISON(greater, kGreater)
KINDLING_TENSOR_COMPARISON(greater_equal, kGreaterEqual)
#undef KINDLING_TENSOR_COMPARISON

template <int D1, int D2>
Tensor<BroadcastRank<D1, D2>, Bool> logical_and(const Tensor<D1, Bool>& lhs,
                                                const Tensor<D2, Bool>& rhs) {
  return Tensor<BroadcastRank<D1, D2>, Bool>(
      ops::Binary(BinaryOp::kLogicalAnd, lhs.base(), rhs.base()));
}
template <int D1, int D2>
Tensor<BroadcastRank<D1, D2>, Bool> logical_or(const Tensor<D1, Bool>& lhs,
                                               const Tensor<D2, Bool>& rhs) {
  return Tensor<BroadcastRank<D1, D2>, Bool>(
      ops::Binary(BinaryOp::kLogicalOr, lhs.base(), rhs.base()));
}

// Arithmetic operators forward to the functions above.
template <int D1, int D2, TensorKind K>
auto operator+(const Tensor<D1, K>& lhs, const Tensor<D2, K>& rhs) {
  return add(lhs, rhs);
}
template <int D1, int D2, TensorKind K>
auto operator-(const Tensor<D1, K>& lhs, const Tensor<D2, K>& rhs) {
  return sub(lhs, rhs);
}
template <int D1, int D2, TensorKind K>
auto operator*(const Tensor<D1, K>& lhs, const Tensor<D2, K>& rhs) {
  return mul(lhs, rhs);
}
template <int D1, int D2, TensorKind K>
auto operator/(const Tensor<D1, K>& lhs, const Tensor<D2, K>& rhs) {
  return div(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator+(const Tensor<D, K>& lhs, double rhs) {
  return add(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator-(const Tensor<D, K>& lhs, double rhs) {
  return sub(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator*(const Tensor<D, K>& lhs, double rhs) {
  return mul(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator/(const Tensor<D, K>& lhs, double rhs) {
  return div(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator+(double lhs, const Tensor<D, K>& rhs) {
  return add(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator-(double lhs, const Tensor<D, K>& rhs) {
  return sub(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator*(double lhs, const Tensor<D, K>& rhs) {
  return mul(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator/(double lhs, const Tensor<D, K>& rhs) {
  return div(lhs, rhs);
}
template <int D, TensorKind K>
Tensor<D, K> operator-(const Tensor<D, K>& tensor) {
  return tensor.neg();
}

// where() picks on_true where `condition` holds, else on_false (broadcast).
template <int DC, int D1, int D2, TensorKind K>
Tensor<BroadcastRank<DC, BroadcastRank<D1, D2>>, K> where(
    const Tensor<DC, Bool>& condition, const Tensor<D1, K>& on_true,
    const Tensor<D2, K>& on_false) {
  return Tensor<BroadcastRank<DC, BroadcastRank<D1, D2>>, K>(
      ops::Where(condition.base(), on_true.base(), on_false.base()));
}

// --- Linear algebra and indexing ---------------------------------------------

// matmul(): [.., M, K] x [.., K, N] -> [.., M, N] through BLAS for f32/f64;
// batch dimensions broadcast.
template <int D1, int D2, TensorKind K>
requires(D1 >= 2 && D2 >= 2 && !std::is_same_v<K, Bool>)
    Tensor<BroadcastRank<D1, D2>, K> matmul(const Tensor<D1, K>& lhs,
                                            const Tensor<D2, K>& rhs) {
  return Tensor<BroadcastRank<D1, D2>, K>(ops::Matmul(lhs.base(), rhs.base()));
}

// matmul_bias(): matmul(input, weight) + bias as one op, the fully connected
// layer (linalg_ops.h): [.., K] x [K, N] + [N] -> [.., N].
template <int D, TensorKind K>
requires(D >= 2 && !std::is_same_v<K, Bool>) Tensor<D, K> matmul_bias(
    const Tensor<D, K>& input, const Tensor<2, K>& weight,
    const Tensor<1, K>& bias) {
  return Tensor<D, K>(
      ops::MatmulBias(input.base(), weight.base(), bias.base()));
}

// matmul_bias_relu(): relu(matmul(input, weight) + bias) as one op, a fully
// connected layer and its ReLU (linalg_ops.h; the gradient through a NaN sum
// is 0 where relu's passes it): [.., K] x [K, N] + [N] -> [.., N].
template <int D, TensorKind K>
requires(D >= 2 && !std::is_same_v<K, Bool>) Tensor<D, K> matmul_bias_relu(
    const Tensor<D, K>& input, const Tensor<2, K>& weight,
    const Tensor<1, K>& bias) {
  return Tensor<D, K>(ops::MatmulBias(input.base(), weight.base(), bias.base(),
                                      ProductActivation::kRelu));
}

// cat() joins along an existing axis; stack() along a new one.
template <int D, TensorKind K>
Tensor<D, K> cat(std::span<const Tensor<D, K>> tensors, int axis) {
  std::vector<TensorBase> bases;
  bases.reserve(tensors.size());
  for (const auto& tensor : tensors) bases.push_back(tensor.base());
  return Tensor<D, K>(ops::Cat(bases, axis));
}
template <int D, TensorKind K>
Tensor<D, K> cat(const std::vector<Tensor<D, K>>& tensors, int axis) {
  return cat(std::span<const Tensor<D, K>>(tensors), axis);
}
template <int D, TensorKind K>
Tensor<D + 1, K> stack(std::span<const Tensor<D, K>> tensors, int axis) {
  std::vector<TensorBase> bases;
  bases.reserve(tensors.size());
  for (const auto& tensor : tensors) bases.push_back(tensor.base());
  return Tensor<D + 1, K>(ops::Stack(bases, axis));
}
template <int D, TensorKind K>
Tensor<D + 1, K> stack(const std::vector<Tensor<D, K>>& tensors, int axis) {
  return stack(std::span<const Tensor<D, K>>(tensors), axis);
}

// index_select() picks rows of `axis` (an embedding lookup is
// index_select(table, 0, ids)).
template <int D, TensorKind K>
Tensor<D, K> index_select(const Tensor<D, K>& in, int axis,
                          const Tensor<1, Int>& index) {
  return Tensor<D, K>(ops::IndexSelect(in.base(), axis, index.base()));
}

// gather(): out[.., i, ..] = in[.., index[.., i, ..], ..] along `axis`.
template <int D, TensorKind K>
Tensor<D, K> gather(const Tensor<D, K>& in, int axis,
                    const Tensor<D, Int>& index) {
  return Tensor<D, K>(ops::Gather(in.base(), axis, index.base()));
}

// one_hot() appends an axis of `num_classes` with 1 at each index.
template <TensorKind K = Float, int D>
Tensor<D + 1, K> one_hot(const Tensor<D, Int>& index, int64_t num_classes,
                         DType dtype = K::kDefaultDType) {
  return Tensor<D + 1, K>(ops::OneHot(index.base(), num_classes, dtype));
}

}  // namespace kindling

#endif  // KINDLING_TENSOR_TENSOR_FUNCTIONS_H_
