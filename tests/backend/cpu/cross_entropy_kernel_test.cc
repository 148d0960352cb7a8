// Backend::CrossEntropyBackward on the CPU (backend/cpu/cross_entropy.cc):
// the one-pass gradient gives the composed ops' values bit for bit (the
// one-hot target, exp, subtraction and scaling nn::CrossEntropy otherwise
// runs), on row lengths with and without vector tails, rows split over
// threads, label smoothing, log-probabilities beyond exp's fast range and
// strided labels; it declines, writing nothing, what it has no kernel for;
// and nn::CrossEntropy's gradient through Backward() is the same.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/nn/loss.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor.h"
#include "tests/support/cpu_tensors.h"

namespace kindling {
namespace {

using test_support::ExpectSameBits;
using test_support::FromFloats;
using test_support::RandomFloats;

// The composed ops nn::CrossEntropy's backward runs where no backend kernel
// takes the operands.
TensorBase ComposedGradient(const TensorBase& log_probabilities,
                            const TensorBase& labels, double label_smoothing,
                            const TensorBase& grad) {
  const int64_t rows = log_probabilities.shape()[0];
  const int64_t classes = log_probabilities.shape()[1];
  TensorBase target = ops::OneHot(labels, classes, DType::kF32);
  if (label_smoothing != 0) {
    target = ops::BinaryScalar(
        BinaryOp::kAdd,
        ops::BinaryScalar(BinaryOp::kMul, target, 1 - label_smoothing),
        label_smoothing / static_cast<double>(classes));
  }
  const TensorBase difference = ops::Binary(
      BinaryOp::kSub, ops::Unary(UnaryOp::kExp, log_probabilities), target);
  return ops::Binary(
      BinaryOp::kMul, difference,
      ops::BinaryScalar(BinaryOp::kDiv, grad, static_cast<double>(rows)));
}

TensorBase Labels(int64_t rows, int64_t classes) {
  std::vector<int64_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r) labels[r] = (r * 7 + 3) % classes;
  return TensorBase::FromHost(labels.data(), Shape{rows}, DType::kI64,
                              Device::Cpu());
}

TensorBase Scalar(float value) {
  return TensorBase::FromHost(&value, Shape{}, DType::kF32, Device::Cpu());
}

// Log-probabilities of N(0, spread^2) logits: a spread of 60 puts most of
// each row below -86, where exp leaves its fast path.
TensorBase LogProbabilities(int64_t rows, int64_t classes, float spread,
                            uint32_t seed) {
  std::vector<float> logits = RandomFloats(rows * classes, seed);
  for (float& v : logits) v *= spread;
  return ops::Softmax(FromFloats(logits, Shape{rows, classes}), 1,
                      /*log=*/true);
}

TEST(CrossEntropyKernelTest, SameBitsAsTheComposedOps) {
  struct Case {
    int64_t rows;
    int64_t classes;
  };
  // Classes with and without a tail of fewer than eight; 3000 x 10 and
  // 64 x 1024 are split over threads.
  const std::vector<Case> cases = {{1, 1},    {5, 3},  {4, 8},     {6, 9},
                                   {128, 10}, {7, 17}, {3000, 10}, {64, 1024}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    for (const float spread : {1.0f, 60.0f}) {
      for (const double smoothing : {0.0, 0.1, 1.0}) {
        for (const float upstream : {1.0f, 3.5f}) {
          const std::string what = "rows " + std::to_string(c.rows) +
                                   " classes " + std::to_string(c.classes) +
                                   " spread " + std::to_string(spread) +
                                   " smoothing " + std::to_string(smoothing) +
                                   " grad " + std::to_string(upstream);
          const TensorBase log_p =
              LogProbabilities(c.rows, c.classes, spread, seed++);
          const TensorBase labels = Labels(c.rows, c.classes);
          const TensorBase grad = Scalar(upstream);
          const TensorBase out =
              TensorBase::Empty(log_p.shape(), DType::kF32, Device::Cpu());
          ASSERT_TRUE(
              GetBackend(Device::Cpu())
                  .CrossEntropyBackward(out, log_p, labels, smoothing, grad))
              << what;
          ExpectSameBits(out, ComposedGradient(log_p, labels, smoothing, grad),
                         what);
        }
      }
    }
  }
}

TEST(CrossEntropyKernelTest, StridedLabels) {
  const TensorBase log_p = LogProbabilities(9, 12, 1.0f, 7);
  // Every other entry of 18 labels.
  const TensorBase labels = Labels(18, 12).Slice(0, 0, 18, 2);
  ASSERT_FALSE(labels.is_contiguous());
  const TensorBase grad = Scalar(1.0f);
  const TensorBase out =
      TensorBase::Empty(log_p.shape(), DType::kF32, Device::Cpu());
  ASSERT_TRUE(GetBackend(Device::Cpu())
                  .CrossEntropyBackward(out, log_p, labels, 0.0, grad));
  ExpectSameBits(out, ComposedGradient(log_p, labels, 0.0, grad),
                 "strided labels");
}

TEST(CrossEntropyKernelTest, DeclinesWhatItHasNoKernelFor) {
  const TensorBase log_p = LogProbabilities(4, 5, 1.0f, 8);
  const TensorBase labels = Labels(4, 5);
  const TensorBase grad = Scalar(1.0f);
  Backend& backend = GetBackend(Device::Cpu());
  // f64 log-probabilities.
  const TensorBase log_p64 = log_p.To(DType::kF64);
  EXPECT_FALSE(backend.CrossEntropyBackward(
      TensorBase::Empty(log_p.shape(), DType::kF64, Device::Cpu()), log_p64,
      labels, 0.0, grad.To(DType::kF64)));
  // i32 labels.
  EXPECT_FALSE(backend.CrossEntropyBackward(
      TensorBase::Empty(log_p.shape(), DType::kF32, Device::Cpu()), log_p,
      labels.To(DType::kI32), 0.0, grad));
  // A transposed (non-contiguous) output, left as it was.
  const std::vector<float> sentinel(20, 42.0f);
  const TensorBase out_t = FromFloats(sentinel, Shape{5, 4}).Transpose(0, 1);
  EXPECT_FALSE(backend.CrossEntropyBackward(out_t, log_p, labels, 0.0, grad));
  for (float v : test_support::Values<float>(out_t)) EXPECT_EQ(v, 42.0f);
}

TEST(CrossEntropyKernelTest, LossGradientThroughBackwardIsTheComposedOnes) {
  for (const double smoothing : {0.0, 0.1}) {
    const TensorBase logits =
        FromFloats(RandomFloats(128 * 10, 11), Shape{128, 10})
            .set_require_grad(true);
    const TensorBase labels = Labels(128, 10);
    const Tensor<0> loss =
        nn::CrossEntropy(Tensor<2>(logits), Tensor<1, Int>(labels), smoothing);
    const Gradients grads = Backward(loss * 3.5);
    const TensorBase expected =
        ComposedGradient(ops::Softmax(logits.Detach(), 1, /*log=*/true), labels,
                         smoothing, Scalar(3.5f));
    ExpectSameBits(*grads.Get(logits.leaf_id()), expected,
                   "smoothing " + std::to_string(smoothing));
  }
}

}  // namespace
}  // namespace kindling
