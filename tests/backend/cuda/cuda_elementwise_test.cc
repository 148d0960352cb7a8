// CudaBackend against the CPU backend: Copies, fills, unary/binary/scalar ops,
// where, the front end on cuda and empty launches.
// (tests/backend/cuda/backend_test_support.h says how cases compare.)
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"
#include "tests/backend/cuda/test_kernels.h"

namespace kindling::cuda_test {
namespace {

TEST(CudaBackendRegistrationTest, RegisteredByLinking) {
  ASSERT_TRUE(HasBackend(DeviceKind::kCuda));
  EXPECT_EQ("cuda", GetBackend(kGpu).name());
  EXPECT_FALSE(cuda::CudaMatmulAllowsTf32());
  // Its kernels take f16/bf16 themselves; the CPU's do not.
  EXPECT_TRUE(GetBackend(kGpu).ComputesHalfNatively());
  EXPECT_FALSE(GetBackend(kCpu).ComputesHalfNatively());
}

const DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16,
                            DType::kF64, DType::kI64, DType::kI32,
                            DType::kU8,  DType::kBool};

TEST_F(CudaBackendTest, CopyConvertsEveryDTypePairThroughStridedViews) {
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        // Values beyond every integer range, fractions and signs.
        const TensorBase in =
            Input({37, 9}, from, 3, device, -1e5, 1e5).Transpose(0, 1);
        const TensorBase out = TensorBase::Empty(in.shape(), to, device);
        GetBackend(device).Copy(out, in);
        return out;
      });
      ExpectBitEqual(cpu, gpu, "copy " + Name(from) + " -> " + Name(to));
    }
  }
}

TEST_F(CudaBackendTest, CopyConvertsNonFiniteAndWritesStridedOutputs) {
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             65520.0,
                             1e-30,
                             -0.0,
                             3.5,
                             2.5e10};
  for (DType to : kAllDTypes) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase in =
          TensorBase::FromHost(specials, {8}, DType::kF64, kCpu)
              .ToDevice(device);
      const TensorBase out = TensorBase::Empty({3, 8}, to, device);
      GetBackend(device).Fill(out, 0);
      GetBackend(device).Copy(out.Narrow(0, 1, 1).Squeeze(0), in);
      return out;
    });
    ExpectBitEqual(cpu, gpu, "special copy -> " + Name(to));
  }
}

TEST_F(CudaBackendTest, FillWritesEveryDTypeThroughAStridedView) {
  for (DType dtype : kAllDTypes) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase out = TensorBase::Empty({6, 10}, dtype, device);
      GetBackend(device).Fill(out, 1);
      GetBackend(device).Fill(out.Slice(1, 1, 10, 3), -3.75);
      return out;
    });
    ExpectBitEqual(cpu, gpu, "fill " + Name(dtype));
  }
}

TEST_F(CudaBackendTest, UnaryOpsMatchOnFloatsAndIntegers) {
  const UnaryOp float_ops[] = {
      UnaryOp::kNeg,  UnaryOp::kAbs,  UnaryOp::kExp,  UnaryOp::kLog,
      UnaryOp::kSqrt, UnaryOp::kRelu, UnaryOp::kGelu, UnaryOp::kSigmoid,
      UnaryOp::kTanh, UnaryOp::kClamp};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (UnaryOp op : float_ops) {
      const bool positive = op == UnaryOp::kLog || op == UnaryOp::kSqrt;
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase in =
            Input({70, 33}, dtype, 5, device, positive ? 0.01 : -6, 6)
                .Transpose(0, 1);
        const TensorBase out = TensorBase::Empty(in.shape(), dtype, device);
        GetBackend(device).Unary(op, out, in, -0.5, 1.25);
        return out;
      });
      ExpectClose(
          cpu, gpu, ToleranceOf(dtype),
          "unary " + std::to_string(static_cast<int>(op)) + " " + Name(dtype));
    }
  }
  for (DType dtype : {DType::kI64, DType::kI32, DType::kU8}) {
    for (UnaryOp op :
         {UnaryOp::kNeg, UnaryOp::kAbs, UnaryOp::kRelu, UnaryOp::kClamp}) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase in = Input({40, 17}, dtype, 6, device, -100, 100);
        const TensorBase out = TensorBase::Empty(in.shape(), dtype, device);
        GetBackend(device).Unary(op, out, in, -7, 20);
        return out;
      });
      ExpectBitEqual(
          cpu, gpu,
          "unary " + std::to_string(static_cast<int>(op)) + " " + Name(dtype));
    }
  }
  auto [cpu, gpu] = Both([&](const Device& device) {
    const TensorBase in = Input({100}, DType::kBool, 8, device);
    const TensorBase out = TensorBase::Empty(in.shape(), DType::kBool, device);
    GetBackend(device).Unary(UnaryOp::kLogicalNot, out, in, 0, 0);
    return out;
  });
  ExpectBitEqual(cpu, gpu, "logical_not");
}

// The BinaryOps defined on numbers (not the logical ones).
const BinaryOp kNumericBinaryOps[] = {
    BinaryOp::kAdd,      BinaryOp::kSub,          BinaryOp::kMul,
    BinaryOp::kDiv,      BinaryOp::kPow,          BinaryOp::kMaximum,
    BinaryOp::kMinimum,  BinaryOp::kReluBackward, BinaryOp::kEqual,
    BinaryOp::kNotEqual, BinaryOp::kLess,         BinaryOp::kLessEqual,
    BinaryOp::kGreater,  BinaryOp::kGreaterEqual};

// ExpectBinaryMatch(): a Binary or BinaryScalar result on both devices, bit
// for bit for integer dtypes and comparisons, within `dtype`'s tolerance
// otherwise.
void ExpectBinaryMatch(const TensorBase& cpu, const TensorBase& gpu,
                       BinaryOp op, DType dtype, const std::string& what) {
  if (WritesBool(op) || (dtype != DType::kF32 && dtype != DType::kF64)) {
    ExpectBitEqual(cpu, gpu, what);
  } else {
    ExpectClose(cpu, gpu, ToleranceOf(dtype), what);
  }
}

TEST_F(CudaBackendTest, BinaryOpsBroadcastAndWorkInPlace) {
  for (DType dtype :
       {DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kU8}) {
    for (BinaryOp op : kNumericBinaryOps) {
      const bool power = op == BinaryOp::kPow;
      for (bool in_place : {false, true}) {
        auto [cpu, gpu] = Both([&](const Device& device) {
          // lhs [33, 20] transposed; rhs a [20, 1] column broadcast.
          TensorBase lhs = Input({33, 20}, dtype, 9, device, power ? 0.5 : -50,
                                 power ? 3 : 50)
                               .Transpose(0, 1);
          const TensorBase rhs =
              Input({20, 1}, dtype, 10, device, power ? 0 : -50, power ? 4 : 50)
                  .Expand({20, 33});
          const DType out_dtype = WritesBool(op) ? DType::kBool : dtype;
          if (in_place && !WritesBool(op)) {
            lhs = lhs.Contiguous();
            GetBackend(device).Binary(op, lhs, lhs, rhs);
            return lhs;
          }
          const TensorBase out =
              TensorBase::Empty(lhs.shape(), out_dtype, device);
          GetBackend(device).Binary(op, out, lhs, rhs);
          return out;
        });
        const std::string what = "binary " +
                                 std::to_string(static_cast<int>(op)) + " " +
                                 Name(dtype) + (in_place ? " in place" : "");
        ExpectBinaryMatch(cpu, gpu, op, dtype, what);
      }
    }
  }
  for (BinaryOp op : {BinaryOp::kLogicalAnd, BinaryOp::kLogicalOr,
                      BinaryOp::kEqual, BinaryOp::kNotEqual}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase lhs = Input({50}, DType::kBool, 11, device);
      const TensorBase rhs = Input({50}, DType::kBool, 12, device);
      const TensorBase out = TensorBase::Empty({50}, DType::kBool, device);
      GetBackend(device).Binary(op, out, lhs, rhs);
      return out;
    });
    ExpectBitEqual(cpu, gpu, "bool binary");
  }
}

// GELU's backward, defined on floating dtypes only: the GPU's erfc and exp
// against the CPU's vector slope (f32) or the same formula (f64), with a
// transposed gradient and a broadcast input, in place, and with a scalar
// on either side.
TEST_F(CudaBackendTest, GeluBackwardMatchesTheCpu) {
  const BinaryOp op = BinaryOp::kGeluBackward;
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (bool in_place : {false, true}) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        TensorBase grad =
            Input({33, 20}, dtype, 15, device, -3, 3).Transpose(0, 1);
        const TensorBase x =
            Input({20, 1}, dtype, 16, device, -6, 6).Expand({20, 33});
        if (in_place) {
          grad = grad.Contiguous();
          GetBackend(device).Binary(op, grad, grad, x);
          return grad;
        }
        const TensorBase out = TensorBase::Empty(grad.shape(), dtype, device);
        GetBackend(device).Binary(op, out, grad, x);
        return out;
      });
      ExpectClose(
          cpu, gpu, ToleranceOf(dtype),
          "gelu_backward " + Name(dtype) + (in_place ? " in place" : ""));
    }
    for (bool lhs : {false, true}) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase in = Input({40, 17}, dtype, 17, device, -6, 6);
        const TensorBase out = TensorBase::Empty(in.shape(), dtype, device);
        GetBackend(device).BinaryScalar(op, out, in, -0.4, lhs);
        return out;
      });
      ExpectClose(
          cpu, gpu, ToleranceOf(dtype),
          "gelu_backward scalar " + Name(dtype) + (lhs ? " lhs" : " rhs"));
    }
  }
}

// Contiguous operands of one shape take the 16-byte vector path when every
// pointer is aligned, and the strided one when not (a view starting one
// element in): both, with tails of every length, and in place. (The 16-bit
// floats take it through the front end: HalfFrontEndOpsRunNatively...)
TEST_F(CudaBackendTest, ContiguousBinaryOpsMatchAlignedOrNot) {
  for (DType dtype :
       {DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kU8}) {
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kMul, BinaryOp::kMaximum,
                        BinaryOp::kLess}) {
      for (int64_t n : {1, 3, 4, 5, 17, 1023, 70001}) {
        for (int64_t start : {0, 1}) {
          for (bool in_place : {false, true}) {
            if (in_place && WritesBool(op)) continue;
            auto [cpu, gpu] = Both([&](const Device& device) {
              TensorBase lhs = Input({n + 1}, dtype, 13, device, -50, 50)
                                   .Narrow(0, start, n);
              const TensorBase rhs = Input({n + 1}, dtype, 14, device, -50, 50)
                                         .Narrow(0, start, n);
              if (in_place) {
                GetBackend(device).Binary(op, lhs, lhs, rhs);
                return lhs;
              }
              const TensorBase out = TensorBase::Empty(
                  {n}, WritesBool(op) ? DType::kBool : dtype, device);
              GetBackend(device).Binary(op, out, lhs, rhs);
              return out;
            });
            ExpectBinaryMatch(
                cpu, gpu, op, dtype,
                "contiguous binary " + std::to_string(static_cast<int>(op)) +
                    " " + Name(dtype) + " n=" + std::to_string(n) + " start=" +
                    std::to_string(start) + (in_place ? " in place" : ""));
          }
        }
      }
    }
  }
}

// Scalars that round in the 16-bit floats and the integers (0.1, 300.7),
// saturate (300.7 in u8, 3e9 in i32 and u8), overflow f16 (70000) or are
// exact everywhere but u8 (-2).
const double kScalarsForCuda[] = {0.1, 300.7, 3e9, -2.0, 70000.0};

TEST_F(CudaBackendTest, BinaryScalarEqualsBinaryWithARankZeroOperand) {
  // On the GPU itself, bit for bit: the scalar converted on the host, then
  // widened in the kernel, as a filled rank-0 operand is.
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16,
                      DType::kI64, DType::kI32, DType::kU8}) {
    for (BinaryOp op : kNumericBinaryOps) {
      for (double scalar : kScalarsForCuda) {
        for (bool lhs : {false, true}) {
          const TensorBase in =
              Input({33, 20}, dtype, 70, kGpu, -50, 50).Transpose(0, 1);
          const TensorBase constant = TensorBase::Empty({}, dtype, kGpu);
          GetBackend(kGpu).Fill(constant, scalar);
          const DType out_dtype = WritesBool(op) ? DType::kBool : dtype;
          const TensorBase expected =
              TensorBase::Empty(in.shape(), out_dtype, kGpu);
          const TensorBase expanded = constant.Expand(in.shape());
          GetBackend(kGpu).Binary(op, expected, lhs ? expanded : in,
                                  lhs ? in : expanded);
          const TensorBase actual =
              TensorBase::Empty(in.shape(), out_dtype, kGpu);
          GetBackend(kGpu).BinaryScalar(op, actual, in, scalar, lhs);
          ExpectBitEqual(expected, actual,
                         "binary_scalar " +
                             std::to_string(static_cast<int>(op)) + " " +
                             Name(dtype) + " " + std::to_string(scalar) +
                             (lhs ? " lhs" : " rhs"));
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, BinaryScalarMatchesTheCpuAndWorksInPlace) {
  for (DType dtype :
       {DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kU8}) {
    for (BinaryOp op : kNumericBinaryOps) {
      for (bool lhs : {false, true}) {
        for (bool in_place : {false, true}) {
          if (in_place && WritesBool(op)) continue;
          auto [cpu, gpu] = Both([&](const Device& device) {
            TensorBase in = Input({40, 17}, dtype, 71, device, 0.5, 50);
            if (in_place) {
              GetBackend(device).BinaryScalar(op, in, in, 0.1, lhs);
              return in;
            }
            const TensorBase out = TensorBase::Empty(
                in.shape(), WritesBool(op) ? DType::kBool : dtype, device);
            GetBackend(device).BinaryScalar(op, out, in, 0.1, lhs);
            return out;
          });
          const std::string what = "binary_scalar " +
                                   std::to_string(static_cast<int>(op)) + " " +
                                   Name(dtype) + (lhs ? " lhs" : " rhs") +
                                   (in_place ? " in place" : "");
          ExpectBinaryMatch(cpu, gpu, op, dtype, what);
        }
      }
    }
  }
  for (BinaryOp op : {BinaryOp::kLogicalAnd, BinaryOp::kLogicalOr,
                      BinaryOp::kEqual, BinaryOp::kNotEqual}) {
    for (double scalar : {0.0, 2.5}) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase in = Input({50}, DType::kBool, 72, device);
        const TensorBase out = TensorBase::Empty({50}, DType::kBool, device);
        GetBackend(device).BinaryScalar(op, out, in, scalar, true);
        return out;
      });
      ExpectBitEqual(cpu, gpu, "bool binary_scalar");
    }
  }
}

// --- The front end on cuda: scalars by value, 16-bit floats natively ---------

TEST_F(CudaBackendTest, ScalarOpsAllocateOnlyTheirResult) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const TensorBase x = Input({256, 64}, dtype, 73, kGpu);
    ResetMemoryStats(kGpu);
    const TensorBase y = ops::BinaryScalar(BinaryOp::kMul, x, 0.1);
    const TensorBase z = ops::ScalarBinary(BinaryOp::kSub, 1, x);
    EXPECT_EQ(2, GetMemoryStats(kGpu).allocation_count) << Name(dtype);
    EXPECT_EQ(dtype, y.dtype());
    ExpectClose(ops::BinaryScalar(BinaryOp::kMul, x.ToDevice(kCpu), 0.1), y,
                ToleranceOf(dtype), "x * 0.1 " + Name(dtype));
    ExpectClose(ops::ScalarBinary(BinaryOp::kSub, 1, x.ToDevice(kCpu)), z,
                ToleranceOf(dtype), "1 - x " + Name(dtype));
  }
}

TEST_F(CudaBackendTest, HalfFrontEndOpsRunNativelyAndMatchTheCpu) {
  // The CPU computes f16/bf16 by an f32 round trip; the GPU in its kernels
  // with one rounding, without converted copies: one allocation per op.
  struct Case {
    std::string name;
    std::function<TensorBase(const TensorBase&, const TensorBase&)> op;
    double rtol_scale;
  };
  const std::vector<Case> cases = {
      {"add",
       [](const TensorBase& a, const TensorBase& b) {
         return ops::Binary(BinaryOp::kAdd, a, b);
       },
       1},
      {"mul",
       [](const TensorBase& a, const TensorBase& b) {
         return ops::Binary(BinaryOp::kMul, a, b);
       },
       1},
      {"exp",
       [](const TensorBase& a, const TensorBase&) {
         return ops::Unary(UnaryOp::kExp, a);
       },
       1},
      {"sum",
       [](const TensorBase& a, const TensorBase&) {
         return ops::Reduce(ReduceOp::kSum, a, 1);
       },
       4},
      {"softmax",
       [](const TensorBase& a, const TensorBase&) {
         return ops::Softmax(a, 1, false);
       },
       2},
      {"matmul",
       [](const TensorBase& a, const TensorBase& b) {
         return ops::Matmul(a, b.Transpose(0, 1));
       },
       4},
  };
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const TensorBase a_cpu = Input({48, 96}, dtype, 74, kCpu, -1, 1);
    const TensorBase b_cpu = Input({48, 96}, dtype, 75, kCpu, -1, 1);
    const TensorBase a_gpu = a_cpu.ToDevice(kGpu);
    const TensorBase b_gpu = b_cpu.ToDevice(kGpu);
    for (const Case& c : cases) {
      const TensorBase expected = c.op(a_cpu, b_cpu);
      ResetMemoryStats(kGpu);
      const TensorBase actual = c.op(a_gpu, b_gpu);
      const std::string what = c.name + " " + Name(dtype);
      EXPECT_EQ(1, GetMemoryStats(kGpu).allocation_count) << what;
      EXPECT_EQ(dtype, actual.dtype()) << what;
      const Tolerance tol = ToleranceOf(dtype);
      ExpectClose(expected, actual, {c.rtol_scale * tol.rtol, 2 * tol.atol},
                  what);
    }
  }
}

TEST_F(CudaBackendTest, WhereBroadcastsEveryOperand) {
  for (DType dtype : kAllDTypes) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase condition =
          Input({1, 30}, DType::kBool, 13, device).Expand({12, 30});
      const TensorBase on_true = Input({12, 30}, dtype, 14, device, -9, 9);
      const TensorBase on_false =
          Input({30, 12}, dtype, 15, device, -9, 9).Transpose(0, 1);
      const TensorBase out = TensorBase::Empty({12, 30}, dtype, device);
      GetBackend(device).Where(out, condition, on_true, on_false);
      return out;
    });
    ExpectBitEqual(cpu, gpu, "where " + Name(dtype));
  }
}

TEST_F(CudaBackendTest, EmptyTensorsLaunchNothing) {
  const TensorBase empty = TensorBase::Empty({0, 5}, DType::kF32, kGpu);
  const TensorBase out = TensorBase::Empty({0, 5}, DType::kF32, kGpu);
  Backend& gpu = GetBackend(kGpu);
  gpu.Fill(out, 1);
  gpu.Copy(out, empty);
  gpu.Unary(UnaryOp::kExp, out, empty, 0, 0);
  gpu.Binary(BinaryOp::kAdd, out, empty, empty);
  gpu.Softmax(out, empty, 1, false);
  gpu.FillRandom(out, RandomDistribution::kNormal, 1, 0, 0, 1);
  const TensorBase sums = TensorBase::Empty({1, 5}, DType::kF32, kGpu);
  gpu.Reduce(ReduceOp::kSum, sums, empty, 0);
  EXPECT_EQ(std::vector<double>(5, 0.0), Doubles(sums));
  EXPECT_EQ(0.0, gpu.AbsPowerSum(empty, 2));
}

}  // namespace
}  // namespace kindling::cuda_test
