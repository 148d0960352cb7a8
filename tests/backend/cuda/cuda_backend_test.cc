// Every CudaBackend kernel against the CPU backend on the same inputs.
//
// Each case builds its inputs from fixed seeds on the host, runs the same
// Backend call on cpu and on cuda:0, and compares the results: bit for bit
// where the contract is exact (copies and conversions, fills, index moves,
// Philox fills and dropout masks, integer arithmetic), within a per-dtype
// tolerance elsewhere. Needs a GPU: without one every test skips saying so.
#include "kindling/backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/index_ops.h"
#include "kindling/tensor/layer_norm_ops.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/gpu_test_support.h"
#include "tests/backend/cuda/test_kernels.h"

namespace kindling {
namespace {

const Device kCpu = Device::Cpu();
const Device kGpu = Device::Cuda(0);

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override { KINDLING_NEED_CUDA_DEVICES(1); }
};

// Input(): a tensor of `shape` with values from `seed` (uniform in [low,
// high), rounded to integers for integer dtypes), on `device`.
TensorBase Input(const Shape& shape, DType dtype, uint32_t seed,
                 const Device& device, double low = -2, double high = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> values(shape.num_elements());
  const bool integer =
      dtype == DType::kI64 || dtype == DType::kI32 || dtype == DType::kU8;
  for (double& value : values) {
    value = integer ? std::floor(uniform(rng)) : uniform(rng);
  }
  if (dtype == DType::kBool) {
    for (double& value : values) value = value > 0 ? 1 : 0;
  }
  const TensorBase f64 =
      TensorBase::FromHost(values.data(), shape, DType::kF64, kCpu);
  return f64.To(dtype).ToDevice(device);
}

// Bytes() is the row-major bytes of `tensor`, read back to the host.
std::vector<uint8_t> Bytes(const TensorBase& tensor) {
  std::vector<uint8_t> bytes(tensor.numel() * tensor.element_size());
  tensor.ToDevice(kCpu).CopyToHost(bytes.data());
  return bytes;
}

// Doubles() is `tensor`'s values as f64 on the host (converted on the CPU).
std::vector<double> Doubles(const TensorBase& tensor) {
  std::vector<double> values(tensor.numel());
  tensor.ToDevice(kCpu).To(DType::kF64).CopyToHost(values.data());
  return values;
}

struct Tolerance {
  double rtol;
  double atol;
};

Tolerance ToleranceOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {2e-5, 1e-6};
    case DType::kF64:
      return {1e-12, 1e-14};
    case DType::kF16:
      return {2e-3, 1e-3};
    case DType::kBF16:
      return {1.6e-2, 1e-2};
    default:
      return {0, 0};
  }
}

// SumTolerance(): how far two f64 sums of the same `n` terms per line,
// added in different orders (the CPU's lanes and blocks, the GPU's chunks),
// may be apart. A sum's rounding error follows its partial sums, not its
// result: the terms of `values` are random with root mean square `rms`, so
// the k-th addition rounds a partial sum of size ~rms * sqrt(k) by a random
// amount of standard deviation ~u * rms * sqrt(k / 12), and the n errors add
// up to a standard deviation of about u * rms * n / sqrt(24) for a
// one-after-another sum (blocked and pairwise orders do better). Six of
// them, taken for each side, bound the difference. (A line of 700001 terms
// in [-100, 100] sums to ~100 next to partial sums of ~5e4, so a tolerance
// relative to the result, 1e-12 * 100, failed on an H100 at 1.4e-10.)
Tolerance SumTolerance(const std::vector<double>& values, int64_t n) {
  double squares = 0;
  for (double v : values) squares += v * v;
  const double rms = std::sqrt(squares / static_cast<double>(values.size()));
  const double u = std::ldexp(1.0, -53);
  const double sd = u * rms * static_cast<double>(n) / std::sqrt(24.0);
  return {0, 2 * 6 * sd};
}

void ExpectClose(const TensorBase& cpu, const TensorBase& gpu, Tolerance tol,
                 const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  ASSERT_EQ(kGpu, gpu.device()) << what;
  const std::vector<double> a = Doubles(cpu);
  const std::vector<double> b = Doubles(gpu);
  int failures = 0;
  for (size_t i = 0; i < a.size() && failures < 5; ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] == b[i]) continue;
    const double limit = tol.atol + tol.rtol * std::fabs(a[i]);
    if (!(std::fabs(a[i] - b[i]) <= limit)) {
      ADD_FAILURE() << what << ": element " << i << " cpu " << a[i] << " cuda "
                    << b[i];
      ++failures;
    }
  }
}

void ExpectBitEqual(const TensorBase& cpu, const TensorBase& gpu,
                    const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  const std::vector<uint8_t> a = Bytes(cpu);
  const std::vector<uint8_t> b = Bytes(gpu);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      ADD_FAILURE() << what << ": byte " << i << " of element "
                    << i / cpu.element_size() << " differs";
      return;
    }
  }
}

// Both() runs `compute` on each device and returns (cpu, gpu) results.
using Compute = std::function<TensorBase(const Device&)>;
std::pair<TensorBase, TensorBase> Both(const Compute& compute) {
  return {compute(kCpu), compute(kGpu)};
}

std::string Name(DType dtype) { return std::string(DTypeName(dtype)); }

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
  if (IsComparison(op) || (dtype != DType::kF32 && dtype != DType::kF64)) {
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
          const DType out_dtype = IsComparison(op) ? DType::kBool : dtype;
          if (in_place && !IsComparison(op)) {
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
            if (in_place && IsComparison(op)) continue;
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
                  {n}, IsComparison(op) ? DType::kBool : dtype, device);
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
          const DType out_dtype = IsComparison(op) ? DType::kBool : dtype;
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
          if (in_place && IsComparison(op)) continue;
          auto [cpu, gpu] = Both([&](const Device& device) {
            TensorBase in = Input({40, 17}, dtype, 71, device, 0.5, 50);
            if (in_place) {
              GetBackend(device).BinaryScalar(op, in, in, 0.1, lhs);
              return in;
            }
            const TensorBase out = TensorBase::Empty(
                in.shape(), IsComparison(op) ? DType::kBool : dtype, device);
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

TEST_F(CudaBackendTest, ReductionsMatchAlongEveryAxis) {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean,   ReduceOp::kMax,
                          ReduceOp::kMin, ReduceOp::kArgMax, ReduceOp::kArgMin};
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI64, DType::kI32}) {
    for (ReduceOp op : ops) {
      for (int axis = 0; axis < 3; ++axis) {
        for (bool transposed : {false, true}) {
          auto [cpu, gpu] = Both([&](const Device& device) {
            // Integer-valued inputs in a small range make ties for argmax.
            TensorBase in = Input({7, 300, 5}, dtype, 16, device, -20, 20);
            if (transposed)
              in = in.Transpose(0, 2).Contiguous().Transpose(0, 2);
            Shape out_shape = in.shape();
            out_shape[axis] = 1;
            const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
            const TensorBase out =
                TensorBase::Empty(out_shape, arg ? DType::kI64 : dtype, device);
            GetBackend(device).Reduce(op, out, in, axis);
            return out;
          });
          const std::string what =
              "reduce " + std::to_string(static_cast<int>(op)) + " " +
              Name(dtype) + " axis " + std::to_string(axis) +
              (transposed ? " transposed" : "");
          ExpectClose(cpu, gpu, ToleranceOf(cpu.dtype()), what);
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, LongRowReductionsAndNaNs) {
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kArgMax, ReduceOp::kArgMin}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      TensorBase in = Input({3, 100003}, DType::kF32, 17, device);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      // A NaN in row 1 at two places: the first one wins.
      const TensorBase nans =
          TensorBase::FromHost(&nan, {}, DType::kF32, kCpu).ToDevice(device);
      GetBackend(device).Copy(
          in.Narrow(0, 1, 1).Narrow(1, 777, 1).Squeeze(0).Squeeze(0), nans);
      GetBackend(device).Copy(
          in.Narrow(0, 1, 1).Narrow(1, 9999, 1).Squeeze(0).Squeeze(0), nans);
      const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
      const TensorBase out =
          TensorBase::Empty({3, 1}, arg ? DType::kI64 : DType::kF32, device);
      GetBackend(device).Reduce(op, out, in, 1);
      return out;
    });
    ExpectClose(cpu, gpu, {1e-6, 1e-4}, "long row reduce");
  }
}

TEST_F(CudaBackendTest, VeryLongLinesSplitOverBlocksMatchTheCpu) {
  // Few lines far longer than a block: each is split into chunks reduced by
  // separate blocks and combined in chunk order. Planted values: the extreme
  // twice (the first wins for the arg ops), and a strictly larger one in
  // the last, shorter chunk in the "last" variant, so a dropped chunk shows.
  struct Case {
    Shape shape;
    int axis;
    bool extreme_in_last_chunk;
  };
  const Case cases[] = {{{1, 5000003}, 1, false},
                        {{1, 5000003}, 1, true},
                        {{3, 400001}, 1, false},
                        {{5000003, 3}, 0, true}};  // strided lines
  for (const Case& c : cases) {
    const int64_t n = c.shape[c.axis];
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax,
                        ReduceOp::kMin, ReduceOp::kArgMax, ReduceOp::kArgMin}) {
      const bool low = op == ReduceOp::kMin || op == ReduceOp::kArgMin;
      auto [cpu, gpu] = Both([&](const Device& device) {
        TensorBase in = Input(c.shape, DType::kF32, 31, device);
        const auto plant = [&](int64_t at, float value) {
          const TensorBase scalar =
              TensorBase::FromHost(&value, {}, DType::kF32, kCpu)
                  .ToDevice(device);
          TensorBase cell = in.Narrow(c.axis, at, 1).Narrow(1 - c.axis, 0, 1);
          GetBackend(device).Copy(cell.Squeeze(0).Squeeze(0), scalar);
        };
        plant(333333, low ? -5.0f : 5.0f);
        plant(n - 7, low ? -5.0f : 5.0f);
        if (c.extreme_in_last_chunk) plant(n - 2, low ? -6.0f : 6.0f);
        const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
        Shape out_shape = c.shape;
        out_shape[c.axis] = 1;
        const TensorBase out = TensorBase::Empty(
            out_shape, arg ? DType::kI64 : DType::kF32, device);
        GetBackend(device).Reduce(op, out, in, c.axis);
        return out;
      });
      const std::string what =
          "split reduce op " + std::to_string(static_cast<int>(op)) + " " +
          c.shape.ToString() + " axis " + std::to_string(c.axis);
      if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
        ExpectClose(cpu, gpu, {1e-6, 1e-6}, what);
      } else {
        ExpectBitEqual(cpu, gpu, what);
      }
    }
  }
  // NaNs in two chunks: the first NaN wins max and argmax.
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kArgMax}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      TensorBase in = Input({1, 3000001}, DType::kF32, 33, device);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      const TensorBase nans =
          TensorBase::FromHost(&nan, {}, DType::kF32, kCpu).ToDevice(device);
      for (int64_t at : {int64_t{2000000}, int64_t{1000}}) {
        GetBackend(device).Copy(in.Narrow(1, at, 1).Squeeze(0).Squeeze(0),
                                nans);
      }
      const TensorBase out = TensorBase::Empty(
          {1, 1}, op == ReduceOp::kArgMax ? DType::kI64 : DType::kF32, device);
      GetBackend(device).Reduce(op, out, in, 1);
      return out;
    });
    ExpectBitEqual(cpu, gpu,
                   "split NaN " + std::to_string(static_cast<int>(op)));
  }
  // Integer sums wrap identically; f64 sums agree to rounding.
  for (DType dtype : {DType::kI64, DType::kF64}) {
    const Shape shape = {2, 700001};
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase in = Input(shape, dtype, 32, device, -100, 100);
      const TensorBase out = TensorBase::Empty({2, 1}, dtype, device);
      GetBackend(device).Reduce(ReduceOp::kSum, out, in, 1);
      return out;
    });
    const Tolerance tol =
        dtype == DType::kF64
            ? SumTolerance(Doubles(Input(shape, dtype, 32, kCpu, -100, 100)),
                           shape[1])
            : ToleranceOf(dtype);
    ExpectClose(cpu, gpu, tol, "split sum " + Name(dtype));
  }
  // f16: the split sums accumulate in f32, as the CPU's f32 sum of the
  // widened values does (compare within f16 rounding).
  const TensorBase half_cpu = Input({1, 2000001}, DType::kF16, 34, kCpu);
  const TensorBase expected = TensorBase::Empty({1, 1}, DType::kF32, kCpu);
  GetBackend(kCpu).Reduce(ReduceOp::kSum, expected, half_cpu.To(DType::kF32),
                          1);
  const TensorBase half_sum = TensorBase::Empty({1, 1}, DType::kF16, kGpu);
  GetBackend(kGpu).Reduce(ReduceOp::kSum, half_sum, half_cpu.ToDevice(kGpu), 1);
  ExpectClose(expected.To(DType::kF16), half_sum, {2e-3, 0.5}, "split f16 sum");
}

TEST_F(CudaBackendTest, HalfReductionsAccumulateInFloat) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    // The CPU computes 16-bit reductions in f32: compare with that.
    const TensorBase in_cpu = Input({64, 4000}, dtype, 18, kCpu);
    const TensorBase widened = in_cpu.To(DType::kF32);
    const TensorBase expected = TensorBase::Empty({64, 1}, DType::kF32, kCpu);
    GetBackend(kCpu).Reduce(ReduceOp::kSum, expected, widened, 1);
    const TensorBase in_gpu = in_cpu.ToDevice(kGpu);
    const TensorBase out = TensorBase::Empty({64, 1}, dtype, kGpu);
    GetBackend(kGpu).Reduce(ReduceOp::kSum, out, in_gpu, 1);
    ExpectClose(expected.To(dtype), out, ToleranceOf(dtype), "half sum");
  }
}

TEST_F(CudaBackendTest, SoftmaxAndLogSoftmaxAlongLastAndMiddleAxes) {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (bool log : {false, true}) {
      // [64, 5000] and [3, 7, 1028] along the last axis take the f32 rows
      // read once as float4; [5, 20000] is too long for its cache.
      for (const Shape& shape :
           {Shape{64, 5000}, Shape{300, 10}, Shape{6, 70, 9}, Shape{3, 7, 1028},
            Shape{5, 20000}}) {
        for (int axis = 0; axis < shape.rank(); ++axis) {
          auto [cpu, gpu] = Both([&](const Device& device) {
            const TensorBase in = Input(shape, dtype, 19, device, -30, 30);
            const TensorBase out = TensorBase::Empty(shape, dtype, device);
            GetBackend(device).Softmax(out, in, axis, log);
            return out;
          });
          ExpectClose(cpu, gpu, {1e-5, 1e-6},
                      "softmax " + Name(dtype) + " " + shape.ToString() +
                          " axis " + std::to_string(axis));
        }
      }
    }
  }
  // A row of -inf stays finite (max treated as 0).
  auto [cpu, gpu] = Both([&](const Device& device) {
    const double values[] = {-INFINITY, -INFINITY, -INFINITY, 1, 2, 3};
    const TensorBase in =
        TensorBase::FromHost(values, {2, 3}, DType::kF64, kCpu)
            .To(DType::kF32)
            .ToDevice(device);
    const TensorBase out = TensorBase::Empty({2, 3}, DType::kF32, device);
    GetBackend(device).Softmax(out, in, 1, false);
    return out;
  });
  ExpectClose(cpu, gpu, {1e-6, 1e-7}, "softmax of -inf");
  // The same, and a NaN, on rows of the float4 path; and a view whose rows
  // start one element in (not 16-byte aligned: the general path).
  for (int64_t start : {0, 1}) {
    for (bool log : {false, true}) {
      auto [cpu_rows, gpu_rows] = Both([&](const Device& device) {
        std::vector<double> values(3 * 64 + 1);
        for (size_t i = 0; i < values.size(); ++i) values[i] = i % 7 - 3.0;
        for (int k = 0; k < 64; ++k) values[start + k] = -INFINITY;
        values[start + 64 + 5] = NAN;
        const TensorBase in =
            TensorBase::FromHost(values.data(), {3 * 64 + 1}, DType::kF64, kCpu)
                .To(DType::kF32)
                .ToDevice(device)
                .Narrow(0, start, 3 * 64)
                .Reshape({3, 64});
        const TensorBase out = TensorBase::Empty({3, 64}, DType::kF32, device);
        GetBackend(device).Softmax(out, in, 1, log);
        return out;
      });
      ExpectClose(cpu_rows, gpu_rows, {1e-6, 1e-7},
                  "softmax rows with -inf and NaN, start " +
                      std::to_string(start) + (log ? " log" : ""));
    }
  }
}

struct MatmulCase {
  std::string name;
  std::function<TensorBase(const Device&)> lhs;
  std::function<TensorBase(const Device&)> rhs;
};

TEST_F(CudaBackendTest, MatmulMatchesForEveryLayout) {
  const DType f32 = DType::kF32;
  const std::vector<MatmulCase> cases = {
      {"plain",
       [&](const Device& d) {
         return Input({33, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({47, 29}, f32, 2, d);
       }},
      {"transposed lhs",
       [&](const Device& d) {
         return Input({47, 33}, f32, 1, d).Transpose(0, 1);
       },
       [&](const Device& d) {
         return Input({47, 29}, f32, 2, d);
       }},
      {"transposed rhs",
       [&](const Device& d) {
         return Input({33, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({29, 47}, f32, 2, d).Transpose(0, 1);
       }},
      {"sliced (not GEMM-compatible)",
       [&](const Device& d) {
         return Input({33, 94}, f32, 1, d).Slice(1, 0, 94, 2);
       },
       [&](const Device& d) {
         return Input({47, 58}, f32, 2, d).Slice(1, 1, 58, 2);
       }},
      {"linear layer (shared rhs)",
       [&](const Device& d) {
         return Input({4, 33, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({47, 29}, f32, 2, d).Unsqueeze(0).Expand({4, 47, 29});
       }},
      {"batched",
       [&](const Device& d) {
         return Input({3, 2, 33, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({3, 2, 29, 47}, f32, 2, d).Transpose(2, 3);
       }},
      {"batch broadcast that does not collapse",
       [&](const Device& d) {
         return Input({3, 1, 33, 47}, f32, 1, d).Expand({3, 2, 33, 47});
       },
       [&](const Device& d) {
         return Input({3, 2, 47, 29}, f32, 2, d);
       }},
      {"vector",
       [&](const Device& d) {
         return Input({1, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({47, 1}, f32, 2, d);
       }},
  };
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI64, DType::kI32}) {
    for (const MatmulCase& c : cases) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase lhs = c.lhs(device).To(dtype);
        const TensorBase rhs = c.rhs(device).To(dtype);
        Shape out_shape = lhs.shape();
        out_shape[out_shape.rank() - 1] = rhs.shape()[rhs.rank() - 1];
        const TensorBase out = TensorBase::Empty(out_shape, dtype, device);
        GetBackend(device).Matmul(out, lhs, rhs);
        return out;
      });
      ExpectClose(cpu, gpu, {dtype == DType::kF32 ? 1e-4 : 1e-11, 1e-5},
                  "matmul " + c.name + " " + Name(dtype));
    }
  }
}

TEST_F(CudaBackendTest, HalfMatmulAccumulatesInFloat) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const TensorBase lhs = Input({64, 256}, dtype, 20, kCpu, -1, 1);
    const TensorBase rhs = Input({256, 48}, dtype, 21, kCpu, -1, 1);
    const TensorBase expected = TensorBase::Empty({64, 48}, DType::kF32, kCpu);
    GetBackend(kCpu).Matmul(expected, lhs.To(DType::kF32), rhs.To(DType::kF32));
    const TensorBase out = TensorBase::Empty({64, 48}, dtype, kGpu);
    GetBackend(kGpu).Matmul(out, lhs.ToDevice(kGpu), rhs.ToDevice(kGpu));
    ExpectClose(expected.To(dtype), out, {2 * ToleranceOf(dtype).rtol, 0.05},
                "half matmul " + Name(dtype));
  }
}

TEST_F(CudaBackendTest, MatmulWithEmptyInnerDimWritesZeros) {
  const TensorBase lhs = TensorBase::Empty({3, 0}, DType::kF32, kGpu);
  const TensorBase rhs = TensorBase::Empty({0, 4}, DType::kF32, kGpu);
  const TensorBase out = TensorBase::Empty({3, 4}, DType::kF32, kGpu);
  GetBackend(kGpu).Fill(out, 7);
  GetBackend(kGpu).Matmul(out, lhs, rhs);
  EXPECT_EQ(std::vector<double>(12, 0.0), Doubles(out));
}

TensorBase Indices(const std::vector<int64_t>& values, const Shape& shape,
                   DType dtype, const Device& device) {
  return TensorBase::FromHost(values.data(), shape, DType::kI64, kCpu)
      .To(dtype)
      .ToDevice(device);
}

TEST_F(CudaBackendTest, IndexSelectGatherAndScatterAdd) {
  for (DType index_dtype : {DType::kI64, DType::kI32}) {
    for (DType dtype :
         {DType::kF32, DType::kF64, DType::kF16, DType::kI64, DType::kU8}) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase in = Input({9, 6, 5}, dtype, 22, device, -50, 50)
                                  .Transpose(0, 2);  // [5, 6, 9]
        const TensorBase index =
            Indices({5, 0, 5, 8, 1, 2, 2}, {7}, index_dtype, device);
        const TensorBase out = TensorBase::Empty({5, 6, 7}, dtype, device);
        GetBackend(device).IndexSelect(out, in, 2, index);
        return out;
      });
      ExpectBitEqual(cpu, gpu, "index_select " + Name(dtype));
    }
    std::vector<int64_t> picks(4 * 3 * 6);
    std::mt19937 rng(23);
    for (int64_t& pick : picks) pick = rng() % 8;
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase in = Input({4, 8, 6}, DType::kF32, 24, device);
      const TensorBase index = Indices(picks, {4, 3, 6}, index_dtype, device);
      const TensorBase out = TensorBase::Empty({4, 3, 6}, DType::kF32, device);
      GetBackend(device).Gather(out, in, 1, index);
      return out;
    });
    ExpectBitEqual(cpu, gpu, "gather");
    for (DType dtype : {DType::kF32, DType::kF64}) {
      auto [cpu_sum, gpu_sum] = Both([&](const Device& device) {
        const TensorBase src =
            Input({6, 3, 4}, dtype, 25, device).Transpose(0, 2);  // [4, 3, 6]
        const TensorBase index = Indices(picks, {4, 3, 6}, index_dtype, device);
        const TensorBase out = Input({4, 8, 6}, dtype, 26, device);
        GetBackend(device).ScatterAdd(out, 1, index, src);
        return out;
      });
      ExpectClose(cpu_sum, gpu_sum, ToleranceOf(dtype), "scatter_add");
    }
  }
}

// ExpectFault() checks that the next synchronization reports `message`
// (and only once).
void ExpectFault(const std::string& message) {
  const absl::Status status = cuda::SynchronizeCudaDevice(0);
  EXPECT_EQ(absl::StatusCode::kOutOfRange, status.code()) << status;
  EXPECT_NE(std::string(status.message()).find(message), std::string::npos)
      << status;
  EXPECT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
}

TEST_F(CudaBackendTest, OutOfRangeIndicesSurfaceAtTheNextSynchronize) {
  ASSERT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
  // The table is rows 0..3 of a larger tensor of values in [1, 2): a kernel
  // reading a bad row would find non-zero data there, not the zeros the
  // guarded kernels write.
  const TensorBase big = Input({16, 3}, DType::kF32, 27, kGpu, 1, 2);
  const TensorBase table = big.Narrow(0, 0, 4);
  const std::vector<double> values = Doubles(table);

  // index_select's own check (no CheckIndices first).
  const TensorBase out = TensorBase::Empty({3, 3}, DType::kF32, kGpu);
  GetBackend(kGpu).IndexSelect(out, table, 0,
                               Indices({1, 9, 2}, {3}, DType::kI64, kGpu));
  ExpectFault("index_select: index 9 out of range [0, 4) on cuda:0");
  const std::vector<double> rows = Doubles(out);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(values[3 + j], rows[j]);
    EXPECT_EQ(0.0, rows[3 + j]);
    EXPECT_EQ(values[6 + j], rows[6 + j]);
  }

  // Through the front end, which leaves the check to these kernels
  // (IndexKernelsCheckRange): the same report, one launch.
  EXPECT_TRUE(GetBackend(kGpu).IndexKernelsCheckRange());
  const TensorBase picked =
      ops::IndexSelect(table, 0, Indices({4}, {1}, DType::kI64, kGpu));
  ExpectFault("index_select: index 4 out of range [0, 4) on cuda:0");
  EXPECT_EQ(std::vector<double>(3, 0.0), Doubles(picked));

  // gather with a transposed (strided) i32 index holding one bad entry.
  const std::vector<int64_t> picks = {0, 3, 1, 2, 1, 7, 1, 2, 2, 0, 1, 3};
  const TensorBase index =
      Indices(picks, {3, 4}, DType::kI32, kGpu).Transpose(0, 1);  // [4, 3]
  const TensorBase gathered = TensorBase::Empty({4, 3}, DType::kF32, kGpu);
  GetBackend(kGpu).Gather(gathered, table, 0, index);
  ExpectFault("gather: index 7 out of range [0, 4) on cuda:0");
  const std::vector<double> got = Doubles(gathered);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      const int64_t pick = picks[j * 4 + i];
      EXPECT_EQ(pick < 4 ? values[pick * 3 + j] : 0.0, got[i * 3 + j])
          << i << "," << j;
    }
  }

  // scatter_add leaves the target of a bad index alone.
  const TensorBase target = Input({4, 3}, DType::kF32, 28, kGpu);
  const std::vector<double> before = Doubles(target);
  const TensorBase ones = TensorBase::Empty({2, 3}, DType::kF32, kGpu);
  GetBackend(kGpu).Fill(ones, 1.0);
  const std::vector<int64_t> rows_to = {3, 5, 0, 1, 1, 1};
  GetBackend(kGpu).ScatterAdd(
      target, 0, Indices(rows_to, {2, 3}, DType::kI64, kGpu), ones);
  ExpectFault("scatter_add: index 5 out of range [0, 4) on cuda:0");
  std::vector<double> want = before;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      const int64_t row = rows_to[i * 3 + j];
      if (row < 4) want[row * 3 + j] += 1.0;
    }
  }
  const std::vector<double> after = Doubles(target);
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_FLOAT_EQ(static_cast<float>(want[k]), static_cast<float>(after[k]))
        << k;
  }

  // CheckIndices alone (one_hot's check), i32 with a negative entry.
  GetBackend(kGpu).CheckIndices(Indices({0, -2, 1}, {3}, DType::kI32, kGpu), 3,
                                "one_hot");
  ExpectFault("one_hot: index -2 out of range [0, 3) on cuda:0");
}

TEST_F(CudaBackendTest, PhiloxFillsAreBitIdenticalToTheCpu) {
  const DType dtypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};
  const RandomDistribution distributions[] = {RandomDistribution::kUniform,
                                              RandomDistribution::kNormal,
                                              RandomDistribution::kBernoulli};
  for (DType dtype : dtypes) {
    for (RandomDistribution distribution : distributions) {
      for (int64_t count : {1, 7, 4099, 300001}) {
        auto [cpu, gpu] = Both([&](const Device& device) {
          const TensorBase out = TensorBase::Empty({count}, dtype, device);
          const double a =
              distribution == RandomDistribution::kBernoulli ? 0.3 : -1.5;
          const double b =
              distribution == RandomDistribution::kBernoulli ? 1 / 0.7 : 2.5;
          GetBackend(device).FillRandom(out, distribution, 0x123456789abcdefull,
                                        0xfffffffffffffff0ull, a, b);
          return out;
        });
        const std::string what =
            "fill_random " + Name(dtype) + " dist " +
            std::to_string(static_cast<int>(distribution)) + " n " +
            std::to_string(count);
        if (dtype == DType::kF64 &&
            distribution == RandomDistribution::kNormal) {
          // libm and CUDA may round log/sin/cos differently in the last bit.
          ExpectClose(cpu, gpu, {1e-14, 1e-15}, what);
        } else {
          ExpectBitEqual(cpu, gpu, what);
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, DropoutIsBitIdenticalOnStridedInputs) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase in = Input({301, 17}, dtype, 27, device).Transpose(0, 1);
      const TensorBase out = TensorBase::Empty(in.shape(), dtype, device);
      GetBackend(device).Dropout(out, in, 0.25, 42, 1000);
      return out;
    });
    ExpectBitEqual(cpu, gpu, "dropout " + Name(dtype));
  }
}

TEST_F(CudaBackendTest, SgdAndAdamStepsMatchTheCpu) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (int variant = 0; variant < 4; ++variant) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const Shape shape{1000, 7};
        const TensorBase param = Input(shape, dtype, 28, device);
        const TensorBase m = Input(shape, dtype, 29, device, 0, 0.1);
        const TensorBase v = Input(shape, dtype, 30, device, 0, 0.1);
        const TensorBase max_v = Input(shape, dtype, 31, device, 0, 0.1);
        for (int step = 1; step <= 3; ++step) {
          const TensorBase grad = Input(shape, dtype, 40 + step, device);
          if (variant < 2) {
            Backend::SgdUpdateScalars s;
            s.lr = 0.1;
            s.momentum = 0.9;
            s.dampening = 0.1;
            s.weight_decay = 0.01;
            s.nesterov = variant == 1;
            s.first_step = step == 1;
            GetBackend(device).SgdUpdate(param, grad, m, s);
          } else {
            Backend::AdamUpdateScalars s;
            s.lr = 0.01;
            s.beta1 = 0.9;
            s.beta2 = 0.999;
            s.eps = 1e-8;
            s.weight_decay = 0.05;
            s.decoupled_weight_decay = variant == 3;
            s.amsgrad = variant == 3;
            s.step_size = s.lr / (1 - std::pow(s.beta1, step));
            s.bias_correction2_sqrt = std::sqrt(1 - std::pow(s.beta2, step));
            GetBackend(device).AdamUpdate(param, grad, m, v, max_v, s);
          }
        }
        return param;
      });
      ExpectClose(
          cpu, gpu, ToleranceOf(dtype),
          "optimizer variant " + std::to_string(variant) + " " + Name(dtype));
    }
  }
}

TEST_F(CudaBackendTest, AbsPowerSumAndScaleClamp) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16}) {
    for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
      const TensorBase cpu = Input({123457}, dtype, 50, kCpu);
      const double expected = GetBackend(kCpu).AbsPowerSum(cpu, p);
      const double actual = GetBackend(kGpu).AbsPowerSum(cpu.ToDevice(kGpu), p);
      EXPECT_NEAR(expected, actual, 1e-9 * std::fabs(expected))
          << Name(dtype) << " p " << p;
    }
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase inout = Input({10007}, dtype, 51, device);
      GetBackend(device).ScaleClamp(inout, 0.75, 1.0);
      return inout;
    });
    ExpectClose(cpu, gpu, ToleranceOf(dtype), "scale_clamp " + Name(dtype));
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

// --- Layer norm (LayerNorm, LayerNormBackward) ------------------------------

// LayerNormOutputs: everything the two kernels write for one case.
struct LayerNormOutputs {
  TensorBase out, mean, rstd, input_grad, gamma_grad, beta_grad;
};

// RunLayerNorm(): forward and backward (every gradient) of [rows, d] inputs
// from fixed seeds on `device`, computed in `dtype` (statistics in f32, or
// f64 for f64); gamma and beta undefined unless `affine`.
LayerNormOutputs RunLayerNorm(int64_t rows, int64_t d, DType dtype, bool affine,
                              const Device& device) {
  const DType statistics = dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  const TensorBase x = Input({rows, d}, dtype, 81, device, 3, 7);
  const TensorBase dy = Input({rows, d}, dtype, 82, device);
  const TensorBase gamma =
      affine ? Input({d}, dtype, 83, device, 0.5, 1.5) : TensorBase();
  const TensorBase beta = affine ? Input({d}, dtype, 84, device) : TensorBase();
  LayerNormOutputs o;
  o.out = TensorBase::Empty({rows, d}, dtype, device);
  o.mean = TensorBase::Empty({rows}, statistics, device);
  o.rstd = TensorBase::Empty({rows}, statistics, device);
  o.input_grad = TensorBase::Empty({rows, d}, dtype, device);
  o.gamma_grad = TensorBase::Empty({d}, dtype, device);
  o.beta_grad = TensorBase::Empty({d}, dtype, device);
  Backend& backend = GetBackend(device);
  backend.LayerNorm(o.out, o.mean, o.rstd, x, gamma, beta, 1e-5);
  backend.LayerNormBackward(o.input_grad, o.gamma_grad, o.beta_grad, dy, x,
                            o.mean, o.rstd, gamma);
  return o;
}

// ParameterGradTolerance(): how far the GPU's f32 dgamma/dbeta may be from
// the CPU's, which sums the same terms in double (so it is the exactly
// rounded sum, up to 1 ulp). The GPU sums in f32: each of a chunk's 8 row
// lanes adds about n = rows_per_chunk / 8 terms one after another, and the
// k-th addition rounds a partial sum of size ~sigma * sqrt(k), so a lane's
// error has a standard deviation of about u * sigma * n / sqrt(2)
// (u = 2^-24); the 8 * chunks lanes' errors add at random, giving
// u * sigma * sqrt(rows * rows_per_chunk / 16). The chunking mirrors
// layer_norm.cu (at least 32 rows a chunk, at most 128 chunks), so for large
// R the error grows like R, not sqrt(R). Terms are dy * xhat with |dy| <= 2
// and |xhat| <= 1.8 for these inputs: sigma <= 4. Six standard deviations
// make a false failure over ~10^6 compared values unlikely. (A numpy replay
// of the kernel's order over these shapes gave at most 4.3e-4 at
// [70000, 1025], where this allows 2.2e-3 and the plain 1e-5 + 1e-4 * |x|
// failed 3 of 2050 values.)
Tolerance ParameterGradTolerance(int64_t rows, DType dtype, Tolerance tol) {
  if (dtype != DType::kF32) return tol;
  const int64_t min_rows = 32, max_chunks = 128;
  int64_t chunks = std::min((rows + min_rows - 1) / min_rows, max_chunks);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  const double u = std::ldexp(1.0, -24);
  const double sigma = 4;
  const double sd =
      u * sigma * std::sqrt(static_cast<double>(rows) * rows_per_chunk / 16);
  return {tol.rtol, tol.atol + 6 * sd};
}

void ExpectLayerNormClose(const LayerNormOutputs& cpu,
                          const LayerNormOutputs& gpu, Tolerance tol,
                          const std::string& what) {
  ExpectClose(cpu.out, gpu.out, tol, what + " out");
  ExpectClose(cpu.mean, gpu.mean, tol, what + " mean");
  ExpectClose(cpu.rstd, gpu.rstd, tol, what + " rstd");
  ExpectClose(cpu.input_grad, gpu.input_grad, tol, what + " input_grad");
  const Tolerance sums =
      ParameterGradTolerance(cpu.out.shape()[0], cpu.out.dtype(), tol);
  ExpectClose(cpu.gamma_grad, gpu.gamma_grad, sums, what + " gamma_grad");
  ExpectClose(cpu.beta_grad, gpu.beta_grad, sums, what + " beta_grad");
}

// Rows of every kernel path: a warp per row with 1 to 32 elements a lane
// (D = 1 .. 1024), a block per row with the row cached in shared memory
// (1025, 4096; f32 rows of a multiple of 4 read as float4: 4096, 2052) and
// without (12000 f32 / 6000 f64 elements exceed the
// cache), more rows than 32 * 128 (the parameter chunks' cap), and more
// rows than one grid covers on each path (the grid-stride loops, reusing
// the shared cache and scratch across rows).
TEST_F(CudaBackendTest, LayerNormMatchesTheCpuOnEveryPath) {
  struct Case {
    int64_t rows;
    int64_t d;
  };
  const Case cases[] = {{5, 1},      {9, 7},        {3, 33},    {40, 100},
                        {17, 1000},  {6, 1024},     {7, 1025},  {33, 4096},
                        {9, 2052},   {3, 12000},    {4, 6000},  {5000, 7},
                        {4100, 300}, {70000, 1025}, {270000, 8}};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tolerance tol =
        dtype == DType::kF64 ? Tolerance{1e-10, 1e-12} : Tolerance{1e-4, 1e-5};
    for (const Case& c : cases) {
      for (bool affine : {true, false}) {
        const LayerNormOutputs cpu =
            RunLayerNorm(c.rows, c.d, dtype, affine, kCpu);
        const LayerNormOutputs gpu =
            RunLayerNorm(c.rows, c.d, dtype, affine, kGpu);
        ExpectLayerNormClose(
            cpu, gpu, tol,
            "layer_norm " + Name(dtype) + " [" + std::to_string(c.rows) + ", " +
                std::to_string(c.d) + "]" + (affine ? " affine" : ""));
      }
    }
  }
}

// The 16-bit floats are stored in half precision and computed in f32: the
// CPU's f32 run on the same (rounded) inputs, within the storage's rounding.
TEST_F(CudaBackendTest, HalfLayerNormComputesInFloat) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t d :
         {int64_t{100}, int64_t{1024}, int64_t{3000}, int64_t{12000}}) {
      const LayerNormOutputs gpu = RunLayerNorm(64, d, dtype, true, kGpu);
      // Input() rounds through f64 -> dtype; the CPU side reads the same
      // rounded values widened to f32.
      const auto widen = [&](uint32_t seed, const Shape& shape, double low,
                             double high) {
        return Input(shape, dtype, seed, kCpu, low, high).To(DType::kF32);
      };
      const TensorBase x = widen(81, {64, d}, 3, 7);
      const TensorBase dy = widen(82, {64, d}, -2, 2);
      const TensorBase gamma = widen(83, {d}, 0.5, 1.5);
      const TensorBase beta = widen(84, {d}, -2, 2);
      LayerNormOutputs cpu;
      cpu.out = TensorBase::Empty({64, d}, DType::kF32, kCpu);
      cpu.mean = TensorBase::Empty({64}, DType::kF32, kCpu);
      cpu.rstd = TensorBase::Empty({64}, DType::kF32, kCpu);
      cpu.input_grad = TensorBase::Empty({64, d}, DType::kF32, kCpu);
      cpu.gamma_grad = TensorBase::Empty({d}, DType::kF32, kCpu);
      cpu.beta_grad = TensorBase::Empty({d}, DType::kF32, kCpu);
      Backend& backend = GetBackend(kCpu);
      backend.LayerNorm(cpu.out, cpu.mean, cpu.rstd, x, gamma, beta, 1e-5);
      backend.LayerNormBackward(cpu.input_grad, cpu.gamma_grad, cpu.beta_grad,
                                dy, x, cpu.mean, cpu.rstd, gamma);
      const std::string what =
          "layer_norm " + Name(dtype) + " d " + std::to_string(d);
      ExpectClose(cpu.mean, gpu.mean, {1e-5, 1e-6}, what + " mean");
      ExpectClose(cpu.rstd, gpu.rstd, {1e-5, 1e-6}, what + " rstd");
      const Tolerance tol = ToleranceOf(dtype);
      for (const auto& [want, got, name] :
           {std::tuple{cpu.out, gpu.out, "out"},
            std::tuple{cpu.input_grad, gpu.input_grad, "input_grad"},
            std::tuple{cpu.gamma_grad, gpu.gamma_grad, "gamma_grad"},
            std::tuple{cpu.beta_grad, gpu.beta_grad, "beta_grad"}}) {
        ExpectClose(want.To(dtype), got, tol, what + " " + name);
      }
    }
  }
}

// The front end keeps f16/bf16 16-bit on the GPU (ComputesHalfNatively),
// with f32 statistics, and matches the CPU's f32 computation of the same
// rounded values, forward and every gradient.
TEST_F(CudaBackendTest, HalfLayerNormThroughTheFrontEnd) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t d : {int64_t{256}, int64_t{3000}}) {
      const auto run = [&](const Device& device, DType compute) {
        const TensorBase x = Input({2, 16, d}, dtype, 91, kCpu, 3, 7)
                                 .To(compute)
                                 .ToDevice(device);
        const TensorBase dy =
            Input({2, 16, d}, dtype, 92, kCpu).To(compute).ToDevice(device);
        const TensorBase gamma =
            Input({d}, dtype, 93, kCpu, 0.5, 1.5).To(compute).ToDevice(device);
        const TensorBase beta =
            Input({d}, dtype, 94, kCpu).To(compute).ToDevice(device);
        const ops::LayerNormResult forward =
            ops::LayerNorm(x, gamma, beta, 1e-5);
        const ops::LayerNormGradients grads = ops::LayerNormBackward(
            dy, x, forward.mean, forward.rstd, gamma, {true, true, true});
        return std::vector<TensorBase>{forward.output, forward.mean,
                                       grads.input, grads.gamma, grads.beta};
      };
      const std::vector<TensorBase> gpu = run(kGpu, dtype);
      const std::vector<TensorBase> cpu = run(kCpu, DType::kF32);
      const std::string what = "front-end layer_norm " + Name(dtype);
      EXPECT_EQ(dtype, gpu[0].dtype()) << what;
      EXPECT_EQ(DType::kF32, gpu[1].dtype()) << what;  // statistics
      ExpectClose(cpu[1], gpu[1], {1e-5, 1e-6}, what + " mean");
      const char* names[] = {"out", "mean", "input_grad", "gamma_grad",
                             "beta_grad"};
      for (int k : {0, 2, 3, 4}) {
        ExpectClose(cpu[k].To(dtype), gpu[k], ToleranceOf(dtype),
                    what + " " + names[k]);
      }
    }
  }
}

// Only some gradients: the others stay untouched and nothing faults.
TEST_F(CudaBackendTest, LayerNormBackwardWritesOnlyTheGradientsAsked) {
  auto [cpu, gpu] = Both([&](const Device& device) {
    const LayerNormOutputs o = RunLayerNorm(50, 70, DType::kF32, true, device);
    const TensorBase x = Input({50, 70}, DType::kF32, 81, device, 3, 7);
    const TensorBase dy = Input({50, 70}, DType::kF32, 82, device);
    const TensorBase beta_grad = TensorBase::Empty({70}, DType::kF32, device);
    GetBackend(device).LayerNormBackward(TensorBase(), TensorBase(), beta_grad,
                                         dy, x, o.mean, o.rstd, TensorBase());
    return beta_grad;
  });
  ExpectClose(cpu, gpu, {1e-4, 1e-5}, "layer_norm beta_grad alone");
}

// --- Sliding windows (Im2Col, Col2Im, MaxPool2d and its backward) ----------

struct WindowCase {
  Window2dGeometry window;
  int64_t height;
  int64_t width;
  std::string name;
};

// Windows with stride, padding, dilation, unequal axes, overlapping and
// disjoint positions, and positions that cover only padding ("all-padding":
// padding 3 with a 2x2 kernel at stride 3 puts the first row and column of
// positions entirely above and left of the input).
std::vector<WindowCase> WindowCases() {
  return {
      {{{3, 3}, {1, 1}, {1, 1}, {1, 1}}, 7, 6, "3x3 same"},
      {{{3, 2}, {2, 3}, {1, 0}, {2, 1}}, 9, 11, "stride dilation"},
      {{{2, 2}, {2, 2}, {0, 0}, {1, 1}}, 8, 6, "disjoint"},
      {{{2, 2}, {3, 3}, {3, 3}, {1, 1}}, 4, 5, "all-padding"},
      {{{1, 1}, {1, 1}, {2, 1}, {1, 1}}, 3, 3, "1x1 padded"},
  };
}

int64_t WindowOut(const Window2dGeometry& w, int axis, int64_t size) {
  return (size + 2 * w.padding[axis] - w.dilation[axis] * (w.kernel[axis] - 1) -
          1) /
             w.stride[axis] +
         1;
}

// WindowInput(): an [N, C, H, W] transposed view (strides [.., .., 1, H])
// of values from `seed`; with `ties`, small integers (many equal maxima)
// and a NaN at every 13th element.
TensorBase WindowInput(const WindowCase& c, DType dtype, uint32_t seed,
                       const Device& device, bool ties = false) {
  const Shape stored = {2, 3, c.width, c.height};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-3, 3);
  std::vector<double> values(stored.num_elements());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = ties ? std::floor(uniform(rng)) : uniform(rng);
    if (ties && i % 13 == 5) values[i] = std::nan("");
  }
  return TensorBase::FromHost(values.data(), stored, DType::kF64, kCpu)
      .To(dtype)
      .ToDevice(device)
      .Transpose(2, 3);
}

// ColumnsView(): the layout the front end passes to Im2Col / Col2Im, a
// [N, C, K, OH, OW] permuted view of a contiguous [C, K, N, OH, OW] buffer.
TensorBase ColumnsView(const TensorBase& buffer) {
  const std::vector<int> to_nckhw = {2, 0, 1, 3, 4};
  return buffer.Permute(to_nckhw);
}

TEST_F(CudaBackendTest, Im2ColMatchesTheCpuOnStridedInputs) {
  for (const WindowCase& c : WindowCases()) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Window2dGeometry& w = c.window;
      const int64_t area = w.kernel[0] * w.kernel[1];
      const int64_t out_h = WindowOut(w, 0, c.height);
      const int64_t out_w = WindowOut(w, 1, c.width);
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase input = WindowInput(c, dtype, 60, device);
        const TensorBase buffer =
            TensorBase::Empty({3, area, 2, out_h, out_w}, dtype, device);
        GetBackend(device).Im2Col(ColumnsView(buffer), input, w, -1.5);
        return buffer;
      });
      ExpectBitEqual(cpu, gpu, "im2col " + c.name + " " + Name(dtype));
    }
  }
}

TEST_F(CudaBackendTest, Col2ImSumsInTheCpuOrder) {
  for (const WindowCase& c : WindowCases()) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Window2dGeometry& w = c.window;
      const int64_t area = w.kernel[0] * w.kernel[1];
      const int64_t out_h = WindowOut(w, 0, c.height);
      const int64_t out_w = WindowOut(w, 1, c.width);
      const std::string what = c.name + " " + Name(dtype);
      // The gather visits kernel entries in the CPU's order: bit-equal.
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase columns =
            ColumnsView(Input({3, area, 2, out_h, out_w}, dtype, 61, device));
        const TensorBase grad =
            TensorBase::Empty({2, 3, c.height, c.width}, dtype, device);
        GetBackend(device).Col2Im(grad, columns, w);
        return grad;
      });
      ExpectBitEqual(cpu, gpu, "col2im " + what);
      // Zero strides: one row of columns broadcast over every oh.
      auto [cpu_b, gpu_b] = Both([&](const Device& device) {
        const TensorBase columns =
            Input({2, 3, area, 1, out_w}, dtype, 62, device)
                .Expand({2, 3, area, out_h, out_w});
        const TensorBase grad =
            TensorBase::Empty({2, 3, c.height, c.width}, dtype, device);
        GetBackend(device).Col2Im(grad, columns, w);
        return grad;
      });
      ExpectBitEqual(cpu_b, gpu_b, "col2im broadcast " + what);
    }
  }
}

TEST_F(CudaBackendTest, MaxPool2dMatchesValuesArgmaxTiesAndNaNs) {
  for (const WindowCase& c : WindowCases()) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Window2dGeometry& w = c.window;
      const Shape out_shape = {2, 3, WindowOut(w, 0, c.height),
                               WindowOut(w, 1, c.width)};
      const std::string what = c.name + " " + Name(dtype);
      for (bool ties : {false, true}) {
        TensorBase cpu_argmax, gpu_argmax;
        auto [cpu, gpu] = Both([&](const Device& device) {
          const TensorBase input = WindowInput(c, dtype, 63, device, ties);
          const TensorBase out = TensorBase::Empty(out_shape, dtype, device);
          const TensorBase argmax =
              TensorBase::Empty(out_shape, DType::kI64, device);
          GetBackend(device).MaxPool2d(out, argmax, input, w);
          (device == kCpu ? cpu_argmax : gpu_argmax) = argmax;
          return out;
        });
        const std::string label = what + (ties ? " ties+nan" : "");
        ExpectBitEqual(cpu, gpu, "max_pool2d " + label);
        ExpectBitEqual(cpu_argmax, gpu_argmax, "max_pool2d argmax " + label);
      }
      // Without argmax: the same values.
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase input = WindowInput(c, dtype, 64, device, true);
        const TensorBase out = TensorBase::Empty(out_shape, dtype, device);
        GetBackend(device).MaxPool2d(out, TensorBase(), input, w);
        return out;
      });
      ExpectBitEqual(cpu, gpu, "max_pool2d without argmax " + what);
    }
  }
}

TEST_F(CudaBackendTest, MaxPool2dAllPaddingWindowsGiveMinusInfinity) {
  // Input 3x3, kernel 1, padding 2: 7x7 positions, the border two deep
  // covering padding only.
  const Window2dGeometry w = {{1, 1}, {1, 1}, {2, 2}, {1, 1}};
  const TensorBase input = Input({1, 1, 3, 3}, DType::kF32, 65, kGpu);
  const TensorBase out = TensorBase::Empty({1, 1, 7, 7}, DType::kF32, kGpu);
  const TensorBase argmax = TensorBase::Empty({1, 1, 7, 7}, DType::kI64, kGpu);
  GetBackend(kGpu).MaxPool2d(out, argmax, input, w);
  const std::vector<double> values = Doubles(out);
  const std::vector<double> cells = Doubles(argmax);
  const std::vector<double> in = Doubles(input);
  for (int64_t oh = 0; oh < 7; ++oh) {
    for (int64_t ow = 0; ow < 7; ++ow) {
      const int64_t at = oh * 7 + ow;
      const bool inside = oh >= 2 && oh < 5 && ow >= 2 && ow < 5;
      if (inside) {
        const int64_t cell = (oh - 2) * 3 + (ow - 2);
        EXPECT_EQ(cell, cells[at]) << oh << "," << ow;
        EXPECT_EQ(in[cell], values[at]) << oh << "," << ow;
      } else {
        EXPECT_EQ(-1, cells[at]) << oh << "," << ow;
        EXPECT_EQ(-std::numeric_limits<double>::infinity(), values[at])
            << oh << "," << ow;
      }
    }
  }
}

TEST_F(CudaBackendTest, MaxPool2dBackwardAccumulatesSharedMaxima) {
  for (const WindowCase& c : WindowCases()) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Window2dGeometry& w = c.window;
      const int64_t out_h = WindowOut(w, 0, c.height);
      const int64_t out_w = WindowOut(w, 1, c.width);
      // argmax from integer-valued inputs (ties: many windows share a
      // maximum) with NaNs and, in "all-padding", -1 entries.
      const TensorBase argmax =
          TensorBase::Empty({2, 3, out_h, out_w}, DType::kI64, kCpu);
      GetBackend(kCpu).MaxPool2d(
          TensorBase::Empty({2, 3, out_h, out_w}, dtype, kCpu), argmax,
          WindowInput(c, dtype, 66, kCpu, true), w);
      // Arbitrary gradients: the GPU sums each cell's windows in the CPU's
      // order, so the result must equal the CPU's bits, rounding included.
      std::vector<double> gradients(2 * 3 * out_h * out_w);
      std::mt19937 rng(67);
      std::uniform_real_distribution<double> uniform(-2.0, 2.0);
      for (double& value : gradients) value = uniform(rng);
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase grad =
            TensorBase::FromHost(gradients.data(), {2, 3, out_w, out_h},
                                 DType::kF64, kCpu)
                .To(dtype)
                .ToDevice(device)
                .Transpose(2, 3);
        const TensorBase input_grad =
            TensorBase::Empty({2, 3, c.height, c.width}, dtype, device);
        GetBackend(device).MaxPool2dBackward(input_grad, grad,
                                             argmax.ToDevice(device), w);
        return input_grad;
      });
      ExpectBitEqual(cpu, gpu,
                     "max_pool2d backward " + c.name + " " + Name(dtype));
    }
  }
}

TEST_F(CudaBackendTest, WindowKernelsOnEmptyAndZeroAreaInputs) {
  // An input with H = W = 0: every window position covers padding only.
  const Window2dGeometry w = {{1, 1}, {1, 1}, {1, 1}, {1, 1}};  // OH = OW = 2
  for (DType dtype : {DType::kF32, DType::kF64}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase input = TensorBase::Empty({1, 2, 0, 0}, dtype, device);
      const TensorBase columns =
          TensorBase::Empty({1, 2, 1, 2, 2}, dtype, device);
      GetBackend(device).Im2Col(columns, input, w, 4.0);
      return columns;
    });
    ExpectBitEqual(cpu, gpu, "im2col zero-area " + Name(dtype));
    const TensorBase input = TensorBase::Empty({1, 2, 0, 0}, dtype, kGpu);
    const TensorBase out = TensorBase::Empty({1, 2, 2, 2}, dtype, kGpu);
    const TensorBase argmax =
        TensorBase::Empty({1, 2, 2, 2}, DType::kI64, kGpu);
    GetBackend(kGpu).MaxPool2d(out, argmax, input, w);
    EXPECT_EQ(std::vector<double>(8, -std::numeric_limits<double>::infinity()),
              Doubles(out));
    EXPECT_EQ(std::vector<double>(8, -1.0), Doubles(argmax));
    const TensorBase grad = Input({1, 2, 2, 2}, dtype, 68, kGpu);
    GetBackend(kGpu).MaxPool2dBackward(input, grad, argmax, w);
    GetBackend(kGpu).Col2Im(input, Input({1, 2, 1, 2, 2}, dtype, 69, kGpu), w);
    // N = 0: nothing to do, nothing launched.
    const TensorBase none = TensorBase::Empty({0, 2, 3, 3}, dtype, kGpu);
    const TensorBase none_columns =
        TensorBase::Empty({0, 2, 1, 5, 5}, dtype, kGpu);
    const TensorBase none_out = TensorBase::Empty({0, 2, 5, 5}, dtype, kGpu);
    const TensorBase none_argmax =
        TensorBase::Empty({0, 2, 5, 5}, DType::kI64, kGpu);
    GetBackend(kGpu).Im2Col(none_columns, none, w, 0.0);
    GetBackend(kGpu).Col2Im(none, none_columns, w);
    GetBackend(kGpu).MaxPool2d(none_out, none_argmax, none, w);
    GetBackend(kGpu).MaxPool2dBackward(none, none_out, none_argmax, w);
    EXPECT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
  }
}

// --- Streams: blocks used on a second stream ---------------------------------

// A tensor read by a kernel on a second stream is freed while that kernel is
// still queued: the next same-size tensor on the default stream, written at
// once, must not get its block, or the read would see the new values.
TEST_F(CudaBackendTest, TensorReadOnASecondStreamIsNotReusedBeforeTheRead) {
  const Shape shape{1 << 20};
  TensorBase source = Input(shape, DType::kF32, 41, kGpu);
  // Waits for `source` on the default stream, so the side stream can read it.
  const std::vector<uint8_t> expected = Bytes(source);
  TensorBase copy = TensorBase::Empty(shape, DType::kF32, kGpu);
  cuda::CudaDeviceGuard device(0);
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking),
            cudaSuccess);
  {
    cuda::CudaStreamGuard guard(0, side);
    // The copy starts reading only after 200 ms.
    cuda::testing::LaunchSpin(200'000'000, side);
    GetBackend(kGpu).Copy(copy, source);
  }
  source = TensorBase();  // frees its block
  const TensorBase next = TensorBase::Empty(shape, DType::kF32, kGpu);
  GetBackend(kGpu).Fill(next, -1e6);
  ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  EXPECT_EQ(expected, Bytes(copy));
  // Freed before its stream is destroyed: the free records an event there.
  copy = TensorBase();
  EXPECT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
  ASSERT_EQ(cudaStreamDestroy(side), cudaSuccess);
}

}  // namespace
}  // namespace kindling
