#include "kindling/tensor/linalg_ops.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/op_checks.h"

namespace kindling::ops {

using internal::CheckDefined;
using internal::CheckSameDevice;
using internal::ComputeDTypeOn;

namespace {

// The gradients of Matmul, defined right under it.
TensorBase MatmulGradLhs(const TensorBase& grad, const TensorBase& a,
                         const TensorBase& b);
TensorBase MatmulGradRhs(const TensorBase& grad, const TensorBase& a,
                         const TensorBase& b);

}  // namespace

TensorBase Matmul(const TensorBase& lhs, const TensorBase& rhs) {
  CheckDefined(lhs, "matmul");
  CheckDefined(rhs, "matmul");
  CheckSameDevice(lhs, rhs, "matmul");
  KINDLING_CHECK(lhs.rank() >= 2 && rhs.rank() >= 2,
                 "matmul: needs rank >= 2, got shapes %s and %s",
                 lhs.shape().ToString(), rhs.shape().ToString());
  KINDLING_CHECK(lhs.dtype() == rhs.dtype(),
                 "matmul: dtypes differ, %s%s vs %s%s",
                 std::string(DTypeName(lhs.dtype())), lhs.shape().ToString(),
                 std::string(DTypeName(rhs.dtype())), rhs.shape().ToString());
  KINDLING_CHECK(lhs.dtype() != DType::kBool, "matmul: bool tensors %s and %s",
                 lhs.shape().ToString(), rhs.shape().ToString());
  const int64_t m = lhs.shape()[lhs.rank() - 2];
  const int64_t k = lhs.shape()[lhs.rank() - 1];
  const int64_t k2 = rhs.shape()[rhs.rank() - 2];
  const int64_t n = rhs.shape()[rhs.rank() - 1];
  KINDLING_CHECK(k == k2, "matmul: inner dimensions differ, shapes %s and %s",
                 lhs.shape().ToString(), rhs.shape().ToString());
  const Shape lhs_batch(lhs.shape().dims().first(lhs.rank() - 2));
  const Shape rhs_batch(rhs.shape().dims().first(rhs.rank() - 2));
  Shape batch;
  KINDLING_CHECK(BroadcastShapes(lhs_batch, rhs_batch, &batch),
                 "matmul: batch dimensions of shapes %s and %s cannot be "
                 "broadcast",
                 lhs.shape().ToString(), rhs.shape().ToString());
  Shape lhs_shape = batch, rhs_shape = batch, out_shape = batch;
  lhs_shape.push_back(m);
  lhs_shape.push_back(k);
  rhs_shape.push_back(k);
  rhs_shape.push_back(n);
  out_shape.push_back(m);
  out_shape.push_back(n);
  const auto forward = [&] {
    const DType compute = ComputeDTypeOn(lhs.dtype(), lhs.device());
    TensorBase result = TensorBase::Empty(out_shape, compute, lhs.device());
    if (result.numel() == 0) return result.To(lhs.dtype());
    if (k == 0) {
      GetBackend(lhs.device()).Fill(result, 0.0);
    } else {
      GetBackend(lhs.device())
          .Matmul(result, lhs.To(compute).Expand(lhs_shape),
                  rhs.To(compute).Expand(rhs_shape));
    }
    return result.To(lhs.dtype());
  };
  if (!autodiff::ShouldRecord(lhs, rhs)) return forward();
  TensorBase out = autodiff::Untracked(forward);
  return autodiff::Record(
      "matmul", {lhs, rhs}, std::move(out),
      [a = SavedTensor(lhs), b = SavedTensor(rhs),
       need_a = lhs.is_require_grad(),
       need_b = rhs.is_require_grad()](const TensorBase& grad) -> GradList {
        return {need_a ? MatmulGradLhs(grad, a, b) : TensorBase(),
                need_b ? MatmulGradRhs(grad, a, b) : TensorBase()};
      });
}

namespace {

// The transposed operands go to Matmul as views: the CPU kernel hands a
// column-major view to BLAS as a transposed matrix, without a copy.

// MatmulGradLhs(): d lhs = grad [.., M, N] x rhs^T [.., N, K], summed over
// the batch dims lhs was broadcast along.
TensorBase MatmulGradLhs(const TensorBase& grad, const TensorBase& a,
                         const TensorBase& b) {
  return autodiff::SumToShape(Matmul(grad, b.Transpose(-1, -2)), a.shape());
}

// MatmulGradRhs(): d rhs = lhs^T [.., K, M] x grad [.., M, N], summed over
// the batch dims rhs was broadcast along. A matrix rhs shared by a batched
// lhs (the Linear-layer case) folds the batch into M: one GEMM, no sum.
TensorBase MatmulGradRhs(const TensorBase& grad, const TensorBase& a,
                         const TensorBase& b) {
  if (b.rank() == 2 && a.rank() > 2 && a.numel() > 0 && grad.numel() > 0) {
    const int64_t k = a.shape()[a.rank() - 1];
    const int64_t n = grad.shape()[grad.rank() - 1];
    return Matmul(a.Reshape(Shape{-1, k}).Transpose(0, 1),
                  grad.Reshape(Shape{-1, n}));
  }
  return autodiff::SumToShape(Matmul(a.Transpose(-1, -2), grad), b.shape());
}

// NativeMatmulBias() is MatmulBias's forward where the product computes in
// the operands' own dtype: one output tensor, which the backend's fused
// kernel (Backend::MatmulBias) fills in one pass where it has one, else
// Backend::Matmul, an add in place and the ReLU. It returns an undefined
// tensor, having computed nothing, for operands Matmul's checks would
// reject (Matmul then names them), an empty product or inner dimension, and
// 16-bit floats computed in f32.
TensorBase NativeMatmulBias(const TensorBase& input, const TensorBase& weight,
                            const TensorBase& bias,
                            ProductActivation activation) {
  if (input.rank() < 2 || weight.rank() != 2 ||
      input.shape()[input.rank() - 1] != weight.shape()[0] ||
      weight.shape()[0] == 0 || input.dtype() != weight.dtype() ||
      input.dtype() == DType::kBool || input.device() != weight.device() ||
      ComputeDTypeOn(input.dtype(), input.device()) != input.dtype()) {
    return TensorBase();
  }
  Shape out_shape(input.shape().dims().first(input.rank() - 1));
  out_shape.push_back(weight.shape()[1]);
  TensorBase out = TensorBase::Empty(out_shape, input.dtype(), input.device());
  if (out.numel() == 0) return TensorBase();
  Shape weight_shape(input.shape().dims().first(input.rank() - 2));
  weight_shape.push_back(weight.shape()[0]);
  weight_shape.push_back(weight.shape()[1]);
  const TensorBase shared_weight = weight.Expand(weight_shape);
  Backend& backend = GetBackend(input.device());
  if (backend.MatmulBias(out, input, shared_weight, bias, activation)) {
    return out;
  }
  backend.Matmul(out, input, shared_weight);
  // Binary's out may alias its lhs exactly: the product is ours alone.
  backend.Binary(BinaryOp::kAdd, out, out, bias.Expand(out_shape));
  return activation == ProductActivation::kRelu ? Unary(UnaryOp::kRelu, out)
                                                : out;
}

// ComposedMatmulBias() is MatmulBias's forward as the ops one after the
// other, for the operands NativeMatmulBias() leaves: a 16-bit product is
// rounded before the add, as the two ops round it.
TensorBase ComposedMatmulBias(const TensorBase& input, const TensorBase& weight,
                              const TensorBase& bias,
                              ProductActivation activation) {
  const TensorBase sum = Binary(BinaryOp::kAdd, Matmul(input, weight), bias);
  return activation == ProductActivation::kRelu ? Unary(UnaryOp::kRelu, sum)
                                                : sum;
}

// ReluBiasGradients() is {the gradient at relu(x W + b)'s product, the
// gradient at its bias (undefined unless need_bias)} from out_grad, the
// gradient at its output relu_out: through the backend's fused kernel where
// it has one, else the mask (Binary kReluBackward) and SumToShape. The CPU's
// kernel took 0.53-0.55x those ops' time at the MLP's [128, 256], and 1/45
// of oneDNN's ReLU backward plus reduction (figures in
// backend/cpu/relu_bias_backward.cc).
std::pair<TensorBase, TensorBase> ReluBiasGradients(const TensorBase& out_grad,
                                                    const TensorBase& relu_out,
                                                    const Shape& bias_shape,
                                                    bool need_bias) {
  if (need_bias) {
    // Scoped: where the backend declines, its outputs are freed before the
    // composed ops run.
    TensorBase grad = TensorBase::Empty(out_grad.shape(), out_grad.dtype(),
                                        out_grad.device());
    TensorBase bias_grad =
        TensorBase::Empty(bias_shape, out_grad.dtype(), out_grad.device());
    if (GetBackend(out_grad.device())
            .ReluBiasBackward(grad, bias_grad, out_grad, relu_out)) {
      return {std::move(grad), std::move(bias_grad)};
    }
  }
  TensorBase grad = Binary(BinaryOp::kReluBackward, out_grad, relu_out);
  TensorBase bias_grad =
      need_bias ? autodiff::SumToShape(grad, bias_shape) : TensorBase();
  return {std::move(grad), std::move(bias_grad)};
}

}  // namespace

TensorBase MatmulBias(const TensorBase& input, const TensorBase& weight,
                      const TensorBase& bias, ProductActivation activation) {
  CheckDefined(input, "matmul_bias");
  CheckDefined(weight, "matmul_bias");
  CheckDefined(bias, "matmul_bias");
  CheckSameDevice(input, bias, "matmul_bias");
  KINDLING_CHECK(weight.rank() == 2 && bias.rank() == 1 &&
                     bias.shape()[0] == weight.shape()[1],
                 "matmul_bias: weight %s and bias %s (want [K, N] and [N])",
                 weight.shape().ToString(), bias.shape().ToString());
  KINDLING_CHECK(bias.dtype() == input.dtype(),
                 "matmul_bias: dtypes differ, input %s%s vs bias %s%s",
                 std::string(DTypeName(input.dtype())),
                 input.shape().ToString(), std::string(DTypeName(bias.dtype())),
                 bias.shape().ToString());
  const bool relu = activation == ProductActivation::kRelu;
  const auto forward = [&] {
    TensorBase native = NativeMatmulBias(input, weight, bias, activation);
    if (native.defined()) return native;
    return ComposedMatmulBias(input, weight, bias, activation);
  };
  if (!autodiff::ShouldRecord(input, weight, bias)) return forward();
  TensorBase out = autodiff::Untracked(forward);
  // With the ReLU, the gradient reaching the product is relu_backward's
  // through the output: out > 0 exactly where the sum is.
  const SavedTensor relu_out = relu ? SavedTensor(out) : SavedTensor();
  return autodiff::Record(
      relu ? "matmul_bias_relu" : "matmul_bias", {input, weight, bias},
      std::move(out),
      [a = SavedTensor(input), b = SavedTensor(weight), relu_out,
       bias_shape = bias.shape(), need_a = input.is_require_grad(),
       need_b = weight.is_require_grad(), need_bias = bias.is_require_grad()](
          const TensorBase& out_grad) -> GradList {
        TensorBase grad = out_grad;
        TensorBase bias_grad;
        if (relu_out.defined()) {
          std::tie(grad, bias_grad) =
              ReluBiasGradients(out_grad, relu_out, bias_shape, need_bias);
        } else if (need_bias) {
          bias_grad = autodiff::SumToShape(out_grad, bias_shape);
        }
        return {need_a ? MatmulGradLhs(grad, a, b) : TensorBase(),
                need_b ? MatmulGradRhs(grad, a, b) : TensorBase(),
                std::move(bias_grad)};
      });
}

}  // namespace kindling::ops
