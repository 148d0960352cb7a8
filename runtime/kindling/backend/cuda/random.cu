// Philox random fills and dropout on CUDA, bit-identical to the CPU backend.
//
// philox.h defines the stream: element i of a fill reads block offset +
// i / 4 (i / 2 for f64 uniform and normal) under key `seed`. Here each
// thread computes whole blocks (grid-stride) and writes the elements they
// feed, with the same formulas as backend/cpu/random.cc: every float
// operation is spelled with the round-to-nearest intrinsics (__fmul_rn,
// __fadd_rn, ...) so nvcc cannot fuse a multiply-add that the CPU rounds
// twice, and this file is compiled with -fmad=false so box_muller.h's
// polynomials are not fused either. Uniform, Bernoulli/dropout masks and
// 16/32-bit normals are therefore bit-exact with the CPU; f64 normals use
// CUDA's log/sqrt/sin/cos, which may differ from glibc's in the last place.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/tensor/box_muller.h"
#include "kindling/tensor/philox.h"

namespace kindling::cuda {
namespace {

// Compute<T>: double for f64, float for f32 and the 16-bit floats.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

__device__ inline float Mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double Mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float Add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double Add(double a, double b) { return __dadd_rn(a, b); }

__device__ inline PhiloxBlock BlockWords(PhiloxKey key, uint64_t offset,
                                         int64_t block) {
  return Philox4x32_10(PhiloxCounter(offset + static_cast<uint64_t>(block)),
                       key);
}

// Uniform: value = min(low + u * range, upper), rounded once to T.
template <class T>
struct UniformParams {
  Compute<T> low;
  Compute<T> range;
  Compute<T> upper;
};

template <class T>
__device__ inline T UniformValue(Compute<T> u, const UniformParams<T>& p) {
  const Compute<T> value = Add(p.low, Mul(u, p.range));
  return Convert<T>(p.upper < value ? p.upper : value);
}

template <class T>
__global__ void UniformFill(T* out, int64_t numel, PhiloxKey key,
                            uint64_t offset, UniformParams<T> params) {
  constexpr bool kDouble = std::is_same_v<T, double>;
  constexpr int64_t kPerBlock = kDouble ? 2 : 4;
  const int64_t blocks = (numel + kPerBlock - 1) / kPerBlock;
  for (int64_t block = GlobalThread(); block < blocks; block += GridThreads()) {
    const PhiloxBlock w = BlockWords(key, offset, block);
    const int64_t first = block * kPerBlock;
    for (int64_t j = 0; j < kPerBlock && first + j < numel; ++j) {
      Compute<T> u;
      if constexpr (kDouble) {
        u = UniformDouble(w[2 * j], w[2 * j + 1]);
      } else {
        u = UniformFloat(w[j]);
      }
      out[first + j] = UniformValue<T>(u, params);
    }
  }
}

// Normal: mean + std * z, z from Box-Muller on word pairs.
template <class T>
__global__ void NormalFill(T* out, int64_t numel, PhiloxKey key,
                           uint64_t offset, Compute<T> mean, Compute<T> std) {
  constexpr bool kDouble = std::is_same_v<T, double>;
  constexpr int64_t kPerBlock = kDouble ? 2 : 4;
  const int64_t blocks = (numel + kPerBlock - 1) / kPerBlock;
  for (int64_t block = GlobalThread(); block < blocks; block += GridThreads()) {
    const PhiloxBlock w = BlockWords(key, offset, block);
    const int64_t first = block * kPerBlock;
    Compute<T> z[kPerBlock];
    if constexpr (kDouble) {
      const double radius =
          __dsqrt_rn(Mul(-2.0, log(OpenUniformDouble(w[0], w[1]))));
      const double angle =
          Mul(2 * 3.14159265358979323846, UniformDouble(w[2], w[3]));
      z[0] = Mul(radius, cos(angle));
      z[1] = Mul(radius, sin(angle));
    } else {
      BoxMullerFloat(w[0], w[1], z[0], z[1]);
      BoxMullerFloat(w[2], w[3], z[2], z[3]);
    }
    for (int64_t j = 0; j < kPerBlock && first + j < numel; ++j) {
      out[first + j] = Convert<T>(Add(mean, Mul(std, z[j])));
    }
  }
}

// Bernoulli: `kept` where (w >> 8) >= threshold, else `dropped`.
template <class T>
__global__ void BernoulliFill(T* out, int64_t numel, PhiloxKey key,
                              uint64_t offset, uint32_t threshold, T kept,
                              T dropped) {
  const int64_t blocks = (numel + 3) / 4;
  for (int64_t block = GlobalThread(); block < blocks; block += GridThreads()) {
    const PhiloxBlock w = BlockWords(key, offset, block);
    const int64_t first = block * 4;
    for (int64_t j = 0; j < 4 && first + j < numel; ++j) {
      out[first + j] = (w[j] >> 8) >= threshold ? kept : dropped;
    }
  }
}

// Dropout: out[i] = in[i] * mask[i], the product in Compute<T> (so inf * 0
// is NaN, as x * mask would be); `in` read through its strides.
template <class T>
__global__ void DropoutApply(T* out, StridedIndexer<1> in_layout, const T* in,
                             PhiloxKey key, uint64_t offset, uint32_t threshold,
                             Compute<T> kept) {
  const int64_t numel = in_layout.numel;
  const int64_t blocks = (numel + 3) / 4;
  for (int64_t block = GlobalThread(); block < blocks; block += GridThreads()) {
    const PhiloxBlock w = BlockWords(key, offset, block);
    const int64_t first = block * 4;
    for (int64_t j = 0; j < 4 && first + j < numel; ++j) {
      int64_t source;
      in_layout.Offsets(first + j, &source);
      const Compute<T> mask = (w[j] >> 8) >= threshold ? kept : Compute<T>(0);
      out[first + j] =
          Convert<T>(Mul(static_cast<Compute<T>>(ToCompute(in[source])), mask));
    }
  }
}

// NextBelow() is the largest T below `value` (finite, T-representable).
template <class T>
T NextBelow(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nextafter(value, -std::numeric_limits<T>::infinity());
  } else {
    const uint16_t bits = value.bits;
    if ((bits & 0x7fff) == 0) return T{0x8001};  // below +-0
    return T{static_cast<uint16_t>((bits & 0x8000) ? bits + 1 : bits - 1)};
  }
}

template <class T>
UniformParams<T> MakeUniformParams(double low, double high) {
  using C = Compute<T>;
  const T low_t = Convert<T>(low);
  const T high_t = Convert<T>(high);
  const C low_c = static_cast<C>(ToCompute(low_t));
  const C high_c = static_cast<C>(ToCompute(high_t));
  const C upper =
      high_c > low_c ? static_cast<C>(ToCompute(NextBelow(high_t))) : low_c;
  return {low_c, high_c - low_c, upper};
}

// BlocksGrid(): one thread per Philox block.
LaunchGrid BlocksGrid(int64_t numel, int64_t per_block) {
  return GridFor((numel + per_block - 1) / per_block);
}

}  // namespace

void FillRandomKernel(cudaStream_t stream, const TensorBase& out,
                      RandomDistribution distribution, uint64_t seed,
                      uint64_t offset, double a, double b) {
  KINDLING_CHECK(out.is_contiguous(),
                 "cuda fill_random: output %s not contiguous",
                 out.shape().ToString());
  const int64_t numel = out.numel();
  if (numel == 0) return;
  const PhiloxKey key = PhiloxKeyFromSeed(seed);
  DispatchDType<kFloatingDTypes>(
      out.dtype(), "cuda fill_random", [&]<class T>() {
        using C = Compute<T>;
        T* data = out.data_as<T>();
        const LaunchGrid grid = BlocksGrid(
            numel, PhiloxElementsPerBlock(distribution, out.dtype()));
        const auto blocks = static_cast<unsigned>(grid.blocks);
        switch (distribution) {
          case RandomDistribution::kUniform:
            UniformFill<T><<<blocks, grid.threads, 0, stream>>>(
                data, numel, key, offset, MakeUniformParams<T>(a, b));
            KINDLING_CUDA_CHECK_LAUNCH("UniformFill");
            break;
          case RandomDistribution::kNormal:
            NormalFill<T><<<blocks, grid.threads, 0, stream>>>(
                data, numel, key, offset, static_cast<C>(a), static_cast<C>(b));
            KINDLING_CUDA_CHECK_LAUNCH("NormalFill");
            break;
          case RandomDistribution::kBernoulli:
            BernoulliFill<T><<<blocks, grid.threads, 0, stream>>>(
                data, numel, key, offset, KeepThreshold(a), Convert<T>(b),
                Convert<T>(0.0));
            KINDLING_CUDA_CHECK_LAUNCH("BernoulliFill");
            break;
        }
      });
}

void DropoutKernel(cudaStream_t stream, const TensorBase& out,
                   const TensorBase& in, double prob, uint64_t seed,
                   uint64_t offset) {
  KINDLING_CHECK(out.is_contiguous(), "cuda dropout: output %s not contiguous",
                 out.shape().ToString());
  const int64_t numel = out.numel();
  if (numel == 0) return;
  const StridedIndexer<1> in_layout = IndexerOf<1>({&in});
  const PhiloxKey key = PhiloxKeyFromSeed(seed);
  const uint32_t threshold = KeepThreshold(prob);
  DispatchDType<kFloatingDTypes>(out.dtype(), "cuda dropout", [&]<class T>() {
    using C = Compute<T>;
    const C kept = static_cast<C>(ToCompute(Convert<T>(1 / (1 - prob))));
    const LaunchGrid grid = BlocksGrid(numel, 4);
    DropoutApply<T>
        <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(
            out.data_as<T>(), in_layout, in.data_as<const T>(), key, offset,
            threshold, kept);
    KINDLING_CUDA_CHECK_LAUNCH("DropoutApply");
  });
}

}  // namespace kindling::cuda
