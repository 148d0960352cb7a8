// Every row of the op table (tensor/elementwise_ops.def) against the CPU
// kernels: each unary and binary op runs in each dtype its row allows and
// matches a scalar reference written here, and refuses the dtypes it does
// not allow. The references' switches have no default, so a new row does
// not build until it has one. (Gradients: //tests/autodiff:op_gradients_test
// checks every row that has one.)
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/elementwise_op.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/tensor.h"

namespace {

using ::kindling::BinaryOp;
using ::kindling::DType;
using ::kindling::OpOperands;
using ::kindling::Tensor;
using ::kindling::TensorBase;
using ::kindling::UnaryOp;

constexpr double kClampLow = -0.5;
constexpr double kClampHigh = 1.5;

double UnaryReference(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::kNeg:
      return -x;
    case UnaryOp::kAbs:
      return std::fabs(x);
    case UnaryOp::kExp:
      return std::exp(x);
    case UnaryOp::kLog:
      return std::log(x);
    case UnaryOp::kSqrt:
      return std::sqrt(x);
    case UnaryOp::kRelu:
      return x > 0 ? x : 0;
    case UnaryOp::kGelu:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case UnaryOp::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case UnaryOp::kTanh:
      return std::tanh(x);
    case UnaryOp::kClamp:
      return std::fmin(std::fmax(x, kClampLow), kClampHigh);
    case UnaryOp::kLogicalNot:
      return x == 0 ? 1 : 0;
  }
  return NAN;
}

double BinaryReference(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPow:
      return std::pow(a, b);
    case BinaryOp::kMaximum:
      return std::fmax(a, b);
    case BinaryOp::kMinimum:
      return std::fmin(a, b);
    case BinaryOp::kReluBackward:
      return b > 0 ? a : 0;
    case BinaryOp::kGeluBackward:
      return a * (0.5 * std::erfc(-b / std::sqrt(2.0)) +
                  b * std::exp(-0.5 * b * b) / std::sqrt(2 * M_PI));
    case BinaryOp::kEqual:
      return a == b;
    case BinaryOp::kNotEqual:
      return a != b;
    case BinaryOp::kLess:
      return a < b;
    case BinaryOp::kLessEqual:
      return a <= b;
    case BinaryOp::kGreater:
      return a > b;
    case BinaryOp::kGreaterEqual:
      return a >= b;
    case BinaryOp::kLogicalAnd:
      return (a != 0) && (b != 0);
    case BinaryOp::kLogicalOr:
      return (a != 0) || (b != 0);
  }
  return NAN;
}

// The dtypes a row allows, as the test runs them.
std::vector<DType> DTypesOf(OpOperands operands) {
  switch (operands) {
    case OpOperands::kArithmetic:
      return {DType::kF32, DType::kF64, DType::kI64, DType::kI32};
    case OpOperands::kFloating:
      return {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};
    case OpOperands::kComparison:
      return {DType::kF32, DType::kI64, DType::kBool};
    case OpOperands::kBool:
    case OpOperands::kLogical:
      return {DType::kBool};
  }
  return {};
}

// Inputs in every op's domain (positive, for log, sqrt and pow's base), in
// values each dtype holds exactly; integers get whole numbers, bools 0/1.
std::vector<double> Inputs(DType dtype, bool second) {
  if (dtype == DType::kBool) {
    return second ? std::vector<double>{0, 1, 0, 1}
                  : std::vector<double>{0, 0, 1, 1};
  }
  if (dtype == DType::kI64 || dtype == DType::kI32) {
    return second ? std::vector<double>{2, 1, 3, 2}
                  : std::vector<double>{1, 4, 3, 5};
  }
  return second ? std::vector<double>{0.5, 1.25, 2, 0.75}
                : std::vector<double>{0.25, 1.5, 3, 0.375};
}

TensorBase Make(const std::vector<double>& values, DType dtype) {
  return Tensor<1>::FromData(std::vector<float>(values.begin(), values.end()),
                             {static_cast<int64_t>(values.size())})
      .base()
      .To(dtype);
}

std::vector<double> Read(const TensorBase& tensor) {
  return Tensor<1, kindling::Float>(tensor.To(DType::kF64)).to_data<double>();
}

// The tolerance for a result computed in `dtype`.
double Tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return 2e-3;
    case DType::kBF16:
      return 1e-2;
    case DType::kF32:
      return 2e-6;
    default:
      return 1e-12;
  }
}

// ExpectClose(): a result computed in `dtype` against the reference
// (truncated toward zero for integers, as integer division is).
void ExpectClose(const std::vector<double>& want,
                 const std::vector<double>& got, DType dtype) {
  ASSERT_EQ(want.size(), got.size());
  const bool integer = dtype == DType::kI64 || dtype == DType::kI32;
  for (size_t i = 0; i < want.size(); ++i) {
    const double expected = integer ? std::trunc(want[i]) : want[i];
    EXPECT_NEAR(expected, got[i], Tolerance(dtype) * (1 + std::fabs(expected)))
        << "element " << i;
  }
}

TEST(OpTableTest, EveryUnaryOpRunsInEveryDTypeItsRowAllows) {
  std::set<std::string> names;
  for (UnaryOp op : kindling::kAllUnaryOps) {
    EXPECT_TRUE(names.insert(kindling::UnaryOpName(op)).second)
        << "duplicate name " << kindling::UnaryOpName(op);
    for (DType dtype : DTypesOf(kindling::UnaryOperands(op))) {
      SCOPED_TRACE(std::string(kindling::UnaryOpName(op)) + " " +
                   std::string(kindling::DTypeName(dtype)));
      const std::vector<double> x = Inputs(dtype, false);
      const TensorBase out =
          kindling::ops::Unary(op, Make(x, dtype), kClampLow, kClampHigh);
      EXPECT_EQ(dtype, out.dtype());
      std::vector<double> want;
      for (double value : x) want.push_back(UnaryReference(op, value));
      ExpectClose(want, Read(out), dtype);
    }
  }
}

TEST(OpTableTest, EveryBinaryOpRunsInEveryDTypeItsRowAllows) {
  std::set<std::string> names;
  for (BinaryOp op : kindling::kAllBinaryOps) {
    EXPECT_TRUE(names.insert(kindling::BinaryOpName(op)).second)
        << "duplicate name " << kindling::BinaryOpName(op);
    for (DType dtype : DTypesOf(kindling::BinaryKind(op))) {
      SCOPED_TRACE(std::string(kindling::BinaryOpName(op)) + " " +
                   std::string(kindling::DTypeName(dtype)));
      const std::vector<double> a = Inputs(dtype, false);
      const std::vector<double> b = Inputs(dtype, true);
      const TensorBase out =
          kindling::ops::Binary(op, Make(a, dtype), Make(b, dtype));
      EXPECT_EQ(kindling::WritesBool(op) ? DType::kBool : dtype, out.dtype());
      std::vector<double> want;
      for (size_t i = 0; i < a.size(); ++i) {
        want.push_back(BinaryReference(op, a[i], b[i]));
      }
      ExpectClose(want, Read(out), dtype);
    }
  }
}

TEST(OpTableDeathTest, RowsRefuseTheDTypesTheyDoNotAllow) {
  for (UnaryOp op : kindling::kAllUnaryOps) {
    if (kindling::UnaryOperands(op) == OpOperands::kFloating) {
      EXPECT_DEATH(kindling::ops::Unary(op, Make({1, 2}, DType::kI64)),
                   kindling::UnaryOpName(op));
    }
    if (kindling::UnaryOperands(op) == OpOperands::kBool) {
      EXPECT_DEATH(kindling::ops::Unary(op, Make({1, 2}, DType::kF32)),
                   "needs a bool tensor");
    }
  }
  for (BinaryOp op : kindling::kAllBinaryOps) {
    const TensorBase bools = Make({0, 1}, DType::kBool);
    const TensorBase floats = Make({0, 1}, DType::kF32);
    if (kindling::BinaryKind(op) == OpOperands::kArithmetic) {
      EXPECT_DEATH(kindling::ops::Binary(op, bools, bools),
                   "arithmetic on bool tensors");
    }
    if (kindling::IsLogical(op)) {
      EXPECT_DEATH(kindling::ops::Binary(op, floats, floats),
                   "needs bool tensors");
    }
    if (kindling::BinaryKind(op) == OpOperands::kFloating) {
      const TensorBase integers = Make({0, 1}, DType::kI64);
      EXPECT_DEATH(kindling::ops::Binary(op, integers, integers),
                   "needs floating-point tensors");
      EXPECT_DEATH(kindling::ops::BinaryScalar(op, integers, 1),
                   "needs floating-point tensors");
    }
  }
}

}  // namespace
