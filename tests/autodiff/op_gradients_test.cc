// Every differentiable op's backward formula against central finite
// differences in f64 (gradcheck.h), on random inputs, including broadcast,
// non-contiguous (transposed, sliced) and zero-size cases.
#include <array>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling {
namespace {

using testing::Gradcheck;
using testing::GradcheckFn;
using testing::RandomLeaf;
using testing::ToDoubles;
using Inputs = std::span<const TensorBase>;

TensorBase IndexTensor(const std::vector<int64_t>& values, const Shape& shape) {
  return TensorBase::FromHost(values.data(), shape, DType::kI64, Device::Cpu());
}

// --- Unary -------------------------------------------------------------------

struct UnaryCase {
  UnaryOp op;
  double low, high;  // input range (log and sqrt need positive inputs)
};

class UnaryGradientTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryGradientTest, ContiguousAndTransposed) {
  const UnaryCase c = GetParam();
  Generator generator(7);
  const std::vector<TensorBase> inputs = {
      RandomLeaf({3, 4}, generator, c.low, c.high)};
  const double arg0 = c.op == UnaryOp::kClamp ? -0.5 : 0;
  const double arg1 = c.op == UnaryOp::kClamp ? 0.5 : 0;
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return ops::Unary(c.op, x[0], arg0, arg1); }, inputs))
      << kindling::UnaryOpName(c.op);
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        return ops::Unary(c.op, x[0].Transpose(0, 1), arg0, arg1);
      },
      inputs))
      << kindling::UnaryOpName(c.op) << " transposed";
}

// Every op of the table (tensor/elementwise_ops.def) that has a gradient,
// with the inputs it is checked on. The switch has no default, so a new row
// does not build until it says how its gradient is checked.
std::vector<UnaryCase> AllUnaryCases() {
  std::vector<UnaryCase> cases;
  for (UnaryOp op : kAllUnaryOps) {
    switch (op) {
      case UnaryOp::kNeg:
      case UnaryOp::kAbs:
      case UnaryOp::kExp:
      case UnaryOp::kRelu:
      case UnaryOp::kTanh:
        cases.push_back({op, -2, 2});
        break;
      case UnaryOp::kLog:
      case UnaryOp::kSqrt:
        cases.push_back({op, 0.2, 3});
        break;
      case UnaryOp::kGelu:
      case UnaryOp::kSigmoid:
        cases.push_back({op, -3, 3});
        break;
      case UnaryOp::kClamp:
        cases.push_back({op, -1, 1});
        break;
      case UnaryOp::kLogicalNot:  // bool: no gradient
        break;
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllUnaryOps, UnaryGradientTest,
                         ::testing::ValuesIn(AllUnaryCases()));

TEST(UnaryGradientTest, GeluAtZero) {
  // Phi(0) = 1/2 is special-cased in the formula.
  const TensorBase x =
      IndexTensor({0}, {1}).To(DType::kF64).set_require_grad(true);
  const Gradients grads =
      Backward(ops::ReduceAll(ReduceOp::kSum, ops::Unary(UnaryOp::kGelu, x)));
  EXPECT_DOUBLE_EQ(0.5, testing::ToDoubles(*grads.Get(x.leaf_id()))[0]);
}

// GELU's f32 forward on the CPU keeps the slope (Backend::GeluWithSlope)
// and its backward multiplies by it; a strided input takes the saved-input
// path. Both give Binary(kGeluBackward)'s bits, and so each other's.
TEST(UnaryGradientTest, GeluSavedSlopeHasGeluBackwardsBits) {
  Generator generator(11);
  const TensorBase values =
      RandomLeaf({24, 37}, generator, -6, 6).To(DType::kF32).Detach();
  const TensorBase seed =
      RandomLeaf({24, 37}, generator).To(DType::kF32).Detach();
  const auto gradient = [&](const TensorBase& x) {
    BackwardOptions options;
    options.grad_output = seed;
    const Gradients grads = Backward(ops::Unary(UnaryOp::kGelu, x), options);
    return ToDoubles(*grads.Get(x.leaf_id()));
  };
  const TensorBase x = values.Clone().set_require_grad(true);
  const std::vector<double> expected =
      ToDoubles(ops::Binary(BinaryOp::kGeluBackward, seed, values));
  EXPECT_EQ(expected, gradient(x));
  // The same values, stored transposed and read back as [24, 37].
  const TensorBase stored = values.Transpose(0, 1).Contiguous().Clone();
  const TensorBase leaf = stored.set_require_grad(true);
  BackwardOptions options;
  options.grad_output = seed;
  const Gradients grads =
      Backward(ops::Unary(UnaryOp::kGelu, leaf.Transpose(0, 1)), options);
  EXPECT_EQ(expected, ToDoubles(grads.Get(leaf.leaf_id())->Transpose(0, 1)));
}

// --- Binary ------------------------------------------------------------------

struct BinaryCase {
  BinaryOp op;
  double low, high;  // operand range (div needs b away from 0, pow a > 0)
};

class BinaryGradientTest : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryGradientTest, SameShape) {
  const BinaryCase c = GetParam();
  Generator generator(11);
  const std::vector<TensorBase> inputs = {
      RandomLeaf({2, 3}, generator, c.low, c.high),
      RandomLeaf({2, 3}, generator, c.low, c.high)};
  EXPECT_TRUE(Gradcheck([&](Inputs x) { return ops::Binary(c.op, x[0], x[1]); },
                        inputs))
      << kindling::BinaryOpName(c.op);
}

TEST_P(BinaryGradientTest, Broadcast) {
  const BinaryCase c = GetParam();
  Generator generator(12);
  // [3, 1, 4] with [2, 4] -> [3, 2, 4]; both sides are summed back.
  const std::vector<TensorBase> inputs = {
      RandomLeaf({3, 1, 4}, generator, c.low, c.high),
      RandomLeaf({2, 4}, generator, c.low, c.high)};
  EXPECT_TRUE(Gradcheck([&](Inputs x) { return ops::Binary(c.op, x[0], x[1]); },
                        inputs))
      << kindling::BinaryOpName(c.op);
  EXPECT_TRUE(Gradcheck([&](Inputs x) { return ops::Binary(c.op, x[1], x[0]); },
                        inputs))
      << kindling::BinaryOpName(c.op) << " swapped";
}

TEST_P(BinaryGradientTest, NonContiguousOperands) {
  const BinaryCase c = GetParam();
  Generator generator(13);
  const std::vector<TensorBase> inputs = {
      RandomLeaf({4, 3}, generator, c.low, c.high),
      RandomLeaf({3, 8}, generator, c.low, c.high)};
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        return ops::Binary(c.op, x[0].Transpose(0, 1),
                           x[1].Slice(1, 1, 8, 2));  // [3, 4] and [3, 4]
      },
      inputs))
      << kindling::BinaryOpName(c.op);
}

TEST_P(BinaryGradientTest, ScalarOperands) {
  const BinaryCase c = GetParam();
  Generator generator(14);
  const std::vector<TensorBase> inputs = {
      RandomLeaf({5}, generator, c.low, c.high)};
  const double scalar = c.op == BinaryOp::kPow ? 1.5 : 0.7;
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return ops::BinaryScalar(c.op, x[0], scalar); }, inputs))
      << kindling::BinaryOpName(c.op);
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return ops::ScalarBinary(c.op, 1.3, x[0]); }, inputs))
      << kindling::BinaryOpName(c.op);
}

// Every op of the table with a gradient (the arithmetic ones), as above.
std::vector<BinaryCase> AllBinaryCases() {
  std::vector<BinaryCase> cases;
  for (BinaryOp op : kAllBinaryOps) {
    switch (op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub:
      case BinaryOp::kMul:
      case BinaryOp::kMaximum:
      case BinaryOp::kMinimum:
      case BinaryOp::kReluBackward:
      case BinaryOp::kGeluBackward:
        cases.push_back({op, -2, 2});
        break;
      case BinaryOp::kDiv:
      case BinaryOp::kPow:
        cases.push_back({op, 0.5, 2});
        break;
      case BinaryOp::kEqual:
      case BinaryOp::kNotEqual:
      case BinaryOp::kLess:
      case BinaryOp::kLessEqual:
      case BinaryOp::kGreater:
      case BinaryOp::kGreaterEqual:
      case BinaryOp::kLogicalAnd:
      case BinaryOp::kLogicalOr:  // bool results: no gradient
        break;
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllBinaryOps, BinaryGradientTest,
                         ::testing::ValuesIn(AllBinaryCases()));

// A scalar op's gradient is Binary()'s with a rank-0 operand holding the
// scalar, bit for bit, in every floating dtype and on both sides (the
// scalar path passes it by value and materializes it only for the
// gradients that read it).
TEST(ScalarGradientTest, BitIdenticalToARankZeroOperand) {
  const BinaryOp ops[] = {
      BinaryOp::kAdd,     BinaryOp::kSub,          BinaryOp::kMul,
      BinaryOp::kDiv,     BinaryOp::kPow,          BinaryOp::kMaximum,
      BinaryOp::kMinimum, BinaryOp::kReluBackward, BinaryOp::kGeluBackward};
  Generator generator(21);
  // Includes 0, 1, 2 and a negative, so pow's masks and max/min ties hit.
  const std::vector<int64_t> points = {0, 1, 2, -3, 5, 2};
  const TensorBase values = IndexTensor(points, {2, 3});
  const TensorBase upstream = RandomLeaf({2, 3}, generator).Detach();
  for (DType dtype : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    for (BinaryOp op : ops) {
      for (double scalar : {0.7, 2.0, 0.0, -1.5}) {
        for (bool lhs : {false, true}) {
          const TensorBase x =
              ops::BinaryScalar(BinaryOp::kMul, values.To(dtype), 0.5)
                  .set_require_grad(true);
          const TensorBase constant =
              ops::Full(Shape{}, scalar, dtype, Device::Cpu());
          const TensorBase by_value = lhs ? ops::ScalarBinary(op, scalar, x)
                                          : ops::BinaryScalar(op, x, scalar);
          const TensorBase by_tensor =
              lhs ? ops::Binary(op, constant, x) : ops::Binary(op, x, constant);
          const auto gradient = [&](const TensorBase& y) {
            const Gradients grads = Backward(ops::ReduceAll(
                ReduceOp::kSum,
                ops::Binary(BinaryOp::kMul, y, upstream.To(dtype))));
            std::optional<TensorBase> grad = grads.Get(x.leaf_id());
            EXPECT_TRUE(grad.has_value());
            return !grad.has_value() ? std::vector<double>()
                                     : testing::ToDoubles(*grad);
          };
          const std::vector<double> expected = gradient(by_tensor);
          const std::vector<double> actual = gradient(by_value);
          ASSERT_EQ(expected.size(), actual.size());
          for (size_t i = 0; i < expected.size(); ++i) {
            if (std::isnan(expected[i]) && std::isnan(actual[i])) continue;
            EXPECT_EQ(expected[i], actual[i])
                << kindling::BinaryOpName(op) << " " << DTypeName(dtype)
                << " scalar " << scalar << (lhs ? " on the left" : "")
                << " element " << i;
          }
        }
      }
    }
  }
}

TEST(ScalarGradientTest, TiesWithTheScalarSplitEvenly) {
  const TensorBase x =
      IndexTensor({1, 2, 0}, {3}).To(DType::kF64).set_require_grad(true);
  const Gradients max_grads = Backward(ops::ReduceAll(
      ReduceOp::kSum, ops::BinaryScalar(BinaryOp::kMaximum, x, 1)));
  EXPECT_EQ((std::vector<double>{0.5, 1, 0}),
            testing::ToDoubles(*max_grads.Get(x.leaf_id())));
  const Gradients min_grads = Backward(ops::ReduceAll(
      ReduceOp::kSum, ops::ScalarBinary(BinaryOp::kMinimum, 1, x)));
  EXPECT_EQ((std::vector<double>{0.5, 0, 1}),
            testing::ToDoubles(*min_grads.Get(x.leaf_id())));
}

TEST(ScalarGradientTest, ConstantSideFormulas) {
  // d/dx (3 - x) = -1, d/dx (2 / x) = -2 / x^2, d/dx 2^x = 2^x ln 2,
  // d/dx x^0 = 0, relu_backward(3, x) is constant in x.
  const TensorBase x =
      IndexTensor({1, 2, 4}, {3}).To(DType::kF64).set_require_grad(true);
  const auto grad_of = [&](const TensorBase& y) {
    const Gradients grads = Backward(ops::ReduceAll(ReduceOp::kSum, y));
    return testing::ToDoubles(*grads.Get(x.leaf_id()));
  };
  EXPECT_EQ((std::vector<double>{-1, -1, -1}),
            grad_of(ops::ScalarBinary(BinaryOp::kSub, 3, x)));
  EXPECT_EQ((std::vector<double>{-2, -0.5, -0.125}),
            grad_of(ops::ScalarBinary(BinaryOp::kDiv, 2, x)));
  const std::vector<double> exp2 =
      grad_of(ops::ScalarBinary(BinaryOp::kPow, 2, x));
  EXPECT_DOUBLE_EQ(2 * std::log(2.0), exp2[0]);
  EXPECT_DOUBLE_EQ(16 * std::log(2.0), exp2[2]);
  EXPECT_EQ((std::vector<double>{0, 0, 0}),
            grad_of(ops::BinaryScalar(BinaryOp::kPow, x, 0)));
  EXPECT_EQ((std::vector<double>{0, 0, 0}),
            grad_of(ops::ScalarBinary(BinaryOp::kReluBackward, 3, x)));
  EXPECT_EQ((std::vector<double>{1, 1, 1}),
            grad_of(ops::BinaryScalar(BinaryOp::kReluBackward, x, 0.5)));
}

TEST(BinaryGradientTest, MaximumSplitsTiesEvenly) {
  const TensorBase a = IndexTensor({1, 2}, {2}).To(DType::kF64);
  const TensorBase b = IndexTensor({1, 3}, {2}).To(DType::kF64);
  const TensorBase la = a.set_require_grad(true);
  const TensorBase lb = b.set_require_grad(true);
  const Gradients grads = Backward(
      ops::ReduceAll(ReduceOp::kSum, ops::Binary(BinaryOp::kMaximum, la, lb)));
  EXPECT_EQ((std::vector<double>{0.5, 0}),
            testing::ToDoubles(*grads.Get(la.leaf_id())));
  EXPECT_EQ((std::vector<double>{0.5, 1}),
            testing::ToDoubles(*grads.Get(lb.leaf_id())));
}

TEST(WhereGradientTest, BroadcastBranchesAndMaskFill) {
  Generator generator(15);
  const std::vector<TensorBase> inputs = {RandomLeaf({3, 4}, generator),
                                          RandomLeaf({4}, generator)};
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        const TensorBase condition =
            ops::BinaryScalar(BinaryOp::kGreater, x[0], 0).Detach();
        return ops::Where(condition, x[0], x[1]);
      },
      inputs));
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        const TensorBase mask =
            ops::BinaryScalar(BinaryOp::kLess, x[1], 0).Detach();
        return ops::MaskFill(x[0], mask, 3.0);
      },
      inputs));
}

// --- Reductions and softmax --------------------------------------------------

class ReduceGradientTest : public ::testing::TestWithParam<ReduceOp> {};

TEST_P(ReduceGradientTest, EachAxisAndWhole) {
  Generator generator(21);
  const std::vector<TensorBase> inputs = {RandomLeaf({3, 4, 2}, generator)};
  for (int axis = -3; axis < 3; ++axis) {
    EXPECT_TRUE(Gradcheck(
        [&](Inputs x) { return ops::Reduce(GetParam(), x[0], axis); }, inputs))
        << "axis " << axis;
  }
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return ops::ReduceAll(GetParam(), x[0]); }, inputs));
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        return ops::Reduce(GetParam(), x[0].Permute(std::array{2, 0, 1}), 2);
      },
      inputs))
      << "permuted";
}

INSTANTIATE_TEST_SUITE_P(AllReductions, ReduceGradientTest,
                         ::testing::Values(ReduceOp::kSum, ReduceOp::kMean,
                                           ReduceOp::kMax, ReduceOp::kMin));

TEST(ReduceGradientTest, MaxSplitsTiesEvenly) {
  const TensorBase x =
      IndexTensor({3, 1, 3}, {3}).To(DType::kF64).set_require_grad(true);
  const Gradients grads = Backward(ops::ReduceAll(ReduceOp::kMax, x));
  EXPECT_EQ((std::vector<double>{0.5, 0, 0.5}),
            testing::ToDoubles(*grads.Get(x.leaf_id())));
}

TEST(ReduceGradientTest, ArgMaxRecordsNothing) {
  Generator generator(22);
  const TensorBase x = RandomLeaf({3, 4}, generator);
  EXPECT_FALSE(ops::Reduce(ReduceOp::kArgMax, x, 1).is_require_grad());
}

TEST(ReduceGradientTest, ZeroSizeSum) {
  const TensorBase x = TensorBase::Empty({0, 3}, DType::kF64, Device::Cpu())
                           .set_require_grad(true);
  const Gradients grads = Backward(ops::ReduceAll(ReduceOp::kSum, x));
  ASSERT_TRUE(grads.Get(x.leaf_id()).has_value());
  EXPECT_EQ((Shape{0, 3}), grads.Get(x.leaf_id())->shape());
  const TensorBase y = TensorBase::Empty({2, 0}, DType::kF64, Device::Cpu())
                           .set_require_grad(true);
  const Gradients sum_grads = Backward(
      ops::ReduceAll(ReduceOp::kSum, ops::Reduce(ReduceOp::kSum, y, 1)));
  EXPECT_EQ((Shape{2, 0}), sum_grads.Get(y.leaf_id())->shape());
}

TEST(SoftmaxGradientTest, SoftmaxAndLogSoftmaxAlongEachAxis) {
  Generator generator(23);
  const std::vector<TensorBase> inputs = {RandomLeaf({3, 5}, generator)};
  for (const bool log : {false, true}) {
    for (const int axis : {0, 1, -1}) {
      EXPECT_TRUE(Gradcheck(
          [&](Inputs x) { return ops::Softmax(x[0], axis, log); }, inputs))
          << "log " << log << " axis " << axis;
    }
    EXPECT_TRUE(Gradcheck(
        [&](Inputs x) { return ops::Softmax(x[0].Transpose(0, 1), 1, log); },
        inputs))
        << "log " << log << " transposed";
  }
}

// --- Matmul ------------------------------------------------------------------

TEST(MatmulGradientTest, Matrices) {
  Generator generator(31);
  const std::vector<TensorBase> inputs = {RandomLeaf({3, 4}, generator),
                                          RandomLeaf({4, 5}, generator)};
  EXPECT_TRUE(
      Gradcheck([](Inputs x) { return ops::Matmul(x[0], x[1]); }, inputs));
}

TEST(MatmulGradientTest, TransposedOperands) {
  Generator generator(32);
  const std::vector<TensorBase> inputs = {RandomLeaf({4, 3}, generator),
                                          RandomLeaf({5, 4}, generator)};
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return ops::Matmul(x[0].Transpose(0, 1), x[1].Transpose(0, 1));
      },
      inputs));
}

TEST(MatmulGradientTest, BatchedWithSharedMatrix) {
  // The Linear-layer case: [B, M, K] x [K, N].
  Generator generator(33);
  const std::vector<TensorBase> inputs = {RandomLeaf({2, 3, 4}, generator),
                                          RandomLeaf({4, 5}, generator)};
  EXPECT_TRUE(
      Gradcheck([](Inputs x) { return ops::Matmul(x[0], x[1]); }, inputs));
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return ops::Matmul(x[1].Transpose(0, 1), x[0].Transpose(1, 2));
      },
      inputs))
      << "matrix times batch";
}

TEST(MatmulGradientTest, BroadcastBatchDims) {
  Generator generator(34);
  const std::vector<TensorBase> inputs = {RandomLeaf({2, 1, 3, 4}, generator),
                                          RandomLeaf({3, 4, 2}, generator)};
  EXPECT_TRUE(
      Gradcheck([](Inputs x) { return ops::Matmul(x[0], x[1]); }, inputs));
}

TEST(MatmulGradientTest, ZeroInnerDimension) {
  const TensorBase a = TensorBase::Empty({2, 0}, DType::kF64, Device::Cpu())
                           .set_require_grad(true);
  const TensorBase b = TensorBase::Empty({0, 3}, DType::kF64, Device::Cpu())
                           .set_require_grad(true);
  const Gradients grads =
      Backward(ops::ReduceAll(ReduceOp::kSum, ops::Matmul(a, b)));
  EXPECT_EQ((Shape{2, 0}), grads.Get(a.leaf_id())->shape());
  EXPECT_EQ((Shape{0, 3}), grads.Get(b.leaf_id())->shape());
}

TEST(MatmulBiasGradientTest, BatchedInputTransposedWeight) {
  // The fully connected layer as one op: input, weight and bias gradients.
  Generator generator(35);
  const std::vector<TensorBase> inputs = {RandomLeaf({2, 3, 4}, generator),
                                          RandomLeaf({5, 4}, generator),
                                          RandomLeaf({5}, generator)};
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return ops::MatmulBias(x[0], x[1].Transpose(0, 1), x[2]);
      },
      inputs));
}

TEST(MatmulBiasGradientTest, SameBitsAsMatmulThenAdd) {
  // f32, where the in-place add must round exactly as the separate add.
  Generator generator(36);
  const auto leaf = [&](const Shape& shape) {
    return Tensor<2>::RandomNormal(shape, generator)
        .base()
        .set_require_grad(true);
  };
  const TensorBase x = leaf({37, 19});
  const TensorBase w = leaf({19, 23});
  const TensorBase b =
      Tensor<1>::RandomNormal({23}, generator).base().set_require_grad(true);
  const TensorBase upstream =
      Tensor<2>::RandomNormal({37, 23}, generator).base();
  const TensorBase fused = ops::MatmulBias(x, w, b);
  const TensorBase composed = ops::Binary(BinaryOp::kAdd, ops::Matmul(x, w), b);
  EXPECT_EQ(Tensor<2>(composed).to_data<float>(),
            Tensor<2>(fused).to_data<float>());
  const auto gradients = [&](const TensorBase& y) {
    return Backward(ops::ReduceAll(ReduceOp::kSum,
                                   ops::Binary(BinaryOp::kMul, y, upstream)));
  };
  const Gradients fused_grads = gradients(fused);
  const Gradients composed_grads = gradients(composed);
  for (const TensorBase* leaf_tensor : {&x, &w, &b}) {
    EXPECT_EQ(
        Tensor<2>(
            composed_grads.Get(leaf_tensor->leaf_id())->Reshape(Shape{-1, 1}))
            .to_data<float>(),
        Tensor<2>(
            fused_grads.Get(leaf_tensor->leaf_id())->Reshape(Shape{-1, 1}))
            .to_data<float>());
  }
}

// The fused fully connected layer (and its ReLU) against the ops it fuses,
// bit for bit, values and every gradient, on shapes that take each path of
// the CPU's kernel: one serial GEMM, slabs of rows, slabs of columns, a
// contiguous batch folded into one GEMM, a transposed weight view, and a
// strided batch the kernel declines (the composed ops run).
struct FusedLinearCase {
  const char* name;
  Shape input;  // [.., K]
  int64_t n;
  bool transposed_weight = false;
  bool strided_input = false;
};

void PrintTo(const FusedLinearCase& c, std::ostream* os) { *os << c.name; }

class FusedLinearTest
    : public ::testing::TestWithParam<std::tuple<FusedLinearCase, DType>> {};

TEST_P(FusedLinearTest, SameBitsAsTheOpsItFuses) {
  const auto& [c, dtype] = GetParam();
  Generator generator(37);
  const int64_t k = c.input[c.input.rank() - 1];
  const auto leaf = [&](const Shape& shape) {
    return TensorBase(Tensor<1>::RandomNormal({shape.num_elements()}, generator)
                          .base()
                          .Reshape(shape)
                          .To(dtype))
        .set_require_grad(true);
  };
  TensorBase x = leaf(c.input);
  if (c.strided_input) {
    // Every other row of a taller tensor: a batch that is not one block.
    Shape tall = c.input;
    tall[tall.rank() - 2] *= 2;
    x = leaf(tall);
  }
  const TensorBase w_leaf =
      c.transposed_weight ? leaf({c.n, k}) : leaf({k, c.n});
  // The views of x and w the product reads, made afresh for each graph (a
  // view is a node of the graph it is used in).
  const auto input = [&] {
    return c.strided_input
               ? x.Slice(x.rank() - 2, 0, c.input[c.input.rank() - 2] * 2, 2)
               : x;
  };
  const auto weight = [&] {
    return c.transposed_weight ? w_leaf.Transpose(0, 1) : w_leaf;
  };
  const TensorBase b = leaf({c.n});
  Shape out_shape(c.input.dims().first(c.input.rank() - 1));
  out_shape.push_back(c.n);
  const TensorBase upstream = leaf(out_shape).Detach();
  for (ProductActivation activation :
       {ProductActivation::kNone, ProductActivation::kRelu}) {
    const bool relu = activation == ProductActivation::kRelu;
    SCOPED_TRACE(relu ? "relu" : "none");
    const TensorBase fused = ops::MatmulBias(input(), weight(), b, activation);
    TensorBase composed =
        ops::Binary(BinaryOp::kAdd, ops::Matmul(input(), weight()), b);
    if (relu) composed = ops::Unary(UnaryOp::kRelu, composed);
    ASSERT_EQ(composed.shape(), fused.shape());
    EXPECT_EQ(ToDoubles(composed), ToDoubles(fused));
    // The CPU's fused kernel takes every case but the strided batch.
    Shape weight_shape(c.input.dims().first(c.input.rank() - 2));
    weight_shape.push_back(k);
    weight_shape.push_back(c.n);
    const TensorBase out = TensorBase::Empty(out_shape, dtype, Device::Cpu());
    EXPECT_EQ(!c.strided_input,
              GetBackend(Device::Cpu())
                  .MatmulBias(out, input().Detach(),
                              weight().Detach().Expand(weight_shape),
                              b.Detach(), activation));
    const auto gradients = [&](const TensorBase& y) {
      return Backward(ops::ReduceAll(ReduceOp::kSum,
                                     ops::Binary(BinaryOp::kMul, y, upstream)));
    };
    const Gradients fused_grads = gradients(fused);
    const Gradients composed_grads = gradients(composed);
    for (const TensorBase* leaf_tensor :
         std::array<const TensorBase*, 3>{&x, &w_leaf, &b}) {
      EXPECT_EQ(ToDoubles(*composed_grads.Get(leaf_tensor->leaf_id())),
                ToDoubles(*fused_grads.Get(leaf_tensor->leaf_id())));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedLinearTest,
    ::testing::Combine(
        ::testing::Values(
            FusedLinearCase{"serial", {5, 7}, 3},
            FusedLinearCase{"row_slabs", {128, 96}, 40},
            FusedLinearCase{"column_slabs", {40, 96}, 130},
            FusedLinearCase{"folded_batch", {3, 50, 64}, 72},
            FusedLinearCase{"transposed_weight", {70, 64}, 48, true},
            FusedLinearCase{"strided_batch", {2, 33, 64}, 40, false, true}),
        ::testing::Values(DType::kF32, DType::kF64)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) +
             (std::get<1>(info.param) == DType::kF32 ? "_f32" : "_f64");
    });

TEST(FusedLinearGradientTest, ReluMatchesFiniteDifferences) {
  Generator generator(38);
  const std::vector<TensorBase> inputs = {RandomLeaf({2, 3, 4}, generator),
                                          RandomLeaf({5, 4}, generator),
                                          RandomLeaf({5}, generator)};
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return ops::MatmulBias(x[0], x[1].Transpose(0, 1), x[2],
                               ProductActivation::kRelu);
      },
      inputs));
}

TEST(FusedLinearGradientTest, ANanSumPassesNoGradient) {
  // relu(NaN) is 0 either way; relu's own gradient passes the incoming one
  // through a NaN input, the fused op's (read from the output) does not.
  const TensorBase x = Tensor<2>::FromData<float>({std::nanf(""), 1.0f}, {1, 2})
                           .base()
                           .set_require_grad(true);
  const TensorBase w = Tensor<2>::FromData<float>({1.0f, 1.0f}, {2, 1}).base();
  const TensorBase b = Tensor<1>::FromData<float>({0.5f}, {1}).base();
  const TensorBase y = ops::MatmulBias(x, w, b, ProductActivation::kRelu);
  EXPECT_EQ(0.0f, Tensor<2>(y).to_data<float>()[0]);
  const Gradients grads = Backward(ops::ReduceAll(ReduceOp::kSum, y));
  EXPECT_EQ((std::vector<double>{0.0, 0.0}),
            ToDoubles(*grads.Get(x.leaf_id())));
}

// --- Indexing ----------------------------------------------------------------

TEST(IndexGradientTest, CatAndStack) {
  Generator generator(41);
  const std::vector<TensorBase> inputs = {RandomLeaf({2, 3}, generator),
                                          RandomLeaf({4, 3}, generator)};
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        const std::vector<TensorBase> parts = {
            x[0], x[1].Slice(0, 0, 4, 2),
            ops::Full({1, 3}, 2.0, DType::kF64, Device::Cpu())};
        return ops::Cat(parts, 0);
      },
      inputs));
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        const std::vector<TensorBase> parts = {x[0], x[1].Narrow(0, 1, 2)};
        return ops::Stack(parts, 1);
      },
      inputs));
}

TEST(IndexGradientTest, IndexSelectWithRepeats) {
  Generator generator(42);
  const std::vector<TensorBase> inputs = {RandomLeaf({4, 3}, generator)};
  const TensorBase ids = IndexTensor({3, 0, 3, 1}, {4});
  for (const int axis : {0, 1}) {
    const TensorBase index = axis == 0 ? ids : IndexTensor({2, 0, 2}, {3});
    EXPECT_TRUE(Gradcheck(
        [&](Inputs x) { return ops::IndexSelect(x[0], axis, index); }, inputs))
        << "axis " << axis;
  }
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return ops::IndexSelect(x[0].Transpose(0, 1), 1, ids); },
      inputs))
      << "transposed";
}

TEST(IndexGradientTest, GatherWithRepeats) {
  Generator generator(43);
  const std::vector<TensorBase> inputs = {RandomLeaf({2, 4}, generator)};
  const TensorBase index = IndexTensor({3, 3, 0, 1, 1, 2}, {2, 3});
  EXPECT_TRUE(
      Gradcheck([&](Inputs x) { return ops::Gather(x[0], 1, index); }, inputs));
  const TensorBase rows = IndexTensor({1, 0, 1, 1}, {1, 4});
  EXPECT_TRUE(
      Gradcheck([&](Inputs x) { return ops::Gather(x[0], 0, rows); }, inputs));
}

// --- Views and copies --------------------------------------------------------

TEST(ViewGradientTest, EveryView) {
  Generator generator(51);
  const std::vector<TensorBase> inputs = {RandomLeaf({2, 3, 4}, generator)};
  const std::vector<std::pair<const char*, GradcheckFn>> views = {
      {"reshape",
       [](Inputs x) {
         return x[0].Reshape({6, 4});
       }},
      {"reshape of transposed (copies)",
       [](Inputs x) { return x[0].Transpose(0, 2).Reshape({-1}); }},
      {"permute",
       [](Inputs x) {
         return x[0].Permute(std::array{1, 2, 0});
       }},
      {"transpose", [](Inputs x) { return x[0].Transpose(-1, 0); }},
      {"narrow", [](Inputs x) { return x[0].Narrow(2, 1, 2); }},
      {"slice with step", [](Inputs x) { return x[0].Slice(2, -3, 4, 2); }},
      {"expand",
       [](Inputs x) {
         return x[0].Narrow(1, 0, 1).Expand({5, 2, 3, 4});
       }},
      {"unsqueeze", [](Inputs x) { return x[0].Unsqueeze(1); }},
      {"squeeze", [](Inputs x) { return x[0].Narrow(1, 2, 1).Squeeze(1); }},
      {"contiguous",
       [](Inputs x) { return x[0].Transpose(0, 1).Contiguous(); }},
      {"clone", [](Inputs x) { return x[0].Slice(1, 0, 3, 2).Clone(); }},
      {"empty narrow", [](Inputs x) { return x[0].Narrow(0, 1, 0); }},
  };
  for (const auto& [name, view] : views) {
    EXPECT_TRUE(Gradcheck(view, inputs)) << name;
  }
}

TEST(ViewGradientTest, ChainOfViewsIntoAnOp) {
  Generator generator(52);
  const std::vector<TensorBase> inputs = {RandomLeaf({4, 6}, generator),
                                          RandomLeaf({3}, generator)};
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        const TensorBase a = x[0].Reshape({2, 2, 6}).Slice(2, 0, 6, 2);
        return ops::Binary(BinaryOp::kMul, a.Transpose(0, 1), x[1]);
      },
      inputs));
}

TEST(ViewGradientTest, DtypeConversionPassesTheGradientBack) {
  const TensorBase x =
      IndexTensor({1, -2, 3}, {3}).To(DType::kF64).set_require_grad(true);
  const TensorBase y = x.To(DType::kF32);
  ASSERT_TRUE(y.is_require_grad());
  // sum(y^2): the gradient 2x comes back as f64.
  const Gradients grads = Backward(
      ops::ReduceAll(ReduceOp::kSum, ops::Binary(BinaryOp::kMul, y, y)));
  std::optional<TensorBase> grad = grads.Get(x.leaf_id());
  ASSERT_TRUE(grad.has_value());
  EXPECT_EQ(DType::kF64, grad->dtype());
  EXPECT_EQ((std::vector<double>{2, -4, 6}), testing::ToDoubles(*grad));
  EXPECT_FALSE(x.To(DType::kI64).is_require_grad());
}

TEST(HalfPrecisionGradientTest, GradientsKeepTheLeafDtype) {
  // f16 and bf16 are computed in f32 and rounded, forward and backward.
  for (const DType dtype : {DType::kF16, DType::kBF16}) {
    const TensorBase x =
        IndexTensor({1, -2, 3, 4}, {2, 2}).To(dtype).set_require_grad(true);
    // Rows 1, 1, 0; loss = sum(picked^2 + broadcast bias).
    const TensorBase picked =
        ops::IndexSelect(x, 0, IndexTensor({1, 1, 0}, {3}));
    const TensorBase loss = ops::ReduceAll(
        ReduceOp::kSum, ops::Binary(BinaryOp::kMul, picked, picked));
    const Gradients grads = Backward(loss);
    std::optional<TensorBase> grad = grads.Get(x.leaf_id());
    ASSERT_TRUE(grad.has_value());
    EXPECT_EQ(dtype, grad->dtype());
    EXPECT_EQ((std::vector<double>{2, -4, 12, 16}), testing::ToDoubles(*grad))
        << DTypeName(dtype);
  }
}

}  // namespace
}  // namespace kindling
