#include "tests/distributed/collective_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kindling/core/status_macros.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/tensor.h"

namespace kindling::distributed {
namespace {

// --- Values -----------------------------------------------------------------

// SmallValue() is rank `rank`'s element `i`: a small integer, negative for
// some elements, with sums over ranks that are not multiples of the world
// size (so integer averages must truncate toward zero), and with magnitudes
// small enough that f16 and bf16 add them exactly.
int64_t SmallValue(int rank, int64_t i) {
  return (rank % 3 + 1) * (i % 11) - 5 - (rank % 2) * (i % 3);
}

// ElementTraits<T>: T's dtype, how an exact integer becomes a T and a T a
// double, and the relative error an average may carry (1/n is rounded).
template <class T>
struct ElementTraits;

template <>
struct ElementTraits<float> {
  static constexpr DType kDType = DType::kF32;
  static constexpr double kAverageTolerance = 0x1p-21;
  static float FromInteger(int64_t v) { return static_cast<float>(v); }
  static double ToDouble(float v) { return v; }
};
template <>
struct ElementTraits<double> {
  static constexpr DType kDType = DType::kF64;
  static constexpr double kAverageTolerance = 0x1p-50;
  static double FromInteger(int64_t v) { return static_cast<double>(v); }
  static double ToDouble(double v) { return v; }
};
template <>
struct ElementTraits<Half> {
  static constexpr DType kDType = DType::kF16;
  static constexpr double kAverageTolerance = 0x1p-9;
  static Half FromInteger(int64_t v) {
    return Half::FromFloat(static_cast<float>(v));
  }
  static double ToDouble(Half v) { return v.ToFloat(); }
};
template <>
struct ElementTraits<BFloat16> {
  static constexpr DType kDType = DType::kBF16;
  static constexpr double kAverageTolerance = 0x1p-6;
  static BFloat16 FromInteger(int64_t v) {
    return BFloat16::FromFloat(static_cast<float>(v));
  }
  static double ToDouble(BFloat16 v) { return v.ToFloat(); }
};
template <>
struct ElementTraits<int64_t> {
  static constexpr DType kDType = DType::kI64;
  static constexpr double kAverageTolerance = 0;
  static int64_t FromInteger(int64_t v) { return v; }
  static double ToDouble(int64_t v) { return static_cast<double>(v); }
};

// Contribution() is what rank `rank` puts at element `i`. Integers also
// carry 2^53 + 1 on odd elements: their sums are not exact in a double, so an
// engine that reduced i64 through floating point fails.
template <class T>
int64_t Contribution(int rank, int64_t i) {
  const int64_t small = SmallValue(rank, i);
  if constexpr (std::is_same_v<T, int64_t>) {
    return small + (i % 2) * ((int64_t{1} << 53) + 1);
  }
  return small;
}

// --- Checks -----------------------------------------------------------------

class Checks {
 public:
  explicit Checks(Communicator& comm) : comm_(comm) {}

  int failures() const { return failures_; }

  // Run() prints `PASS name` or `FAIL name: why` for one check.
  void Run(const std::string& name,
           const std::function<absl::Status()>& check) {
    const absl::Status status = check();
    if (status.ok()) {
      std::printf("PASS %s\n", name.c_str());
    } else {
      ++failures_;
      std::printf("FAIL %s: %s\n", name.c_str(), status.ToString().c_str());
    }
    std::fflush(stdout);
  }

  Communicator& comm() { return comm_; }
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.world_size(); }

 private:
  Communicator& comm_;
  int failures_ = 0;
};

// ExpectInvalidArgument() is OK when `status` is InvalidArgument and its
// message contains `fragment`.
absl::Status ExpectInvalidArgument(const absl::Status& status,
                                   const std::string& fragment) {
  if (absl::IsInvalidArgument(status) &&
      absl::StrContains(status.message(), fragment)) {
    return absl::OkStatus();
  }
  return absl::InternalError(
      absl::StrFormat("want InvalidArgument mentioning \"%s\", got %s",
                      fragment, status.ToString()));
}

// --- AllReduce
// ----------------------------------------------------------------

// Expected() is the serial reduction of Contribution<T> over all ranks at
// element i, as an exact integer (sum, max, or the truncated average of
// integers) or, for float averages, the exact quotient.
template <class T>
void Expected(int world_size, int64_t i, ReduceOp op, int64_t* exact,
              double* average) {
  int64_t sum = 0;
  int64_t max = Contribution<T>(0, i);
  for (int r = 0; r < world_size; ++r) {
    const int64_t v = Contribution<T>(r, i);
    sum += v;
    max = std::max(max, v);
  }
  *exact = op == ReduceOp::kMax   ? max
           : op == ReduceOp::kSum ? sum
                                  : sum / world_size;
  *average = static_cast<double>(sum) / world_size;
}

template <class T>
absl::Status CompareElement(const T& got, int64_t i, int world_size,
                            ReduceOp op) {
  using Traits = ElementTraits<T>;
  int64_t exact;
  double average;
  Expected<T>(world_size, i, op, &exact, &average);
  const double value = Traits::ToDouble(got);
  if constexpr (!std::is_same_v<T, int64_t>) {
    if (op == ReduceOp::kAverage) {
      const double error = std::fabs(value - average);
      if (error <=
          Traits::kAverageTolerance * std::max(1.0, std::fabs(average))) {
        return absl::OkStatus();
      }
      return absl::InternalError(absl::StrFormat(
          "element %d: got %.17g, want %.17g", i, value, average));
    }
  } else {
    if (got == exact) return absl::OkStatus();
    return absl::InternalError(
        absl::StrFormat("element %d: got %d, want %d", i, got, exact));
  }
  if (value == static_cast<double>(exact)) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("element %d: got %.17g, want %d", i, value, exact));
}

template <class T>
absl::Status CheckAllReduce(Communicator& comm, ReduceOp op, int64_t count) {
  std::vector<T> data(count);
  for (int64_t i = 0; i < count; ++i) {
    data[i] = ElementTraits<T>::FromInteger(Contribution<T>(comm.rank(), i));
  }
  // An empty vector's data() may be null: count 0 must accept that.
  KINDLING_RETURN_IF_ERROR(
      comm.AllReduce(data.data(), count, ElementTraits<T>::kDType, op));
  for (int64_t i = 0; i < count; ++i) {
    KINDLING_RETURN_IF_ERROR(CompareElement(data[i], i, comm.world_size(), op));
  }
  return absl::OkStatus();
}

template <class T>
void AllReduceChecks(Checks& checks, const std::vector<int64_t>& counts) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
    for (int64_t count : counts) {
      checks.Run(absl::StrFormat(
                     "AllReduce %s %s n=%d", ReduceOpName(op),
                     std::string(DTypeName(ElementTraits<T>::kDType)), count),
                 [&] { return CheckAllReduce<T>(checks.comm(), op, count); });
    }
  }
}

// --- Tensor overloads
// -----------------------------------------------------------

absl::Status CheckTensorAllReduce(Communicator& comm) {
  const int n = comm.world_size();
  std::vector<float> values(15);
  for (int64_t i = 0; i < 15; ++i) {
    values[i] = static_cast<float>(SmallValue(comm.rank(), i));
  }
  Tensor<2> t = Tensor<2>::FromData(values, Shape{3, 5});
  KINDLING_RETURN_IF_ERROR(comm.AllReduce(t.base(), ReduceOp::kSum));
  const std::vector<float> got = t.to_data<float>();
  for (int64_t i = 0; i < 15; ++i) {
    KINDLING_RETURN_IF_ERROR(CompareElement(got[i], i, n, ReduceOp::kSum));
  }
  std::vector<int64_t> integers(6);
  for (int64_t i = 0; i < 6; ++i) {
    integers[i] = Contribution<int64_t>(comm.rank(), i);
  }
  Tensor<1, Int> u = Tensor<1, Int>::FromData(integers, Shape{6});
  KINDLING_RETURN_IF_ERROR(comm.AllReduce(u.base(), ReduceOp::kAverage));
  const std::vector<int64_t> averaged = u.to_data<int64_t>();
  for (int64_t i = 0; i < 6; ++i) {
    KINDLING_RETURN_IF_ERROR(
        CompareElement(averaged[i], i, n, ReduceOp::kAverage));
  }
  return absl::OkStatus();
}

absl::Status CheckTensorAllReduceBFloat16(Communicator& comm) {
  std::vector<BFloat16> values(9);
  for (int64_t i = 0; i < 9; ++i) {
    values[i] = ElementTraits<BFloat16>::FromInteger(
        Contribution<BFloat16>(comm.rank(), i));
  }
  Tensor<1> t = Tensor<1>::FromData(values, Shape{9});
  KINDLING_RETURN_IF_ERROR(comm.AllReduce(t.base(), ReduceOp::kMax));
  const BFloat16* got = t.base().data_as<BFloat16>();
  for (int64_t i = 0; i < 9; ++i) {
    KINDLING_RETURN_IF_ERROR(
        CompareElement(got[i], i, comm.world_size(), ReduceOp::kMax));
  }
  return absl::OkStatus();
}

absl::Status CheckTensorBroadcast(Communicator& comm) {
  const int root = comm.world_size() - 1;
  std::vector<double> values(12, -1.0);
  if (comm.rank() == root) {
    for (int i = 0; i < 12; ++i) values[i] = 0.5 * i + root;
  }
  Tensor<2> t = Tensor<2>::FromData(values, Shape{4, 3});
  KINDLING_RETURN_IF_ERROR(comm.Broadcast(t.base(), root));
  const std::vector<double> got = t.to_data<double>();
  for (int i = 0; i < 12; ++i) {
    if (got[i] != 0.5 * i + root) {
      return absl::InternalError(absl::StrFormat("element %d: got %g, want %g",
                                                 i, got[i], 0.5 * i + root));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTensorAllGather(Communicator& comm) {
  const int n = comm.world_size();
  std::vector<float> mine(5);
  for (int i = 0; i < 5; ++i) mine[i] = 100.0f * comm.rank() + i;
  Tensor<1> in = Tensor<1>::FromData(mine, Shape{5});
  Tensor<2> out = Tensor<2>::Zeros(Shape{n, 5});
  KINDLING_RETURN_IF_ERROR(comm.AllGather(in.base(), out.base()));
  const std::vector<float> got = out.to_data<float>();
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < 5; ++i) {
      if (got[r * 5 + i] != 100.0f * r + i) {
        return absl::InternalError(
            absl::StrFormat("rank %d's element %d: got %g, want %g", r, i,
                            got[r * 5 + i], 100.0f * r + i));
      }
    }
  }
  return absl::OkStatus();
}

// The refused calls. They run on rank 0 alone: had one of them sent
// anything, the collectives of the next check would pair with it and fail
// (or time out) instead of passing.
void InvalidArgumentChecks(Checks& checks) {
  Communicator& comm = checks.comm();
  const int n = comm.world_size();
  checks.Run("AllReduce refuses a non-contiguous tensor", [&] {
    Tensor<2> t = Tensor<2>::Zeros(Shape{3, 4}).transpose(0, 1);
    return ExpectInvalidArgument(comm.AllReduce(t.base(), ReduceOp::kSum),
                                 "contiguous");
  });
  checks.Run("AllReduce refuses a u8 tensor", [&] {
    TensorBase t = TensorBase::Empty(Shape{4}, DType::kU8, Device::Cpu());
    return ExpectInvalidArgument(comm.AllReduce(t, ReduceOp::kSum), "u8");
  });
  checks.Run("AllReduce refuses u8 bytes", [&] {
    uint8_t bytes[4] = {};
    return ExpectInvalidArgument(
        comm.AllReduce(bytes, 4, DType::kU8, ReduceOp::kMax), "u8");
  });
  checks.Run("AllReduce refuses an undefined tensor", [&] {
    return ExpectInvalidArgument(comm.AllReduce(TensorBase(), ReduceOp::kSum),
                                 "undefined");
  });
  checks.Run("Broadcast refuses a root out of range", [&] {
    Tensor<1> t = Tensor<1>::Zeros(Shape{4});
    KINDLING_RETURN_IF_ERROR(
        ExpectInvalidArgument(comm.Broadcast(t.base(), n), "root"));
    KINDLING_RETURN_IF_ERROR(
        ExpectInvalidArgument(comm.Broadcast(t.base(), -1), "root"));
    char byte = 0;
    return ExpectInvalidArgument(comm.Broadcast(&byte, 1, n), "root");
  });
  checks.Run("AllGather refuses a wrong output size", [&] {
    Tensor<1> in = Tensor<1>::Zeros(Shape{5});
    Tensor<1> out = Tensor<1>::Zeros(Shape{5 * n - 1});
    return ExpectInvalidArgument(comm.AllGather(in.base(), out.base()),
                                 "AllGather");
  });
  checks.Run("AllGather refuses a wrong output dtype", [&] {
    Tensor<1> in = Tensor<1>::Zeros(Shape{5});
    Tensor<1> out = Tensor<1>::Zeros(Shape{5 * n}, Device::Cpu(), DType::kF64);
    return ExpectInvalidArgument(comm.AllGather(in.base(), out.base()),
                                 "AllGather");
  });
  checks.Run("AllGather refuses a non-contiguous output", [&] {
    Tensor<1> in = Tensor<1>::Zeros(Shape{2});
    Tensor<2> out = Tensor<2>::Zeros(Shape{2, n}).transpose(0, 1);
    return ExpectInvalidArgument(comm.AllGather(in.base(), out.base()),
                                 "contiguous");
  });
}

// --- Broadcast, AllGather, Barrier
// ------------------------------------------------

uint8_t Pattern(int rank, int64_t i) {
  return static_cast<uint8_t>((i * 7 + rank * 31 + (i >> 8)) & 0xff);
}

absl::Status CheckBroadcast(Communicator& comm, int64_t bytes, int root) {
  std::vector<uint8_t> data(bytes, 0);
  if (comm.rank() == root) {
    for (int64_t i = 0; i < bytes; ++i) data[i] = Pattern(root, i);
  }
  KINDLING_RETURN_IF_ERROR(comm.Broadcast(data.data(), bytes, root));
  for (int64_t i = 0; i < bytes; ++i) {
    if (data[i] != Pattern(root, i)) {
      return absl::InternalError(absl::StrFormat("byte %d: got %d, want %d", i,
                                                 data[i], Pattern(root, i)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAllGather(Communicator& comm, int64_t bytes) {
  const int n = comm.world_size();
  std::vector<uint8_t> in(bytes);
  for (int64_t i = 0; i < bytes; ++i) in[i] = Pattern(comm.rank(), i);
  std::vector<uint8_t> out(bytes * n, 0);
  KINDLING_RETURN_IF_ERROR(comm.AllGather(in.data(), out.data(), bytes));
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < bytes; ++i) {
      if (out[r * bytes + i] != Pattern(r, i)) {
        return absl::InternalError(
            absl::StrFormat("rank %d's byte %d: got %d, want %d", r, i,
                            out[r * bytes + i], Pattern(r, i)));
      }
    }
  }
  return absl::OkStatus();
}

// CheckBarrierWaits(): the last rank arrives 300 ms late; the others must
// not leave the barrier before it arrives.
absl::Status CheckBarrierWaits(Communicator& comm) {
  constexpr absl::Duration kLate = absl::Milliseconds(300);
  KINDLING_RETURN_IF_ERROR(comm.Barrier());
  const absl::Time start = absl::Now();
  if (comm.rank() == comm.world_size() - 1) absl::SleepFor(kLate);
  KINDLING_RETURN_IF_ERROR(comm.Barrier());
  const absl::Duration waited = absl::Now() - start;
  if (waited < kLate - absl::Milliseconds(100)) {
    return absl::InternalError(absl::StrFormat(
        "left the barrier after %s, before the last rank (%s late) arrived",
        absl::FormatDuration(waited), absl::FormatDuration(kLate)));
  }
  return absl::OkStatus();
}

}  // namespace

int RunCollectiveChecks(Communicator& comm) {
  Checks checks(comm);
  const int last = comm.world_size() - 1;
  std::printf("rank %d of %d: %s communicator on %s\n", comm.rank(),
              comm.world_size(), comm.backend().c_str(),
              comm.device().ToString().c_str());

  const std::vector<int64_t> counts = {0, 1, 7, 1000003};
  AllReduceChecks<float>(checks, counts);
  AllReduceChecks<double>(checks, counts);
  AllReduceChecks<Half>(checks, counts);
  AllReduceChecks<BFloat16>(checks, counts);
  AllReduceChecks<int64_t>(checks, counts);
  // Over 25 MiB: more than one bucket of any engine that splits buffers.
  checks.Run("AllReduce sum f32 n=7000001", [&] {
    return CheckAllReduce<float>(comm, ReduceOp::kSum, 7000001);
  });

  checks.Run("tensor AllReduce f32 sum, i64 average",
             [&] { return CheckTensorAllReduce(comm); });
  checks.Run("tensor AllReduce bf16 max",
             [&] { return CheckTensorAllReduceBFloat16(comm); });
  if (comm.rank() == 0) InvalidArgumentChecks(checks);
  checks.Run("tensor Broadcast from the last rank",
             [&] { return CheckTensorBroadcast(comm); });
  checks.Run("tensor AllGather", [&] { return CheckTensorAllGather(comm); });

  for (int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{1000003}}) {
    checks.Run(absl::StrFormat("Broadcast %d bytes from rank 0", bytes),
               [&] { return CheckBroadcast(comm, bytes, 0); });
    checks.Run(absl::StrFormat("Broadcast %d bytes from rank %d", bytes, last),
               [&] { return CheckBroadcast(comm, bytes, last); });
  }
  for (int64_t bytes : {int64_t{0}, int64_t{13}, int64_t{(1 << 20) + 3}}) {
    checks.Run(absl::StrFormat("AllGather %d bytes per rank", bytes),
               [&] { return CheckAllGather(comm, bytes); });
  }
  checks.Run("Barrier", [&] { return comm.Barrier(); });
  checks.Run("Barrier waits for the last rank",
             [&] { return CheckBarrierWaits(comm); });
  return checks.failures();
}

}  // namespace kindling::distributed
